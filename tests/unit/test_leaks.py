"""The leaked-task finder behind the suite's ``_no_leaked_tasks`` guard."""

from __future__ import annotations

import asyncio

from tests.support.leaks import pending_tasks, settle


async def test_a_running_task_is_reported_by_name_and_coroutine() -> None:
    """A task nobody stopped is found, and named with what it runs."""
    task = asyncio.create_task(asyncio.sleep(60), name="orphan")
    try:
        leaked = await settle()
        assert leaked == [task]
        assert pending_tasks(leaked) == ["orphan (sleep)"]
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_cancelled_or_finishing_tasks_are_given_time_to_end() -> None:
    """A task cancelled without being awaited, or about to finish, is not a leak."""
    cancelled = asyncio.create_task(asyncio.sleep(60), name="cancelled")
    finishing = asyncio.create_task(asyncio.sleep(0), name="finishing")
    await asyncio.sleep(0)
    cancelled.cancel()
    assert await settle() == []
    assert cancelled.cancelled() and finishing.done()


async def test_the_caller_is_never_its_own_leak() -> None:
    """settle runs inside a task of its own loop; that task is not reported."""
    assert await settle() == []
