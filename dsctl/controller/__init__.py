"""The imperative side of the DaemonSet controller: wiring, execution, workers.

``dsctl.daemonset`` decides; this package acts. It connects informers to the work queue
(``handlers``), runs ``sync(key)`` in a fixed order (``sync``), turns plans into API calls with
expectations and slow start (``executor``), records Events (``recorder``), and runs the worker
pool that maps every sync outcome to a queue action and a metric (``workers``).

It also owns the runtime state that the executor's writes change and the handlers observe:
``expectations`` (creates and deletes not yet seen in the cache), ``inplacewait`` (in-place
patches not yet seen) and ``backoff`` (per-node failed-pod backoff, read by the planners
through ``dsctl.daemonset.backoffview.BackoffView``).
"""
