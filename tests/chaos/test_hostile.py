"""Hostile DaemonSets end to end, in CRD mode, where the API's looser schema lets them in.

The CRD installed is the one from before it carried ``x-kubernetes-validations`` (an older
install, or a cluster too old for CEL rules): today's CRD refuses the selector and container
cases at the API (``tests/manifests/test_crd_validation_on_sim.py``), and the controller must
still hold its ground where it does not.

One simulated cluster and one controller (``--resource dsctl.io/v1``) serve the whole module.
The hostile objects go in first, then a healthy DaemonSet beside them. Each hostile object must
get a Warning ``InvalidSpec`` event and an ``Invalid`` status condition naming the field, and no
pod; the healthy one must converge and roll out a new template as if nothing else were there;
two oversized but valid objects (3 MB, and 5 MB: one watch event larger than
kubernetes_asyncio's 4 MB line limit) must be reconciled like any other; and the process must
stay up without logging an error.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
import pytest_asyncio

from dsctl.kube.client import KubeClient
from dsctl.kube.errors import ApiError
from dsctl.kube.resources import EVENTS, crd_daemonsets
from tests.chaos.recount import settle_problems
from tests.support.builders import daemonset
from tests.support.controllerproc import ControllerProcess
from tests.support.crdfiles import write_crd_without_rules
from tests.support.poll import eventually
from tests.support.simproc import SimProcess

pytestmark = pytest.mark.asyncio(loop_scope="module")

RESOURCE = crd_daemonsets()
NODES = 3
MIB = 1024 * 1024


def _crd_ds(name: str, **options: Any) -> dict[str, Any]:
    return daemonset(name, api_version="dsctl.io/v1", **options)


def _rolling(max_unavailable: str) -> dict[str, Any]:
    return {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": max_unavailable}}


def _selector_mismatch() -> dict[str, Any]:
    body = _crd_ds("no-match")
    body["spec"]["selector"] = {"matchLabels": {"app": "someone-else"}}
    return body


def _no_containers() -> dict[str, Any]:
    body = _crd_ds("no-containers")
    body["spec"]["template"]["spec"]["containers"] = []
    return body


def _payload(name: str, size: int) -> dict[str, Any]:
    body = _crd_ds(name)
    body["spec"]["template"]["spec"]["containers"][0]["env"] = [{"name": "PAYLOAD", "value": "x" * size}]
    return body


HOSTILE = [
    pytest.param(_crd_ds("mu-150", strategy=_rolling("150%")), "spec.updateStrategy.rollingUpdate.maxUnavailable",
                 id="max-unavailable-150-percent"),
    pytest.param(_crd_ds("mu-abc", strategy=_rolling("abc")), "spec.updateStrategy.rollingUpdate.maxUnavailable",
                 id="max-unavailable-abc"),
    pytest.param(_selector_mismatch(), "spec.selector", id="selector-matches-no-template-label"),
    pytest.param(_no_containers(), "spec.template.spec.containers", id="empty-container-list"),
    pytest.param(_crd_ds("tolerations", tolerations=[
        {"key": f"example.com/t{i}", "operator": "Exists", "effect": "NoSchedule"} for i in range(10_001)]),
        "spec.template.spec.tolerations", id="huge-toleration-list"),
]
BIG_SIZES = {"big-3mb": 3 * MIB, "big-5mb": 5 * MIB}
BIG = [pytest.param("big-3mb", id="3MB-object"), pytest.param("big-5mb", id="5MB-watch-event-over-4MB-line-limit")]


@dataclass
class CrdCluster:
    """The module's simulator, client and controller."""

    sim: SimProcess
    client: KubeClient
    controller: ControllerProcess


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def crd(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[CrdCluster]:
    """Sim with the CRD, hostile and big DaemonSets created before the controller starts, then a healthy one."""
    loose = write_crd_without_rules(tmp_path_factory.mktemp("crd"))
    async with SimProcess(nodes=NODES, args=["--pod-startup-seconds", "0.1"]) as sim:
        await sim.kubectl("apply", "-f", str(loose))
        client = await KubeClient.from_config(kubeconfig=sim.kubeconfig, qps=500, burst=1000)
        try:
            await eventually(lambda: _served(client), timeout=20, message="CRD served")
            for case in HOSTILE:
                body = case.values[0]
                assert isinstance(body, dict)
                await client.create(RESOURCE, body, namespace="default")
            for name, size in BIG_SIZES.items():
                await client.create(RESOURCE, _payload(name, size), namespace="default")
            async with ControllerProcess(sim.kubeconfig, args=["--resource", "dsctl.io/v1"]) as controller:
                await client.create(RESOURCE, _crd_ds("healthy"), namespace="default")
                yield CrdCluster(sim, client, controller)
        finally:
            await client.close()


async def _served(client: KubeClient) -> bool:
    try:
        await client.list(RESOURCE, namespace="default")
    except ApiError:
        return False
    return True


async def _refused(client: KubeClient, name: str, field: str) -> str:
    """Empty when ``name`` has the event and the condition naming ``field``; else what is missing."""
    events = (await client.list(EVENTS, namespace="default"))["items"]
    named = [e for e in events if (e.get("involvedObject") or {}).get("name") == name
             and e.get("type") == "Warning" and e.get("reason") == "InvalidSpec" and field in str(e.get("message"))]
    ds = await client.get(RESOURCE, name, namespace="default")
    conditions = [c for c in (ds.get("status") or {}).get("conditions") or []
                  if c.get("type") == "Invalid" and c.get("status") == "True" and field in str(c.get("message"))]
    missing = ([] if named else ["InvalidSpec event"]) + ([] if conditions else ["Invalid condition"])
    return ", ".join(missing)


@pytest.mark.parametrize(("body", "field"), HOSTILE)
async def test_hostile_spec_gets_a_warning_and_a_condition_naming_the_field(
    crd: CrdCluster, body: dict[str, Any], field: str
) -> None:
    """A DaemonSet the controller cannot act on gets an InvalidSpec event and an Invalid condition, and no pod."""
    name = body["metadata"]["name"]

    async def refused() -> bool:
        return not await _refused(crd.client, name, field)

    await eventually(refused, timeout=30, message=f"{name} refused naming {field}")
    status = (await crd.client.get(RESOURCE, name, namespace="default")).get("status") or {}
    assert not status.get("currentNumberScheduled"), f"{name} got pods: {status}"


async def test_healthy_daemonset_beside_hostile_ones_converges_and_rolls_out(crd: CrdCluster) -> None:
    """Hostile neighbours never stall a healthy DaemonSet: it converges, then rolls out a new template."""
    async def settled() -> bool:
        return not await settle_problems(crd.client, ["healthy"], resource=RESOURCE)

    await eventually(settled, timeout=30, message="healthy DaemonSet settled")
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "agent", "image": "registry.example/agent:2.0"}]}}}}
    await crd.client.patch(RESOURCE, "healthy", patch, namespace="default")
    await eventually(settled, timeout=30, message="healthy DaemonSet rolled out")


@pytest.mark.parametrize("name", BIG)
async def test_oversized_daemonset_is_reconciled(crd: CrdCluster, name: str) -> None:
    """A DaemonSet of several MB (its pods as large) is reconciled like any other, status included."""
    async def settled() -> bool:
        return not await settle_problems(crd.client, [name], resource=RESOURCE)

    await eventually(settled, timeout=60, interval=0.5, message=f"{name} settled")


async def test_fixing_the_field_clears_the_condition_and_the_daemonset_runs(crd: CrdCluster) -> None:
    """Once the bad field is corrected, the Invalid condition goes and pods are created."""
    await crd.client.patch(RESOURCE, "mu-150", {"spec": {"updateStrategy": _rolling("50%")}}, namespace="default")

    async def settled() -> bool:
        ds = await crd.client.get(RESOURCE, "mu-150", namespace="default")
        invalid = [c for c in (ds.get("status") or {}).get("conditions") or [] if c.get("type") == "Invalid"]
        return not invalid and not await settle_problems(crd.client, ["mu-150"], resource=RESOURCE)

    await eventually(settled, timeout=30, message="mu-150 reconciled after the fix")


async def test_controller_survived_every_hostile_object(crd: CrdCluster) -> None:
    """After all of the above the controller process is alive and logged no error or exception."""
    assert crd.controller.proc is not None and crd.controller.proc.returncode is None
    assert not crd.controller.errors(), crd.controller.errors()[:5]
