"""Behaviour a user sees through kubectl that must match kube-controller-manager's exactly.

Each case is one of upstream's behaviours that dsctl once got wrong: a status written by someone
else, a template that names its node, ``Gt``/``Lt`` values Go's ``strconv.ParseInt`` refuses,
and the wording of the FailedDaemonPod and SucceededDaemonPod events, which tooling greps.
"""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest

from tests.support.builders import daemonset
from tests.support.controllerproc import ControllerProcess
from tests.support.poll import eventually
from tests.support.requestaudit import is_controller_agent
from tests.support.simproc import SimProcess

THREE_NODES = pytest.mark.parametrize("sim", [{"nodes": 3}], indirect=True)


async def apply(sim: SimProcess, obj: dict[str, Any]) -> None:
    """``kubectl apply -f -`` of one object."""
    await sim.kubectl("apply", "-f", "-", input=orjson.dumps(obj))


async def get_json(sim: SimProcess, *args: str) -> dict[str, Any]:
    """``kubectl get ... -o json``, decoded."""
    out: dict[str, Any] = json.loads((await sim.kubectl("get", *args, "-o", "json")).stdout)
    return out


async def settled_status(sim: SimProcess, name: str, **want: int) -> dict[str, Any]:
    """The DaemonSet's status once it reflects its current generation and has the given fields."""
    async def probe() -> dict[str, Any] | None:
        ds = await get_json(sim, "ds", name)
        status = ds.get("status") or {}
        if status.get("observedGeneration") != ds["metadata"]["generation"]:
            return None
        return status if all(status.get(k, 0) == v for k, v in want.items()) else None

    return await eventually(probe, timeout=20, message=f"status of ds/{name} with {want}")


async def controller_status_writes(sim: SimProcess, since: int) -> int:
    """DaemonSet status writes the controller made after request-log cursor ``since``."""
    items = (await sim.requests(since=since))["items"]
    return sum(1 for r in items if r["resource"] == "daemonsets" and r["subresource"] == "status"
               and r["method"] in ("PUT", "PATCH") and is_controller_agent(r["user_agent"]))


@THREE_NODES
async def test_status_written_by_someone_else_is_corrected(sim: SimProcess, controller: ControllerProcess) -> None:
    """`kubectl patch --subresource=status` is undone at once (not at the 600 s resync), with one write and no loop."""
    await apply(sim, daemonset("agent"))
    await settled_status(sim, "agent", desiredNumberScheduled=3, numberReady=3)
    cursor = (await sim.requests())["next"]
    for bogus in (7, 9):
        await sim.kubectl("patch", "ds", "agent", "--subresource=status", "--type=merge",
                          "-p", json.dumps({"status": {"desiredNumberScheduled": bogus, "numberReady": 0}}))
        await settled_status(sim, "agent", desiredNumberScheduled=3, numberReady=3)
    # Each correction is one write; its own echo syncs nothing more. A loop would have written
    # again and again between the two kubectl runs.
    assert await controller_status_writes(sim, cursor) == 2


@THREE_NODES
async def test_template_node_name_binds_with_a_custom_scheduler(
    sim: SimProcess, controller: ControllerProcess
) -> None:
    """A template naming node-1 with a scheduler that runs nowhere still gets its pod bound and running."""
    ds = daemonset("pinned")
    ds["spec"]["template"]["spec"].update({"nodeName": "node-1", "schedulerName": "no-such-scheduler"})
    await apply(sim, ds)
    await settled_status(sim, "pinned", desiredNumberScheduled=1, numberReady=1)
    pods = (await get_json(sim, "pods", "-l", "app=pinned"))["items"]
    assert [(p["spec"].get("nodeName"), p["status"].get("phase")) for p in pods] == [("node-1", "Running")]


def _gt(value: str) -> dict[str, Any]:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "example.com/cores", "operator": "Gt", "values": [value]}]}]}}}


@THREE_NODES
@pytest.mark.parametrize(
    ("value", "desired"),
    [
        pytest.param("5_0", 0, id="underscore-refused"),
        pytest.param("99999999999999999999", 0, id="beyond-int64-refused"),
        pytest.param("050", 1, id="leading-zero-accepted"),
    ],
)
async def test_gt_values_parsed_like_go(sim: SimProcess, controller: ControllerProcess, value: str,
                                        desired: int) -> None:
    """Gt values are read as strconv.ParseInt does, by the controller and by the scheduler alike."""
    await sim.kubectl("label", "node", "node-0", "example.com/cores=64")
    await apply(sim, daemonset("big", affinity=_gt(value)))
    await settled_status(sim, "big", desiredNumberScheduled=desired, numberReady=desired)
    # The simulated scheduler reads the same values the same way: a plain pod with this
    # affinity binds to node-0 only if Go would parse the value.
    await apply(sim, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "probe", "namespace": "default"},
                      "spec": {"affinity": _gt(value), "containers": [{"name": "c", "image": "busybox"}]}})

    async def scheduled() -> dict[str, Any] | None:
        pod = await get_json(sim, "pod", "probe")
        conditions = {c["type"]: c for c in pod.get("status", {}).get("conditions") or []}
        return pod if "PodScheduled" in conditions else None

    pod = await eventually(scheduled, timeout=15, message="the scheduler's verdict on the probe pod")
    assert (pod["spec"].get("nodeName") == "node-0") is bool(desired), pod["status"]


async def _event_messages(sim: SimProcess, reason: str) -> list[str]:
    events = await get_json(sim, "events", "--field-selector", f"reason={reason}")
    return [str(e.get("message") or e.get("note")) for e in events["items"]]


@pytest.mark.parametrize(
    ("phase", "reason", "wording"),
    [
        pytest.param("Failed", "FailedDaemonPod",
                     "Found failed daemon pod default/{pod} on node {node}, will try to kill it", id="failed"),
        pytest.param("Succeeded", "SucceededDaemonPod",
                     "Found succeeded daemon pod default/{pod} on node {node}, will try to delete it",
                     id="succeeded"),
    ],
)
@THREE_NODES
async def test_terminal_pod_events_worded_as_upstream(
    sim: SimProcess, controller: ControllerProcess, phase: str, reason: str, wording: str
) -> None:
    """A daemon pod that failed or exited is reported with kube-controller-manager's exact message."""
    await apply(sim, daemonset("agent"))
    await settled_status(sim, "agent", numberReady=3)
    pod = (await get_json(sim, "pods", "-l", "app=agent"))["items"][0]
    name, node = pod["metadata"]["name"], pod["spec"]["nodeName"]
    await sim.kubectl("patch", "pod", name, "--subresource=status", "--type=merge",
                      "-p", json.dumps({"status": {"phase": phase}}))
    expected = wording.format(pod=name, node=node)

    async def reported() -> list[str] | None:
        messages = await _event_messages(sim, reason)
        return messages if expected in messages else None

    await eventually(reported, timeout=15, message=f"a {reason} event saying {expected!r}")
