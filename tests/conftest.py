"""Session-wide hooks: the least-privilege audit of everything the integration suite did."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.rbac.suiteaudit import missing_grants, prepare_audit_file


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
