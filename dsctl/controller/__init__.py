"""The imperative side of the DaemonSet controller: wiring, execution, workers.

``dsctl.daemonset`` decides; this package acts. It connects informers to the work queue
(``handlers``), runs ``sync(key)`` in a fixed order (``sync``), turns plans into API calls with
expectations and slow start (``executor``), records Events (``recorder``), and runs the worker
pool that maps every sync outcome to a queue action and a metric (``workers``).
"""
