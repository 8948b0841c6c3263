"""Run a module under cProfile, profiling only between two signals.

``python benchmarks/harness/cprofiled.py OUT -m MODULE [ARGS...]`` runs ``MODULE`` as ``__main__``
(as ``python -m MODULE ARGS...`` would). ``SIGUSR1`` starts the profiler, ``SIGUSR2`` stops it
and writes the stats (``pstats`` format) to ``OUT``. The benchmark sends both around the
window it measures, so start-up and the initial lists stay out of the profile.

The profiler hooks only the main thread: the controller's event loop and everything it
runs. Executor threads (DNS, credential plugins) are not seen, which is fine for the request
path. The clock is ``time.process_time``, so time the loop spends idle in ``epoll_wait`` is
not counted as cost.
"""

from __future__ import annotations

import cProfile
import os
import runpy
import signal
import sys
import time
from types import FrameType


def main() -> None:
    if len(sys.argv) < 4 or sys.argv[2] != "-m":
        raise SystemExit(f"usage: {sys.argv[0]} OUT -m MODULE [ARGS...]")
    out, module, rest = sys.argv[1], sys.argv[3], sys.argv[4:]
    profiler = cProfile.Profile(time.process_time)

    def start(signum: int, frame: FrameType | None) -> None:
        profiler.enable()

    def stop(signum: int, frame: FrameType | None) -> None:
        profiler.disable()
        profiler.dump_stats(out)

    signal.signal(signal.SIGUSR1, start)
    signal.signal(signal.SIGUSR2, stop)
    sys.argv = [module, *rest]
    sys.path[0] = os.getcwd()  # as ``python -m`` would have it
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
