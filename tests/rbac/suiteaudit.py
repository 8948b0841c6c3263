"""The suite-wide least-privilege check, run once when the whole pytest session ends.

Every integration test appends the controller's requests to one audit file (see
``tests/integration/requestaudit.py``). Under pytest-xdist those tests run in several worker
processes, so no single test sees them all; the check therefore runs in the controlling
process after every worker has finished, and fails the session if the controller used a
permission the manifests do not grant.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from tests.rbac.grants import compare, granted, implied_by_admission, render_rbac
from tests.support.requestaudit import AUDIT_FILE_ENV, load_audit_file

__all__ = ["missing_grants", "prepare_audit_file"]

APPS, CRD = "apps", "dsctl.io"


def prepare_audit_file() -> tuple[Path, bool]:
    """Point ``DSCTL_REQUEST_AUDIT`` at a fresh file (inherited by xdist workers) unless set.

    Returns the path and whether it was created here (and so should be removed at the end).
    """
    existing = os.environ.get(AUDIT_FILE_ENV)
    if existing:
        return Path(existing), False
    handle, name = tempfile.mkstemp(prefix="dsctl-request-audit-", suffix=".jsonl")
    os.close(handle)
    os.environ[AUDIT_FILE_ENV] = name
    return Path(name), True


def missing_grants(path: Path) -> tuple[int, str]:
    """(permissions seen, a report of those not granted in either mode; empty when all are)."""
    if not path.exists() or not path.stat().st_size:
        return 0, ""
    audit = load_audit_file(path)
    with tempfile.TemporaryDirectory() as base, tempfile.TemporaryDirectory() as apps:
        objects = [render_rbac(Path(base)), render_rbac(Path(apps), components=["apps-v1-mode"])]
    grants = set().union(*(granted([o.cluster_role, o.lease_role]) for o in objects))
    used = audit.permissions()
    implied = implied_by_admission(used, daemonset_group=APPS) | implied_by_admission(used, daemonset_group=CRD)
    report = compare(grants, used | implied)
    if not report.missing:
        return len(used), ""
    sources = {str(p): audit.first_seen.get(p, "admission") for p in report.missing}
    return len(used), f"{report.describe()}\nfirst used by: {sources}"
