"""The simulated Kubernetes cluster: an in-memory kube-apiserver plus control-plane loops.

State (no I/O, synchronous, one instance per cluster):

- ``storage`` (``Storage``) on top of ``reads``, ``table``, ``changes``, ``deletion``,
  ``strategy``, ``owners``, ``intern``, ``watch``; ``registry`` lists the served types and
  ``errors`` the ``Status`` errors everything raises.

HTTP (aiohttp, one ``ApiState`` per server):

- ``server`` routes and wraps every request; ``routing`` resolves resource URLs;
  ``handlers`` implements the verbs, ``listing`` pagination, ``watchstream`` watches,
  ``discovery_routes`` discovery/OpenAPI, ``admin`` the ``/sim/`` API, ``faults`` fault
  injection, ``requestlog`` the request log, ``metrics`` ``/metrics``, ``protobuf`` the few
  protobuf bodies kubectl sends, ``semantics`` the doorway to ``patch``, ``validation``
  and ``discovery`` (API semantics as pure functions).

Running it:

- ``cluster`` (``SimCluster``) assembles storage, nodes (``nodes``), CRD serving
  (``crds``), the control plane (``controllers``) and the server; ``cli`` is
  ``dsctl sim serve`` (also ``python -m dsctl_sim serve``); ``kubeconfig`` writes the
  kubeconfig.

Nothing here imports the controller side of dsctl; both build only on ``dsctl_api``.
"""
