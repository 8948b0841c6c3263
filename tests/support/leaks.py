"""Finding the asyncio tasks a test left behind (see the ``_no_leaked_tasks`` fixture)."""

from __future__ import annotations

import asyncio

__all__ = ["pending_tasks", "settle"]

SETTLE_ROUNDS = 5
"""Loop iterations given to tasks that were cancelled (or finished) but not yet collected."""


def _leaked(current: asyncio.Task[object] | None) -> list[asyncio.Task[object]]:
    # No exemptions: every task the suite starts, its fixtures' and the libraries' included, has
    # had an owner that stops it so far. A library task that must outlive a test would be
    # exempted here, by its exact name, with the reason.
    return [t for t in asyncio.all_tasks() if t is not current and not t.done()]


async def settle() -> list[asyncio.Task[object]]:
    """The tasks still pending after a few loop iterations, other than the caller's.

    A task cancelled during teardown without being awaited finishes on the next iteration;
    only a task that keeps running after that has nobody left to stop it.
    """
    current = asyncio.current_task()
    for _ in range(SETTLE_ROUNDS):
        if not _leaked(current):
            return []
        await asyncio.sleep(0)
    return _leaked(current)


def pending_tasks(tasks: list[asyncio.Task[object]]) -> list[str]:
    """One line per task: its name and the coroutine it is running, for the failure message."""
    lines = []
    for task in tasks:
        coro = task.get_coro()
        where = getattr(coro, "__qualname__", None) or repr(coro)
        lines.append(f"{task.get_name()} ({where})")
    return sorted(lines)
