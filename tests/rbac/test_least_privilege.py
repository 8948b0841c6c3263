"""Least privilege: the manifests grant exactly what the controller uses, no more and no less.

The scenario (``scenario.py``) runs once per module; its request log, filtered by the
controller's User-Agent, gives the permissions used in apps/v1 mode and in CRD mode. Each mode
is checked against the RBAC it is installed with (the base, or the ``apps-v1-mode``
component), and the union of both against the grants with the DaemonSet group abstracted.
What the whole integration suite used is checked once at session end (``suiteaudit.py``).
"""

from __future__ import annotations

import asyncio

import pytest

from tests.rbac.grants import (
    RbacObjects,
    compare,
    granted,
    implied_by_admission,
    normalize_daemonset_group,
    render_rbac,
)
from tests.rbac.scenario import ScenarioUsage, run_scenario
from tests.support.requestaudit import Permission

APPS, CRD = "apps", "dsctl.io"


@pytest.fixture(scope="module")
def usage() -> ScenarioUsage:
    """The permissions the scenario used (run once; it takes a while)."""
    return asyncio.run(run_scenario())


@pytest.fixture(scope="module")
def rbac(tmp_path_factory: pytest.TempPathFactory) -> dict[str, RbacObjects]:
    """The RBAC each mode installs: the base (CRD mode) and the apps-v1-mode component."""
    return {
        CRD: render_rbac(tmp_path_factory.mktemp("rbac-base")),
        APPS: render_rbac(tmp_path_factory.mktemp("rbac-apps"), components=["apps-v1-mode"]),
    }


def _grants(objects: RbacObjects) -> set[Permission]:
    return granted([objects.cluster_role, objects.lease_role])


def _needed(used: frozenset[Permission], *, group: str) -> set[Permission]:
    return set(used) | implied_by_admission(used, daemonset_group=group)


@pytest.mark.parametrize("mode", [pytest.param(APPS, id="apps-v1"), pytest.param(CRD, id="crd")])
def test_every_used_permission_is_granted(usage: ScenarioUsage, rbac: dict[str, RbacObjects], mode: str) -> None:
    """Nothing the controller does in either mode would be forbidden by the RBAC installed for that mode."""
    used = usage.apps if mode == APPS else usage.crd
    other = CRD if mode == APPS else APPS
    assert not any(p.group == other and p.resource.startswith("daemonsets") for p in used), (
        f"{mode} mode touched the other mode's DaemonSets: {sorted(map(str, used))}")
    report = compare(_grants(rbac[mode]), _needed(used, group=mode))
    assert not report.missing, report.describe()


def test_the_apps_component_only_moves_the_daemonset_group(rbac: dict[str, RbacObjects]) -> None:
    """apps-v1-mode grants the same as the base, with the DaemonSet kind's group changed and nothing else."""
    base = normalize_daemonset_group(_grants(rbac[CRD]), daemonset_group=CRD)
    apps = normalize_daemonset_group(_grants(rbac[APPS]), daemonset_group=APPS)
    assert base == apps


def test_every_granted_permission_is_used(usage: ScenarioUsage, rbac: dict[str, RbacObjects]) -> None:
    """Every grant (ClusterRole and leader-election Role) is needed by something the controller did."""
    needed = (normalize_daemonset_group(_needed(usage.apps, group=APPS), daemonset_group=APPS)
              | normalize_daemonset_group(_needed(usage.crd, group=CRD), daemonset_group=CRD))
    grants = normalize_daemonset_group(_grants(rbac[CRD]), daemonset_group=CRD)
    report = compare(grants, needed)
    assert not report.unused and not report.missing, report.describe()
