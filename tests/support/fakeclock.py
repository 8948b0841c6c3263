"""A monotonic clock for unit tests whose ``sleep`` returns at once, moving the clock instead."""

from __future__ import annotations


class SleepClock:
    """Call it for the time; ``await sleep(s)`` records ``s`` in ``slept`` and adds it to ``now``."""

    def __init__(self, start: float = 0.0) -> None:
        self.now = start
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds
