"""scheduling.k8s.io/v1 PriorityClasses: built-ins, the reserved prefix, the user cap, immutability,
and kubectl against them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from simapi import Api
from tests.support.simproc import SimProcess

PCS = "/apis/scheduling.k8s.io/v1/priorityclasses"


def _pc(name: str, value: Any, **extra: Any) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
            "value": value, **extra}


async def test_builtin_classes_are_served(api: Api) -> None:
    """system-node-critical and system-cluster-critical exist with kube-apiserver's values."""
    listed = await api.ok("GET", PCS)
    values = {item["metadata"]["name"]: item["value"] for item in listed["items"]}
    assert values == {"system-node-critical": 2000001000, "system-cluster-critical": 2000000000}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        pytest.param(_pc("system-mine", 5), "metadata.name", id="reserved-prefix"),
        pytest.param(_pc("huge", 1_000_000_001), "value", id="above-user-cap"),
        pytest.param(_pc("nameless-value", "high"), "value", id="value-not-int"),
        pytest.param(_pc("bad-policy", 5, preemptionPolicy="Sometimes"), "preemptionPolicy", id="policy"),
    ],
)
async def test_invalid_classes_are_refused(api: Api, body: dict[str, Any], field: str) -> None:
    """422 with the offending field, as kube-apiserver's ValidatePriorityClass."""
    status, out = await api.call("POST", PCS, body)
    assert status == 422, out
    assert field in {c["field"] for c in out["details"]["causes"]}


async def test_value_is_immutable_and_builtins_cannot_be_deleted(api: Api) -> None:
    """An update of value is 422; deleting a system class is 403; a user class can be deleted."""
    created = await api.ok("POST", PCS, _pc("agents", 1000))
    status, _ = await api.call("PUT", f"{PCS}/agents", {**created, "value": 2000})
    assert status == 422
    status, out = await api.call("DELETE", f"{PCS}/system-node-critical")
    assert status == 403 and "system priority class" in out["message"]
    await api.ok("DELETE", f"{PCS}/agents")


@pytest.fixture
async def sim() -> AsyncIterator[SimProcess]:
    """A simulator process for kubectl."""
    async with SimProcess(nodes=1) as cluster:
        yield cluster


async def test_kubectl_gets_and_applies_priority_classes(sim: SimProcess) -> None:
    """kubectl get pc lists the built-ins; plain kubectl apply (strict validation) creates one."""
    listed = (await sim.kubectl("get", "priorityclasses")).stdout
    assert "system-node-critical" in listed and "2000001000" in listed
    manifest = "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: cni\nvalue: 900000\n"
    applied = await sim.kubectl("apply", "-f", "-", input=manifest.encode())
    assert "priorityclass.scheduling.k8s.io/cni created" in applied.stdout
