"""Refused writes speak, end to end with the real kubectl (issue 14, reproductions 1 and 2).

1. CRD mode, a template label value the API server refuses on ControllerRevisions: the revision
   create gets 422, and the DaemonSet shows a ``FailedCreateRevision`` Warning event and a
   ``ReplicaFailure`` condition in ``kubectl describe`` and ``kubectl get -o yaml``; fixing the
   label clears the condition and the pods run.
2. An orphan ControllerRevision numbered int64's maximum is not adopted: a Warning event says
   why, the next rollout is numbered 2, and ``kubectl rollout history`` keeps working.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from dsctl.kube.client import KubeClient
from dsctl.kube.resources import CONTROLLER_REVISIONS, DAEMONSETS, EVENTS, crd_daemonsets
from tests.support.builders import daemonset, rolling
from tests.support.clusterview import daemon_pods
from tests.support.controllerproc import ControllerProcess
from tests.support.crdfiles import write_crd_without_rules
from tests.support.poll import eventually
from tests.support.simproc import SimProcess

CUSTOM = crd_daemonsets()
MAX_REVISION = 2**63 - 1  # int64, as the API stores `revision`
BAD_VALUE = "ünï-cødé"

pytestmark = pytest.mark.parametrize("sim", [{"nodes": 2}], indirect=True)


async def _served(sim: SimProcess) -> bool:
    return (await sim.kubectl("get", "daemonsets.dsctl.io", "-A", check=False)).returncode == 0


async def _warnings(kube: KubeClient, name: str, reason: str) -> list[dict[str, Any]]:
    items = (await kube.list(EVENTS, namespace="default"))["items"]
    return [e for e in items if e.get("reason") == reason and e["involvedObject"].get("name") == name
            and e.get("type") == "Warning"]


def _condition(ds: dict[str, Any], cond_type: str) -> dict[str, Any] | None:
    for condition in (ds.get("status") or {}).get("conditions") or []:
        if condition.get("type") == cond_type:
            return dict(condition)
    return None


@pytest.mark.parametrize("bad_value", [
    pytest.param(BAD_VALUE, id="non-ascii"),
    pytest.param("x" * 64, id="64-characters"),
])
async def test_refused_revision_create_shows_event_and_condition(sim: SimProcess, kube: KubeClient,
                                                                 bad_value: str, tmp_path: Path) -> None:
    """CRD mode: a 422 on the revision create gives a Warning event and ReplicaFailure in kubectl; a fix clears it.

    The CRD is installed without its CEL rules, as on a cluster with an older install: today's
    CRD refuses such a label value at the API, and this test is about the controller's side.
    """
    await sim.kubectl("apply", "-f", str(write_crd_without_rules(tmp_path)))
    await eventually(lambda: _served(sim), message="CRD served")
    ds = daemonset("agent", api_version="dsctl.io/v1", strategy=rolling(max_unavailable="100%"))
    ds["spec"]["template"]["metadata"]["labels"]["note"] = bad_value
    async with ControllerProcess(sim.kubeconfig, args=["--resource", "dsctl.io/v1"]) as ctl:
        await sim.kubectl("apply", "-f", "-", input=yaml.safe_dump(ds, allow_unicode=True).encode())

        async def failing() -> dict[str, Any] | None:
            live = await kube.get(CUSTOM, "agent", namespace="default")
            condition = _condition(live, "ReplicaFailure")
            events = await _warnings(kube, "agent", "FailedCreateRevision")
            return condition if condition and events else None

        condition = await eventually(failing, timeout=30, message="ReplicaFailure condition and Warning event")
        assert condition["status"] == "True" and condition["reason"] == "FailedCreateRevision"
        assert "metadata.labels" in condition["message"] and bad_value in condition["message"]

        described = (await sim.kubectl("describe", "dds", "agent")).stdout
        assert "ReplicaFailure" in described and "FailedCreateRevision" in described, described
        assert "Warning" in described and "metadata.labels" in described, described
        as_yaml = yaml.safe_load((await sim.kubectl("get", "dds", "agent", "-o", "yaml")).stdout)
        assert _condition(as_yaml, "ReplicaFailure") == condition

        _, metrics = await ctl.get("/metrics")
        assert ('dsctl_sync_write_errors_total{reason="Invalid",resource="controllerrevisions",verb="create"}'
                in metrics), metrics
        assert any(e.get("event") == "write_failed" and e.get("level") == "warning" for e in ctl.logs)
        # The process collectors every Go controller has (issue 14, item 6).
        for family in ("process_resident_memory_bytes", "process_open_fds", "process_start_time_seconds",
                       "python_gc_objects_collected_total"):
            assert f"\n{family}" in metrics, family

        # The user fixes the label: the revision is created, pods run, and the condition goes.
        await sim.kubectl("patch", "dds", "agent", "--type", "json", "-p",
                          '[{"op":"replace","path":"/spec/template/metadata/labels/note","value":"fixed"}]')

        async def recovered() -> bool:
            live = await kube.get(CUSTOM, "agent", namespace="default")
            pods = await daemon_pods(kube, "agent")
            return _condition(live, "ReplicaFailure") is None and len(pods) == 2

        await eventually(recovered, timeout=30, message="condition cleared and 2 pods")
        assert not ctl.errors(), ctl.errors()[:5]


async def test_orphan_revision_at_int64_max_is_not_adopted(sim: SimProcess, kube: KubeClient,
                                                           controller: ControllerProcess) -> None:
    """An orphan revision numbered 2^63-1 gets a Warning and stays an orphan; rollout history keeps working."""
    await kube.create(DAEMONSETS, daemonset("agent", strategy=rolling(max_unavailable="100%")), namespace="default")

    async def first_revision() -> list[dict[str, Any]] | None:
        items = (await kube.list(CONTROLLER_REVISIONS, namespace="default", label_selector="app=agent"))["items"]
        return items or None

    [first] = await eventually(first_revision, message="revision 1")
    orphan = {
        "apiVersion": "apps/v1", "kind": "ControllerRevision",
        "metadata": {"name": "agent-orphan", "namespace": "default", "labels": {"app": "agent"}},
        "data": {"spec": {"template": {"$patch": "replace", "metadata": {"labels": {"app": "agent"}},
                                       "spec": {"containers": [{"name": "agent", "image": "other:0"}]}}}},
        "revision": MAX_REVISION,
    }
    await sim.kubectl("apply", "-f", "-", input=yaml.safe_dump(orphan).encode())
    await sim.kubectl("set", "image", "ds/agent", "agent=registry.example/agent:2.0")

    async def rolled() -> list[int] | None:
        items = (await kube.list(CONTROLLER_REVISIONS, namespace="default", label_selector="app=agent"))["items"]
        owned = sorted(int(r["revision"]) for r in items if r["metadata"].get("ownerReferences"))
        return owned if owned == [1, 2] else None

    await eventually(rolled, timeout=30, message="revisions 1 and 2 owned")
    warnings = await eventually(lambda: _warnings(kube, "agent", "RevisionOutOfRange"), message="Warning event")
    assert "agent-orphan" in warnings[0]["message"] and str(MAX_REVISION) in warnings[0]["message"]
    live_orphan = await kube.get(CONTROLLER_REVISIONS, "agent-orphan", namespace="default")
    assert not live_orphan["metadata"].get("ownerReferences")
    assert live_orphan["revision"] == MAX_REVISION

    history = (await sim.kubectl("rollout", "history", "ds/agent")).stdout
    numbers = [line.split()[0] for line in history.splitlines()[2:] if line.strip()]
    assert numbers == ["1", "2"], history
    assert first["metadata"]["name"] != "agent-orphan"


async def test_refused_pod_creates_set_and_clear_replica_failure(sim: SimProcess, kube: KubeClient,
                                                                 controller: ControllerProcess) -> None:
    """Pod creates refused with 403: FailedCreate events and ReplicaFailure/FailedCreate; once allowed, it clears."""
    await sim.set_faults(errors=[{"verb": "create", "resource": "pods", "code": 403, "rate": 1}])
    await kube.create(DAEMONSETS, daemonset("agent"), namespace="default")

    async def failing() -> dict[str, Any] | None:
        condition = _condition(await kube.get(DAEMONSETS, "agent", namespace="default"), "ReplicaFailure")
        return condition if condition and await _warnings(kube, "agent", "FailedCreate") else None

    condition = await eventually(failing, timeout=30, message="ReplicaFailure/FailedCreate")
    assert condition["reason"] == "FailedCreate" and "Forbidden" in condition["message"]
    as_yaml = yaml.safe_load((await sim.kubectl("get", "ds", "agent", "-o", "yaml")).stdout)
    assert _condition(as_yaml, "ReplicaFailure") == condition

    await sim.set_faults()

    async def recovered() -> bool:
        live = await kube.get(DAEMONSETS, "agent", namespace="default")
        return _condition(live, "ReplicaFailure") is None and len(await daemon_pods(kube, "agent")) == 2

    await eventually(recovered, timeout=60, message="pods created and the condition cleared")


async def test_owned_revision_at_int64_max_blocks_the_rollout_with_a_condition(
        sim: SimProcess, kube: KubeClient, controller: ControllerProcess) -> None:
    """An owned old revision renumbered to 2^63-1 by hand: the next template gets no out-of-range number, but an event
    and ReplicaFailure/RevisionOutOfRange; deleting that revision lets the rollout go on."""
    await kube.create(DAEMONSETS, daemonset("agent", strategy=rolling(max_unavailable="100%")), namespace="default")

    async def revisions() -> list[dict[str, Any]] | None:
        items = (await kube.list(CONTROLLER_REVISIONS, namespace="default", label_selector="app=agent"))["items"]
        return items or None

    [first] = await eventually(revisions, message="revision 1")
    name = first["metadata"]["name"]
    await sim.kubectl("set", "image", "ds/agent", "agent=registry.example/agent:2.0")
    await eventually(lambda: _numbers(kube, [1, 2]), message="revisions 1 and 2")
    await sim.kubectl("patch", "controllerrevision", name, "--type", "merge", "-p", f'{{"revision": {MAX_REVISION}}}')
    await sim.kubectl("set", "image", "ds/agent", "agent=registry.example/agent:3.0")

    async def blocked() -> dict[str, Any] | None:
        condition = _condition(await kube.get(DAEMONSETS, "agent", namespace="default"), "ReplicaFailure")
        return condition if condition and await _warnings(kube, "agent", "RevisionOutOfRange") else None

    condition = await eventually(blocked, timeout=30, message="RevisionOutOfRange condition")
    assert condition["reason"] == "RevisionOutOfRange" and name in condition["message"]
    items = (await kube.list(CONTROLLER_REVISIONS, namespace="default", label_selector="app=agent"))["items"]
    assert max(int(r["revision"]) for r in items) == MAX_REVISION

    await sim.kubectl("delete", "controllerrevision", name)

    async def rolled() -> bool:
        live = await kube.get(DAEMONSETS, "agent", namespace="default")
        return _condition(live, "ReplicaFailure") is None and await _numbers(kube, [2, 3])

    await eventually(rolled, timeout=30, message="revision 3 and the condition cleared")


async def _numbers(kube: KubeClient, expected: list[int]) -> bool:
    items = (await kube.list(CONTROLLER_REVISIONS, namespace="default", label_selector="app=agent"))["items"]
    return sorted(int(r["revision"]) for r in items) == expected
