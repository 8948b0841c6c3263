"""The one harness every benchmark shares; import what you need from its modules.

- ``cluster``: start the simulator and the controller (the test suite's process harness) and
  the DaemonSet every benchmark deploys;
- ``procs``: CPU seconds and RSS of a process, sampled over time;
- ``podwatch``: a pod watch stamping when each pod was seen, bound and Ready (in or out of
  process);
- ``rawclient``: the fastest create client, the baseline every rate is compared with;
- ``metrics``: the controller's Prometheus text and the simulator's request log;
- ``profiling``: py-spy and cProfile windows, summarized;
- ``machine``: how steady the host is (and a noisy neighbour on purpose);
- ``stats``: the few statistics the current figures use;
- ``bounds``: the lower bound of a rolling update;
- ``children``: cases run in fresh child interpreters, and the informer fixture server;
- ``results``: the result file, the environment recorded beside it, progress logging.

Nothing is imported here: a child that measures another tree's ``dsctl`` must be able to load
``children`` before anything has imported this tree's. Nothing in the harness asserts a
timing: benchmarks report figures and ratios measured in one run.
"""
