"""Upstream's rolling-update scenarios, replayed step by step through manage + rolling update.

Each ``Sim.sync`` is one controller sync as upstream's unit tests see it: the manage plan is
applied, then the rolling-update plan is computed over the resulting pods and applied, and the
(creates, deletes) total is reported. As in upstream's fake pod control, writes land at once:
a created pod appears not Ready, a deleted pod disappears. ``READY`` marks every pod Ready at
the simulated clock. Pod hashes stand in for revisions ("h1" → "h2" is a template change).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsctl.controller.backoffstate import FailedPodBackoff
from dsctl.daemonset.eligibility import Fit
from dsctl.daemonset.manage import plan_manage
from dsctl.daemonset.podplan import Plan
from dsctl.daemonset.template import HASH_LABEL
from dsctl.daemonset.update import plan_rolling_update
from dsctl_api.pods import is_pod_available, is_pod_ready
from dsctl_api.timefmt import format_rfc3339
from tests.support.profiles import examples

Pod = dict[str, Any]
READY = "ready"
Step = tuple[int, int] | str


def strategy(*, unavailable: Any = None, surge: Any = None, kind: str = "RollingUpdate") -> dict[str, Any]:
    """An updateStrategy dict; None leaves a budget out."""
    rolling: dict[str, Any] = {}
    if unavailable is not None:
        rolling["maxUnavailable"] = unavailable
    if surge is not None:
        rolling["maxSurge"] = surge
    return {"type": kind, "rollingUpdate": rolling} if rolling else {"type": kind}


@dataclass
class Sim:
    """A toy cluster: nodes, the DaemonSet's pods, a clock, and the current revision hash."""

    nodes: list[str]
    should_run: set[str] = field(default_factory=set)
    now: float = 100.0
    hash: str = "h1"
    min_ready: int = 0
    update_strategy: dict[str, Any] = field(default_factory=lambda: strategy(unavailable=1))
    pods: dict[str, Pod] = field(default_factory=dict)
    requeue: float | None = None
    _serial: itertools.count[int] = field(default_factory=itertools.count)

    def __post_init__(self) -> None:
        if not self.should_run:
            self.should_run = set(self.nodes)

    @classmethod
    def with_nodes(cls, count: int) -> Sim:
        """A cluster of ``count`` nodes named node-00, node-01, ..."""
        return cls(nodes=[f"node-{i:02d}" for i in range(count)])

    @property
    def ds(self) -> dict[str, Any]:
        """The DaemonSet as the planners see it."""
        return {
            "metadata": {"name": "agent", "namespace": "ops", "uid": "ds-uid"},
            "spec": {"updateStrategy": self.update_strategy, "minReadySeconds": self.min_ready},
            "status": {"observedGeneration": 1},
        }

    def pods_by_node(self) -> dict[str, list[Pod]]:
        """Live pods grouped by node, oldest first."""
        grouped: dict[str, list[Pod]] = {}
        for pod in self.pods.values():
            grouped.setdefault(pod["spec"]["nodeName"], []).append(pod)
        return grouped

    def apply(self, plan: Plan) -> tuple[int, int]:
        """Perform a plan: created pods appear not Ready, deleted pods vanish."""
        for node in plan.creates:
            serial = next(self._serial)
            name = f"agent-{serial:04d}"
            self.pods[name] = {
                "metadata": {
                    "name": name,
                    "namespace": "ops",
                    "uid": f"uid-{serial}",
                    "labels": {HASH_LABEL: self.hash},
                    "creationTimestamp": format_rfc3339(self.now),
                },
                "spec": {"nodeName": node},
                "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "False"}]},
            }
        for ref in plan.deletes:
            del self.pods[ref.name]
        return len(plan.creates), len(plan.deletes)

    def sync(self) -> tuple[int, int]:
        """One controller sync: manage, then the rolling update over the resulting pods."""
        manage = plan_manage(
            ds=self.ds,
            nodes=[{"metadata": {"name": n}} for n in self.nodes],
            pods_by_node=self.pods_by_node(),
            hash=self.hash,
            now=self.now,
            backoff=FailedPodBackoff(),
            fits={n: Fit(n in self.should_run, True) for n in self.nodes},
        )
        c1, d1 = self.apply(manage)
        update = plan_rolling_update(
            ds=self.ds,
            nodes_should_run=self.should_run,
            pods_by_node=self.pods_by_node(),
            hash=self.hash,
            now=self.now,
        )
        self.requeue = update.requeue_after
        c2, d2 = self.apply(update)
        return c1 + c2, d1 + d2

    def set_ready(self, ready: bool = True, *, count: int | None = None, where: Callable[[Pod], bool] = bool) -> int:
        """Flip up to ``count`` pods matching ``where`` to Ready (or not) at the current clock."""
        flipped = 0
        for pod in self.pods.values():
            if count is not None and flipped >= count:
                break
            if is_pod_ready(pod) == ready or not where(pod):
                continue
            pod["status"]["conditions"] = [
                {
                    "type": "Ready",
                    "status": "True" if ready else "False",
                    "lastTransitionTime": format_rfc3339(self.now),
                }
            ]
            flipped += 1
        return flipped

    def run(self, steps: Sequence[Step]) -> list[Step]:
        """Replay steps (syncs and READY marks); returns what actually happened, for one assert."""
        seen: list[Step] = []
        for step in steps:
            if step == READY:
                self.set_ready()
                seen.append(READY)
            else:
                seen.append(self.sync())
        return seen

    def start(self, *, ready: bool = True) -> None:
        """Create the first generation of pods (hash h1), optionally Ready."""
        assert self.sync() == (len(self.should_run), 0)
        if ready:
            self.set_ready()

    def hashes(self) -> list[str]:
        """The hash of every pod, in creation order."""
        return [p["metadata"]["labels"][HASH_LABEL] for p in self.pods.values()]

    def unavailable_desired(self) -> int:
        """Desired nodes without an available pod right now."""
        grouped = self.pods_by_node()
        return sum(
            1
            for node in self.should_run
            if not any(is_pod_available(p, self.min_ready, self.now) for p in grouped.get(node, ()))
        )


@pytest.mark.parametrize(
    ("nodes", "update_strategy", "ready_first", "steps"),
    [
        pytest.param(
            5,
            strategy(unavailable=2),
            True,
            [(0, 2), (2, 0), READY, (0, 2), (2, 0), READY, (0, 1), (1, 0), READY, (0, 0)],
            id="updates-pods-max-unavailable-2",
        ),
        pytest.param(
            5,
            strategy(unavailable=0, surge=2),
            True,
            [(2, 0), (0, 0), READY, (2, 2), (0, 0), READY, (1, 2), (0, 0), READY, (0, 1), (0, 0)],
            id="updates-pods-max-surge-2",
        ),
        pytest.param(
            5,
            strategy(unavailable=3),
            True,
            [(0, 3), (3, 0), (0, 0), (0, 0)],
            id="new-pods-never-ready-stall",
        ),
        pytest.param(
            5,
            strategy(unavailable=3),
            False,
            [(0, 5), (5, 0), (0, 0)],
            id="all-old-pods-not-ready-are-all-replaced",
        ),
        pytest.param(
            10,
            strategy(unavailable="20%"),
            True,
            [(0, 2), (2, 0), READY] * 5 + [(0, 0)],
            id="percent-budget-rounds-up-per-wave",
        ),
        pytest.param(
            5,
            strategy(kind="OnDelete"),
            True,
            [(0, 0), READY, (0, 0)],
            id="on-delete-replaces-nothing",
        ),
    ],
)
def test_rollout_steps(nodes: int, update_strategy: dict[str, Any], ready_first: bool, steps: list[Step]) -> None:
    """A template change rolls out in exactly upstream's (creates, deletes) sequence."""
    sim = Sim.with_nodes(nodes)
    sim.start(ready=ready_first)
    sim.update_strategy, sim.hash = update_strategy, "h2"
    assert sim.run(steps) == steps


def test_no_template_change_deletes_nothing() -> None:
    """A strategy change alone (same hash) rolls nothing."""
    sim = Sim.with_nodes(5)
    sim.start(ready=False)
    sim.update_strategy = strategy(unavailable=3)
    assert sim.run([(0, 0)]) == [(0, 0)]


def test_completed_rollout_leaves_one_ready_current_pod_per_node() -> None:
    """After the max-unavailable-2 rollout every node runs exactly one Ready pod of the new hash."""
    sim = Sim.with_nodes(5)
    sim.start()
    sim.update_strategy, sim.hash = strategy(unavailable=2), "h2"
    wave: list[Step] = [(0, 2), (2, 0), READY]
    tail: list[Step] = [(0, 1), (1, 0), READY, (0, 0)]
    assert sim.run(wave * 2 + tail) == wave * 2 + tail
    assert sorted(sim.pods_by_node()) == sim.nodes
    assert all(len(pods) == 1 for pods in sim.pods_by_node().values())
    assert sim.hashes() == ["h2"] * 5
    assert all(is_pod_ready(p) for p in sim.pods.values())


def test_some_old_pods_not_ready_keep_the_healthy_ones() -> None:
    """A second update while two new pods never became ready replaces those two and keeps three healthy pods."""
    sim = Sim.with_nodes(5)
    sim.start()
    sim.update_strategy, sim.hash = strategy(unavailable=2), "h2"
    assert sim.run([(0, 2), (2, 0), (0, 0)]) == [(0, 2), (2, 0), (0, 0)]
    sim.hash = "h3"
    assert sim.run([(0, 2), (2, 0), (0, 0)]) == [(0, 2), (2, 0), (0, 0)]
    assert sum(is_pod_ready(p) for p in sim.pods.values()) == 3


def test_twenty_nodes_keep_old_healthy_pods_through_repeated_updates() -> None:
    """20 nodes, 10 new pods never ready: ten further updates with budgets 0..9 only churn the unready ten."""
    sim = Sim.with_nodes(20)
    sim.start()
    sim.update_strategy, sim.hash = strategy(unavailable=10), "h2"
    assert sim.run([(0, 10), (10, 0), (0, 0)]) == [(0, 10), (10, 0), (0, 0)]
    healthy = {name for name, pod in sim.pods.items() if is_pod_ready(pod)}
    assert len(healthy) == 10
    for i, budget in enumerate([3, 0, 7, 1, 9, 5, 2, 8, 4, 6]):
        sim.update_strategy, sim.hash = strategy(unavailable=budget), f"h3-{i}"
        assert sim.run([(0, 10), (10, 0), (0, 0)]) == [(0, 10), (10, 0), (0, 0)], f"iteration {i}"
        assert healthy <= {name for name, pod in sim.pods.items() if is_pod_ready(pod)}
    sim.update_strategy, sim.hash = strategy(unavailable=11), "h4"
    assert sim.run([(0, 11), (10 + 1, 0), (0, 0)]) == [(0, 11), (11, 0), (0, 0)]
    assert sum(is_pod_ready(p) for p in sim.pods.values()) == 9


def test_hundred_nodes_replace_unavailable_old_pods_first() -> None:
    """With 88 unavailable new pods and 2 unavailable old ones, only the 2 old ones are replaced."""
    sim = Sim.with_nodes(100)
    sim.start()
    sim.update_strategy, sim.hash = strategy(unavailable=10), "h2"
    for _ in range(10):
        assert sim.run([(0, 10), (10, 0), READY]) == [(0, 10), (10, 0), READY]
    assert sim.run([(0, 0)]) == [(0, 0)]
    doomed = set()
    for i, (name, pod) in enumerate(sim.pods.items()):
        if i >= 10:
            pod["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
        if i < 12:
            pod["metadata"]["labels"][HASH_LABEL] = "h1"
            if i >= 10:
                doomed.add(name)
    assert sim.run([(0, 2), (2, 0), (0, 0)]) == [(0, 2), (2, 0), (0, 0)]
    assert not doomed & set(sim.pods)


def test_second_update_inside_min_ready_seconds_stays_within_budget() -> None:
    """A new template while the last wave is still inside minReadySeconds replaces only that wave."""
    sim = Sim.with_nodes(10)
    sim.start()
    sim.update_strategy, sim.hash, sim.min_ready = strategy(unavailable=2), "h2", 30
    sim.now += 60
    assert sim.run([(0, 2), (2, 0), READY]) == [(0, 2), (2, 0), READY]
    sim.now += 5
    sim.hash = "h3"
    assert sim.sync() == (0, 2), "the two h2 pods are not yet available: they are the ones replaced"
    assert sim.unavailable_desired() == 2
    assert sim.sync() == (2, 0)
    assert sim.hashes().count("h1") == 8


def test_surge_with_min_ready_seconds_on_an_injected_clock() -> None:
    """Surge waits for minReadySeconds on the clock before retiring old pods, and requeues for it."""
    sim = Sim.with_nodes(5)
    sim.start(ready=False)
    sim.update_strategy, sim.hash = strategy(unavailable=0, surge=3), "h2"
    sim.now = 100
    assert sim.sync() == (5, 0), "all old pods unavailable: surge everywhere"
    sim.now = 200
    assert sim.sync() == (0, 5), "old pods not ready: manage retires them"
    assert sim.set_ready(count=5) == 5

    sim.min_ready, sim.hash = 15, "h3"
    sim.now = 300
    assert sim.sync() == (3, 0)
    surged = {p["spec"]["nodeName"] for p in sim.pods.values() if p["metadata"]["labels"][HASH_LABEL] == "h3"}
    assert sim.set_ready(count=2, where=lambda p: p["metadata"]["labels"][HASH_LABEL] == "h3") == 2
    lonely_old = lambda p: p["metadata"]["labels"][HASH_LABEL] != "h3" and p["spec"]["nodeName"] not in surged  # noqa: E731
    assert sim.set_ready(False, count=1, where=lonely_old) == 1

    sim.now = 310
    assert sim.sync() == (1, 0), "new pods still inside minReadySeconds; the unready old pod gets a replacement"
    assert sim.requeue == pytest.approx(5 + 1.0)
    sim.now = 320
    assert sim.sync() == (1, 3)
    assert sim.set_ready(count=3, where=lambda p: p["metadata"]["labels"][HASH_LABEL] == "h3") == 3
    sim.now = 340
    assert sim.sync() == (0, 2)
    sim.now = 350
    assert sim.sync() == (0, 0)
    assert sim.hashes() == ["h3"] * 5


def test_surge_moves_off_a_node_that_lost_eligibility() -> None:
    """maxSurge 1 with one node no longer eligible (kept running): its pod goes first, then one node per wave."""
    sim = Sim.with_nodes(5)
    sim.start()
    sim.should_run = set(sim.nodes[1:])
    sim.update_strategy, sim.hash = strategy(unavailable=0, surge=1), "h2"
    wave: list[Step] = [(1, 1), (0, 0), READY]
    tail: list[Step] = [(0, 1), (0, 0)]
    steps = wave * 4 + tail
    assert sim.run(steps) == steps
    assert sorted(sim.pods_by_node()) == sim.nodes[1:]
    assert sim.hashes() == ["h2"] * 4


# --- properties ---------------------------------------------------------------------------

POD_KINDS = st.fixed_dictionaries(
    {
        "new": st.booleans(),
        "ready": st.sampled_from(["no", "recent", "long"]),
        "terminating": st.booleans(),
    }
)
NODE = st.tuples(st.booleans(), st.lists(POD_KINDS, max_size=3))
BUDGET = st.one_of(st.integers(min_value=0, max_value=6), st.sampled_from(["0%", "10%", "25%", "50%", "100%"]))


def build(nodes: list[tuple[bool, list[dict[str, Any]]]], now: float) -> tuple[set[str], dict[str, list[Pod]]]:
    """Turn generated node descriptions into (should_run nodes, pods by node)."""
    should_run: set[str] = set()
    pods: dict[str, list[Pod]] = {}
    for i, (eligible, kinds) in enumerate(nodes):
        node = f"n{i:02d}"
        if eligible:
            should_run.add(node)
        for j, kind in enumerate(kinds):
            meta: dict[str, Any] = {
                "name": f"{node}-p{j}",
                "namespace": "ops",
                "uid": f"{node}-{j}",
                "labels": {HASH_LABEL: "new" if kind["new"] else "old"},
            }
            if kind["terminating"]:
                meta["deletionTimestamp"] = format_rfc3339(now)
            since = {"recent": now - 5, "long": now - 60}.get(kind["ready"])
            condition = (
                {"type": "Ready", "status": "True", "lastTransitionTime": format_rfc3339(since)}
                if since is not None
                else {"type": "Ready", "status": "False"}
            )
            pods.setdefault(node, []).append(
                {
                    "metadata": meta,
                    "spec": {"nodeName": node},
                    "status": {"phase": "Running", "conditions": [condition]},
                }
            )
    return should_run, pods


def _live(pods: Sequence[Pod]) -> list[Pod]:
    return [p for p in pods if not p["metadata"].get("deletionTimestamp")]


@settings(max_examples=examples(300), deadline=None)
@given(nodes=st.lists(NODE, max_size=12), budget=BUDGET, min_ready=st.sampled_from([0, 30]))
def test_no_surge_deletes_stay_within_the_unavailability_budget(
    nodes: list[tuple[bool, list[dict[str, Any]]]], budget: int | str, min_ready: int
) -> None:
    """Without surge, a pass never leaves more desired nodes without an available pod than max(before, budget)."""
    now = 10_000.0
    should_run, pods = build(nodes, now)
    ds = {"spec": {"updateStrategy": strategy(unavailable=budget), "minReadySeconds": min_ready}}
    plan = plan_rolling_update(ds=ds, nodes_should_run=should_run, pods_by_node=pods, hash="new", now=now)
    assert plan.creates == ()
    doomed = {ref.name for ref in plan.deletes}
    for node, node_pods in pods.items():
        for pod in node_pods:
            if pod["metadata"]["name"] in doomed:
                assert pod["metadata"]["labels"][HASH_LABEL] == "old", "only old pods are deleted"
                assert not pod["metadata"].get("deletionTimestamp"), f"terminating pod on {node} deleted again"

    def lacking(removed: set[str]) -> int:
        return sum(
            1
            for node in should_run
            if not any(
                is_pod_available(p, min_ready, now) and p["metadata"]["name"] not in removed
                for p in _live(pods.get(node, []))
            )
        )

    assert lacking(doomed) <= max(lacking(set()), expected_budget(budget, len(should_run)))


def expected_budget(budget: int | str, desired: int) -> int:
    """maxUnavailable restated independently: percent of desired rounded up, and 0 becomes 1."""
    raw = budget if isinstance(budget, int) else math.ceil(int(budget.rstrip("%")) * desired / 100)
    return raw if raw > 0 or desired == 0 else 1


@settings(max_examples=examples(300), deadline=None)
@given(
    nodes=st.lists(NODE, max_size=12), surge=st.integers(min_value=1, max_value=4), min_ready=st.sampled_from([0, 30])
)
def test_surge_never_exceeds_two_pods_per_node_nor_drops_availability(
    nodes: list[tuple[bool, list[dict[str, Any]]]], surge: int, min_ready: int
) -> None:
    """With surge: at most two live pods per node, no desired node loses availability, none below desired."""
    now = 10_000.0
    should_run, pods = build(nodes, now)
    ds = {"spec": {"updateStrategy": strategy(unavailable=0, surge=surge), "minReadySeconds": min_ready}}
    plan = plan_rolling_update(ds=ds, nodes_should_run=should_run, pods_by_node=pods, hash="new", now=now)
    doomed = {ref.name for ref in plan.deletes}
    assert len(plan.creates) == len(set(plan.creates))
    assert set(plan.creates) <= should_run
    surged_beside_available = 0
    for node in {*pods, *should_run}:
        live = _live(pods.get(node, []))
        after = [p for p in live if p["metadata"]["name"] not in doomed]
        assert len(after) + plan.creates.count(node) <= max(2, len(live)), f"{node} grew past two pods"
        if node in plan.creates:
            assert len(after) == 1, f"surge onto {node} that has {len(after)} live pods"
            assert all(p["metadata"]["labels"][HASH_LABEL] == "old" for p in after)
            if any(is_pod_available(p, min_ready, now) for p in after):
                surged_beside_available += 1
        if node in should_run and any(is_pod_available(p, min_ready, now) for p in live):
            assert any(is_pod_available(p, min_ready, now) for p in after), f"{node} lost its available pod"
    assert surged_beside_available <= surge

    def available_nodes(removed: set[str]) -> int:
        return sum(
            1
            for node_pods in pods.values()
            if any(
                is_pod_available(p, min_ready, now) and p["metadata"]["name"] not in removed for p in _live(node_pods)
            )
        )

    assert available_nodes(doomed) >= min(available_nodes(set()), len(should_run)), "retired below desired"


@settings(max_examples=examples(40), deadline=None)
@given(
    count=st.integers(min_value=1, max_value=12),
    budget=st.integers(min_value=0, max_value=4),
    events=st.lists(st.sampled_from(["sync", "sync", "ready-some", "ready-all", "tick"]), max_size=40),
)
def test_random_walk_no_surge_respects_the_budget(count: int, budget: int, events: list[str]) -> None:
    """Across any interleaving of syncs, readiness and time, no sync pushes unavailability past the budget."""
    sim = Sim.with_nodes(count)
    sim.start()
    sim.update_strategy, sim.hash, sim.min_ready = strategy(unavailable=budget), "h2", 10
    sim.now += 60
    allowed = max(budget, 1)
    for event in events:
        if event == "sync":
            before = sim.unavailable_desired()
            sim.sync()
            assert sim.unavailable_desired() <= max(before, allowed)
        elif event == "ready-some":
            sim.set_ready(count=1)
        elif event == "ready-all":
            sim.set_ready()
        else:
            sim.now += 6
    assert all(len(p) <= 1 for p in sim.pods_by_node().values())
