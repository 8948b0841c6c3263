"""An asyncio event loop whose clock jumps instead of waiting: virtual time for unit tests.

When no callback is ready, the loop's selector would block until the next timer; here it moves
the loop's clock forward to that timer instead. ``asyncio.sleep``, ``asyncio.timeout`` and
``call_later`` all run on ``loop.time()``, so code under test keeps its real timing rules while
a 60 s wait costs nothing. Only for code without real I/O (fakes at the client boundary).
"""

from __future__ import annotations

import asyncio
import selectors
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

__all__ = ["VirtualTimeLoop", "run_virtual"]

T = TypeVar("T")


class _JumpingSelector(selectors.DefaultSelector):
    """Never blocks: a wait for ``timeout`` seconds becomes a jump of the loop's clock."""

    def __init__(self, loop: VirtualTimeLoop) -> None:
        super().__init__()
        self._loop = loop

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        ready = super().select(0)
        if ready or timeout is None or timeout <= 0:
            if not ready and timeout is None:
                raise RuntimeError("virtual time: every task waits and no timer is set (deadlock)")
            return ready
        self._loop.now += timeout
        return ready


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    """A selector loop on a virtual clock starting at 1000.0 s."""

    def __init__(self) -> None:
        self.now = 1000.0
        super().__init__(selector=_JumpingSelector(self))

    def time(self) -> float:
        return self.now


def run_virtual(main: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run ``main()`` to completion on a fresh virtual-time loop."""
    with asyncio.Runner(loop_factory=VirtualTimeLoop) as runner:
        return runner.run(main())
