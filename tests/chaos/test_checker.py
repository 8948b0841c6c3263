"""The chaos checker catches what it claims to: a rogue writer breaks each invariant on purpose.

No controller runs here. The test itself plays a broken controller (two pods on one node, too
many deletions at once, a pod for a deleted DaemonSet, a process that dies), and each rule of
the checker must report it; a checker that never fails would make the green chaos run worthless.
"""

from __future__ import annotations

import signal
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from dsctl.kube.client import KubeClient
from dsctl.kube.resources import DAEMONSETS, NODES, PODS
from tests.chaos.checker import ChaosChecker
from tests.chaos.ledger import IN_FLIGHT
from tests.chaos.recount import settle_problems
from tests.chaos.replicas import Replicas
from tests.support.builders import daemonset, rolling
from tests.support.builders import node as node_body
from tests.support.invariants import BUDGET_GRACE, EXEMPTION_SLACK, PodInfo, RolloutObserver
from tests.support.poll import eventually
from tests.support.simproc import SimProcess


@pytest.fixture
async def cluster() -> AsyncIterator[tuple[SimProcess, KubeClient]]:
    """A 3-node simulator without a controller, and a client for the rogue writes (bookmarks every half
    second, so a watch shows it has passed a resourceVersion)."""
    async with SimProcess(nodes=3, args=["--pod-startup-seconds", "0.1", "--bookmark-seconds", "0.5"]) as sim:
        client = await KubeClient.from_config(kubeconfig=sim.kubeconfig, qps=500, burst=1000)
        try:
            yield sim, client
        finally:
            await client.close()


def _pod(ds: dict[str, Any], node: str, index: int) -> dict[str, Any]:
    meta = ds["metadata"]
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": f"{meta['name']}-rogue-{node}-{index}", "namespace": "default",
                     "labels": dict(ds["spec"]["template"]["metadata"]["labels"]),
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": meta["name"],
                                          "uid": meta["uid"], "controller": True, "blockOwnerDeletion": True}]},
        "spec": {"nodeName": node, "containers": [{"name": "agent", "image": "registry.example/agent:1.0"}],
                 "terminationGracePeriodSeconds": 0},
    }


async def _ready_pods(client: KubeClient, count: int) -> bool:
    pods = (await client.list(PODS, namespace="default"))["items"]
    ready = [p for p in pods if any(c.get("type") == "Ready" and c.get("status") == "True"
                                    for c in (p.get("status") or {}).get("conditions") or [])]
    return len(ready) == count


async def test_two_pods_on_a_node_without_surge_is_reported(cluster: tuple[SimProcess, KubeClient]) -> None:
    """Invariant (a): a second live pod on a node of a no-surge DaemonSet is a violation."""
    _, client = cluster
    ds = await client.create(DAEMONSETS, daemonset("rogue", strategy=rolling(max_unavailable=1)), namespace="default")
    async with ChaosChecker(client) as checker:
        await checker.observe("rogue")
        for index in range(2):
            await client.create(PODS, _pod(ds, "node-0", index), namespace="default")
        await eventually(lambda: _any(checker.problems(), "pods-per-node"), timeout=10, message="pods-per-node")


async def test_deleting_beyond_the_budget_is_reported(cluster: tuple[SimProcess, KubeClient]) -> None:
    """Invariant (b): two nodes losing their pod under maxUnavailable 1 is a violation; excluded nodes are not."""
    _, client = cluster
    ds = await client.create(DAEMONSETS, daemonset("rogue", strategy=rolling(max_unavailable=1)), namespace="default")
    for node in ("node-0", "node-1", "node-2"):
        await client.create(PODS, _pod(ds, node, 0), namespace="default")
    await eventually(lambda: _ready_pods(client, 3), timeout=10, message="3 ready pods")
    async with ChaosChecker(client) as checker:
        await checker.observe("rogue")
        checker.exclude("node-2")
        await client.delete(PODS, "rogue-rogue-node-2-0", namespace="default")
        await client.delete(PODS, "rogue-rogue-node-0-0", namespace="default")
        await eventually(lambda: _ready_pods(client, 1), timeout=10, message="one pod left")
        assert not _now(checker.problems(), "budget"), "an excluded node was counted"
        await client.delete(PODS, "rogue-rogue-node-1-0", namespace="default")
        await eventually(lambda: _any(checker.problems(), "budget"), timeout=10, message="budget violation")


async def test_a_pod_for_a_deleted_daemonset_is_reported(cluster: tuple[SimProcess, KubeClient]) -> None:
    """Invariant (d): a pod created for a DaemonSet deleted over a second ago is a violation; sooner, a race."""
    _, client = cluster
    ds = await client.create(DAEMONSETS, daemonset("rogue"), namespace="default")
    async with ChaosChecker(client) as checker:
        await client.delete(DAEMONSETS, "rogue", namespace="default")
        await eventually(lambda: _deleted_seen(checker, ds), timeout=10, message="deletion seen")
        await client.create(PODS, _pod(ds, "node-1", 0), namespace="default")
        await eventually(lambda: _raced(checker), timeout=10, message="in-flight pod noted")
        assert not _now(checker.problems(), "created")
        await eventually(lambda: _past_in_flight(checker, ds), timeout=10, message="in-flight window over")
        await client.create(PODS, _pod(ds, "node-2", 0), namespace="default")
        await eventually(lambda: _any(checker.problems(), "created"), timeout=10, message="late pod reported")


async def test_an_unsettled_cluster_is_reported(cluster: tuple[SimProcess, KubeClient]) -> None:
    """Invariant (c): missing pods, a stray extra pod and a stale status are all named by the recount."""
    _, client = cluster
    ds = await client.create(DAEMONSETS, daemonset("rogue"), namespace="default")
    await client.create(PODS, _pod(ds, "node-0", 0), namespace="default")
    await client.create(PODS, _pod(ds, "node-0", 1), namespace="default")
    problems = " | ".join(await settle_problems(client, ["rogue"]))
    for expected in ("no ControllerRevision", "node-0 has 2 pods", "node-1 has 0 pods",
                     "but a recount gives 3"):
        assert expected in problems


async def test_a_controller_that_dies_on_its_own_is_reported(cluster: tuple[SimProcess, KubeClient]) -> None:
    """Invariant (e): a replica that exits without being killed by the schedule is a violation."""
    sim, _ = cluster
    async with Replicas(sim.kubeconfig) as replicas:
        assert replicas.problems() == []
        proc = replicas.processes[0]
        assert proc.proc is not None
        proc.proc.send_signal(signal.SIGTERM)
        await eventually(lambda: _exited(replicas), timeout=30, message="replica exited")
        assert any("without being killed" in p for p in replicas.problems())


async def _exited(replicas: Replicas) -> bool:
    proc = replicas.processes[0].proc
    return proc is not None and proc.returncode is not None


async def _any(problems: list[str], word: str) -> bool:
    return any(word in p for p in problems)


def _now(problems: list[str], word: str) -> bool:
    return any(word in p for p in problems)


async def _raced(checker: ChaosChecker) -> bool:
    return bool(checker.ledger.raced())


async def _past_in_flight(checker: ChaosChecker, ds: dict[str, Any]) -> bool:
    return time.time() - checker.ledger.deleted_at[ds["metadata"]["uid"]] > IN_FLIGHT


async def _deleted_seen(checker: ChaosChecker, ds: dict[str, Any]) -> bool:
    return ds["metadata"]["uid"] in checker.ledger.deleted_rv


async def test_pods_crossing_min_ready_as_the_controller_deletes_them_are_no_violation(
    cluster: tuple[SimProcess, KubeClient],
) -> None:
    """Regression (soak seeds 50153, 50154): an exempt node is judged with ``EXEMPTION_SLACK``.

    Pods that were not yet available when observation began may be deleted all at once, as
    upstream deletes every unavailable old pod. The controller judges availability a few
    milliseconds before the observer does; with whole-second transition times, the pods can
    cross ``minReadySeconds`` in between. The observer's clock is injected here: it first puts
    the pods just past ``minReadySeconds`` (available to the observer, maybe not yet to the
    controller), then they are deleted. Once the slack has passed, deletions count again.
    """
    _, client = cluster
    ds = await client.create(DAEMONSETS, daemonset("rogue", strategy=rolling(max_unavailable=1), min_ready_seconds=2),
                             namespace="default")
    nodes = ("node-0", "node-1", "node-2")
    for node in nodes:
        await client.create(PODS, _pod(ds, node, 0), namespace="default")
    await eventually(lambda: _ready_pods(client, 3), timeout=10, message="3 ready pods")
    since = max(PodInfo.of(p).ready_since or 0.0 for p in (await client.list(PODS, namespace="default"))["items"])
    now = [since + 1.5]  # Ready, not yet available: every node is exempt at the start
    async with RolloutObserver(client, "rogue", clock=lambda: now[0]) as observer:
        now[0] = since + 2 + EXEMPTION_SLACK / 2  # available to the observer, within the slack
        assert observer.unavailable_nodes() == set()
        for node in nodes:
            await client.delete(PODS, f"rogue-rogue-{node}-0", namespace="default")
        await eventually(lambda: _async(observer.unavailable_nodes() == set(nodes)), timeout=10,
                         message="all nodes unavailable")
        assert not observer.violations, observer.violations

        for node in nodes:
            await client.create(PODS, _pod(ds, node, 1), namespace="default")
        await eventually(lambda: _ready_pods(client, 3), timeout=10, message="3 new ready pods")
        fresh = max(PodInfo.of(p).ready_since or 0.0 for p in (await client.list(PODS, namespace="default"))["items"])
        now[0] = fresh + 2 + EXEMPTION_SLACK + 0.5  # served: the nodes count against the budget again
        assert observer.unavailable_nodes() == set()
        for node in nodes[:2]:
            await client.delete(PODS, f"rogue-rogue-{node}-1", namespace="default")
        await eventually(lambda: _async(any(v.rule == "budget" for v in observer.violations)), timeout=10,
                         message="a budget violation once the slack has passed")


async def test_a_budget_shrunk_by_the_cluster_judges_deletions_in_flight_by_the_old_one(
    cluster: tuple[SimProcess, KubeClient],
) -> None:
    """Regression (soak seed 50073): a node leaving the desired set lowers a percentage budget.

    ``maxUnavailable: 50%`` is 2 of 3 nodes but 1 of 2. When node-2 becomes ineligible, the
    deletions the controller decided under the old budget may still be landing: within
    ``BUDGET_GRACE`` they are judged by it, and nodes that stay unavailable afterwards are not
    a new finding. A further node lost once the grace is over is a violation.
    """
    _, client = cluster
    ds = await client.create(DAEMONSETS, daemonset("rogue", strategy=rolling(max_unavailable="50%")),
                             namespace="default")
    for node in ("node-0", "node-1", "node-2"):
        await client.create(PODS, _pod(ds, node, 0), namespace="default")
    await eventually(lambda: _ready_pods(client, 3), timeout=10, message="3 ready pods")
    now = [time.time()]
    async with RolloutObserver(client, "rogue", clock=lambda: now[0]) as observer:
        assert observer.budget == 2
        taint = {"key": "example.com/drained", "value": "yes", "effect": "NoSchedule"}
        await client.patch(NODES, "node-2", {"spec": {"taints": [taint]}})
        await eventually(lambda: _async(observer.budget == 1), timeout=10, message="budget shrunk to 1")
        now[0] += BUDGET_GRACE / 2
        for node in ("node-0", "node-1"):
            await client.delete(PODS, f"rogue-rogue-{node}-0", namespace="default")
        await eventually(lambda: _async(observer.unavailable_nodes() == {"node-0", "node-1"}), timeout=10,
                         message="both nodes unavailable")
        now[0] += BUDGET_GRACE
        assert observer.unavailable_nodes() == {"node-0", "node-1"}
        assert not observer.violations, observer.violations

        await client.create(PODS, _pod(ds, "node-0", 1), namespace="default")
        await eventually(lambda: _async(observer.unavailable_nodes() == {"node-1"}), timeout=10,
                         message="node-0 served again")
        await client.delete(PODS, "rogue-rogue-node-0-1", namespace="default")
        await eventually(lambda: _async(any(v.rule == "budget" for v in observer.violations)), timeout=10,
                         message="a budget violation once the grace has passed")


async def _async(value: bool) -> bool:
    return value


@pytest.mark.parametrize(("ready_first", "violations"), [
    pytest.param(False, 1, id="removed-while-not-ready"),
    pytest.param(True, 0, id="removed-once-ready"),
])
async def test_a_readiness_taint_removed_too_early_is_reported(cluster: tuple[SimProcess, KubeClient],
                                                             ready_first: bool, violations: int) -> None:
    """The test removes a readiness taint itself: while the gating pod is not Ready the checker reports it,
    once it is Ready it does not."""
    _, client = cluster
    taint = {"key": "dsctl.io/agents-not-ready", "effect": "NoSchedule"}
    ds = await client.create(DAEMONSETS, daemonset("gate"), namespace="default")
    await client.create(NODES, node_body("tainted", taints=[taint]))
    async with ChaosChecker(client) as checker:
        await checker.watch_gate("dsctl.io/agents-not-ready", ["gate"])
        pod = _pod(ds, "tainted", 0)
        if not ready_first:
            pod["metadata"]["annotations"] = {"sim.dsctl.io/never-ready": "true"}
        await client.create(PODS, pod, namespace="default")
        if ready_first:
            async def ready() -> bool:
                got = await client.get(PODS, pod["metadata"]["name"], namespace="default")
                return any(c.get("type") == "Ready" and c.get("status") == "True"
                           for c in (got.get("status") or {}).get("conditions") or [])
            await eventually(ready, timeout=10, message="the gating pod Ready")
        await client.patch(NODES, "tainted", {"spec": {"taints": None}})
        await checker.finish_gate()
        assert checker.gate is not None and checker.gate.judged == 1
        found = [p for p in checker.problems() if p.startswith("readiness gate")]
        assert len(found) == violations, found
        if violations:
            assert "default/gate" in found[0]
