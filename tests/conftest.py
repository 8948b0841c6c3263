"""Session-wide hooks: the least-privilege audit of everything the integration suite did, and
the rule that no async test leaves a task running behind it."""

from __future__ import annotations

import asyncio
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest
from pytest_asyncio import is_async_test

from tests.rbac.suiteaudit import missing_grants, prepare_audit_file
from tests.support.leaks import pending_tasks, settle
from tests.support.profiles import register_profiles

register_profiles()


def pytest_configure(config: pytest.Config) -> None:
    """In the controlling process, name the shared audit file before any worker starts."""
    if not hasattr(config, "workerinput"):
        config.stash[_AUDIT] = prepare_audit_file()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """After all workers finished: fail the session if the controller used an ungranted permission."""
    prepared = session.config.stash.get(_AUDIT, None)
    if prepared is None or hasattr(session.config, "workerinput"):
        return
    path, ours = prepared
    seen, problem = missing_grants(path)
    if ours:
        path.unlink(missing_ok=True)
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if problem:
        if reporter is not None:
            reporter.write_line(f"least-privilege audit FAILED over {seen} permissions used:\n{problem}", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    elif seen and reporter is not None:
        reporter.write_line(f"least-privilege audit: all {seen} permissions the controller used are granted")


_AUDIT = pytest.StashKey[tuple[Path, bool]]()
CALL_FAILED = pytest.StashKey[bool]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]
                              ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Mark an item whose test body failed, so fixtures can keep evidence in their teardown."""
    report: pytest.TestReport = yield
    if report.when == "call":
        item.stash[CALL_FAILED] = report.failed
    return report


@pytest.fixture(autouse=True)
def _no_leaked_tasks(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fail an async test that leaves a task pending on its event loop.

    Requesting the loop's runner from here puts this teardown after every async fixture of the
    test has finished (pytest-asyncio ties their teardown to the runner's) and before the
    runner closes the loop, which would cancel a leaked task silently. Whatever is still
    pending then was started by the test or a fixture and has no owner left to stop it.
    """
    if not is_async_test(request.node):
        yield
        return
    marker = request.node.get_closest_marker("asyncio")
    scope = (marker.kwargs.get("loop_scope") if marker is not None else None) or "function"
    runner: asyncio.Runner = request.getfixturevalue(f"_{scope}_scoped_runner")
    # A module- or session-scoped loop outlives the test, and so do the tasks of its
    # fixtures: there only the tasks the test itself started are its to stop.
    before = set() if scope == "function" else asyncio.all_tasks(runner.get_loop())
    yield
    if runner.get_loop().is_closed():
        return
    leaked = [task for task in runner.run(settle()) if task not in before]
    if leaked:
        runner.run(_cancel(leaked))
        pytest.fail(f"{len(leaked)} asyncio task(s) leaked past the test's teardown: "
                    + "; ".join(pending_tasks(leaked)), pytrace=False)


async def _cancel(tasks: list[asyncio.Task[object]]) -> None:
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)

