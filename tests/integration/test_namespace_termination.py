"""Deleting a namespace: the simulator terminates it like kube-apiserver, the controller stays quiet.

A deleted namespace turns ``Terminating``; creates in it are refused with a
``NamespaceTerminating`` cause, updates still work, and the simulated namespace controller
deletes the contents, then the namespace. The DaemonSet controller treats such a refused create
as upstream does: no error, no FailedCreate event, and the refused creates stay expected.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from dsctl.controller.expectations import Expectations
from dsctl.controller.podwrites import PodWriter
from dsctl.controller.recorder import EventRecorder
from dsctl.daemonset.podplan import Plan
from dsctl.kube import errors
from dsctl.kube.client import KubeClient
from dsctl.kube.resources import CONTROLLER_REVISIONS, DAEMONSETS, NAMESPACES, PODS
from tests.support.builders import daemonset
from tests.support.controllerproc import ControllerProcess
from tests.support.poll import eventually

TEAM = "team"
HOLD = "example.com/hold"


async def _namespace(kube: KubeClient) -> dict[str, Any] | None:
    try:
        return await kube.get(NAMESPACES, TEAM)
    except errors.NotFound:
        return None


async def _gone(kube: KubeClient) -> bool:
    return await _namespace(kube) is None


async def _terminating_namespace_held_open(kube: KubeClient) -> None:
    """Create ``team`` with an object whose finalizer keeps it Terminating, then delete it."""
    await kube.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": TEAM}})
    holder = {"apiVersion": "apps/v1", "kind": "ControllerRevision", "revision": 1, "data": {},
              "metadata": {"name": "holder", "finalizers": [HOLD]}}
    await kube.create(CONTROLLER_REVISIONS, holder, namespace=TEAM)
    await kube.delete(NAMESPACES, TEAM)


async def _release(kube: KubeClient) -> None:
    await kube.patch(CONTROLLER_REVISIONS, "holder", {"metadata": {"finalizers": None}}, namespace=TEAM)


async def test_a_terminating_namespace_refuses_creates_and_then_goes(kube: KubeClient) -> None:
    """Phase Terminating, creates refused with the cause, updates allowed, removal once empty."""
    await _terminating_namespace_held_open(kube)
    namespace = await _namespace(kube)
    assert namespace is not None and namespace["status"]["phase"] == "Terminating"
    assert namespace["metadata"].get("deletionTimestamp")

    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "late"},
           "spec": {"containers": [{"name": "c", "image": "registry.example/c:1"}]}}
    with pytest.raises(errors.Forbidden) as refused:
        await kube.create(PODS, pod, namespace=TEAM)
    assert refused.value.namespace_terminating
    assert "because it is being terminated" in refused.value.message

    holder = await kube.get(CONTROLLER_REVISIONS, "holder", namespace=TEAM)
    assert holder["metadata"].get("deletionTimestamp"), "the namespace controller deletes the contents"
    await _release(kube)  # an update in a terminating namespace
    await eventually(lambda: _gone(kube), timeout=10, message="namespace removed once empty")


async def test_a_create_refused_by_a_terminating_namespace_is_no_error(kube: KubeClient) -> None:
    """The executor stops its slow start, reports no error and records no FailedCreate."""
    await _terminating_namespace_held_open(kube)
    expectations = Expectations(clock=time.monotonic)
    recorder = EventRecorder(kube)
    executor = PodWriter(client=kube, expectations=expectations, recorder=recorder)
    ds = daemonset("agent", namespace=TEAM)
    ds["metadata"]["uid"] = "0b6f3c1e-5d1c-4a55-9d1f-2f8a2d1c0001"

    result = await executor.execute(key=f"{TEAM}/agent", ds=ds, plan=Plan(creates=("node-0", "node-1", "node-2")),
                                     hash_="5d8f7c9b6")

    assert (result.created, result.errors) == (0, [])
    record = expectations.get(f"{TEAM}/agent")
    assert record is not None and record.adds == 1, "the refused create stays expected, the skipped two do not"
    assert not expectations.satisfied(f"{TEAM}/agent")
    assert recorder.pending == 0, "no FailedCreate event"
    await _release(kube)
    await eventually(lambda: _gone(kube), timeout=10, message="namespace removed")


async def _no_pods(kube: KubeClient) -> bool:
    return not (await kube.list(PODS, namespace=TEAM))["items"]


async def _running_everywhere(kube: KubeClient, nodes: int) -> bool:
    return len((await kube.list(PODS, namespace=TEAM))["items"]) == nodes


async def test_deleting_the_namespace_of_a_daemonset(kube: KubeClient, controller: ControllerProcess) -> None:
    """The DaemonSet, its pods and the namespace go; the controller logs no error and no FailedCreate."""
    await kube.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": TEAM}})
    await kube.create(DAEMONSETS, daemonset("agent", namespace=TEAM), namespace=TEAM)
    await eventually(lambda: _running_everywhere(kube, 5), timeout=20, message="a pod on each of 5 nodes")

    await kube.delete(NAMESPACES, TEAM)
    await eventually(lambda: _gone(kube), timeout=30, message="namespace removed")
    assert await _no_pods(kube)
    assert not [e for e in controller.logs if e.get("event") == "event" and e.get("reason") == "FailedCreate"]
