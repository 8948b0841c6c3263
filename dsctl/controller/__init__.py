"""The imperative side of the DaemonSet controller: wiring, execution, workers.

``dsctl.daemonset`` decides; this package acts. ``controller`` wires the caches
(``cacheview``) to the handlers (``handlers``: map events to keys, note what they observe), the
work queue and the worker pool (``workers``: every outcome to one queue action and metric).
``syncer`` runs ``sync(key)``: one snapshot, one pure plan, and ``executor`` carries it out in
one order, through ``podwrites`` (pods), ``statuswriter`` (status) and ``writes`` (what a
failed write signals), with Events from ``recorder``.

Every piece of runtime state kept per DaemonSet between syncs has one owner,
``state.RuntimeState``, and one cleanup path, ``RuntimeState.forget``: ``expectations`` (writes
not yet seen in the cache), ``backoffstate`` (failed-pod backoff, read by the planners through
``dsctl.daemonset.backoffview.BackoffView``), ``planmemory`` (incremental planning), ``joinorder``
(node-join priority), the status stage's memory, write failures and the per-DaemonSet gauges.
"""
