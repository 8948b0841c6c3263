"""Rollout invariants, checked continuously while one DaemonSet updates; reused by chaos tests.

``RolloutObserver`` follows a DaemonSet through the API server the way a user's monitoring
would: list, then watch its pods, the nodes, the DaemonSet and its ControllerRevisions. A
watch, not polled snapshots, because the states that break a rollout are transient: the gap
between one pod's deletion and its replacement is a real state of the cluster and must count.
After every event the per-node model is re-evaluated against:

- **budget**: desired nodes lacking an available pod never exceed ``maxUnavailable`` (an int or
  a percentage of desired nodes, rounded up; 0 with 0 surge means 1). With surge this is the
  same thing as "available nodes never drop below desired - maxUnavailable". Not counted:
  nodes unavailable when observation began, nodes that became desired later (a node joined,
  a spec change) or unavailable through a spec change, each until it first becomes available
  (for ``EXEMPTION_SLACK`` with ``minReadySeconds``), and nodes the test marks as disturbed
  with ``exclude``. Checked only for the
  RollingUpdate strategy.
- **pods per node**: at most 2 non-terminating daemon pods on a node with surge, 1 without.

Pods are counted as the controller counts them: a pod with a ``deletionTimestamp`` is not
available, and availability means Ready for more than ``minReadySeconds`` by the Ready
condition's ``lastTransitionTime``. Availability only grows with time between events, so
evaluating right after each event sees every worst case; nodes waiting out minReadySeconds
are re-checked on later evaluations.

``wait_rolled_out`` checks the end state: every desired node has exactly one Ready pod whose
``controller-revision-hash`` is the newest revision's, that revision holds the current
template, and the DaemonSet's status says so. ``assert_clean`` fails the test with every
violation and its time.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from dsctl.kube.client import KubeClient
from dsctl.kube.errors import ApiError, ConnectionFailed, Gone, ServerError, TooManyRequests
from dsctl.kube.resources import CONTROLLER_REVISIONS, DAEMONSETS, NODES, PODS, Resource
from dsctl_api.intstr import scaled_value
from dsctl_api.nodeaffinity import required_node_affinity_matches
from dsctl_api.taints import find_untolerated
from dsctl_api.timefmt import parse_rfc3339
from tests.support.poll import eventually

__all__ = ["HASH_LABEL", "PodInfo", "RolloutObserver", "Violation", "update_template"]

HASH_LABEL = "controller-revision-hash"

# Every daemon pod tolerates these (see the architecture notes); eligibility must agree.
_AUTO_TOLERATIONS = [
    {"key": key, "operator": "Exists", "effect": effect}
    for key, effect in (
        ("node.kubernetes.io/not-ready", "NoExecute"), ("node.kubernetes.io/unreachable", "NoExecute"),
        ("node.kubernetes.io/disk-pressure", "NoSchedule"), ("node.kubernetes.io/memory-pressure", "NoSchedule"),
        ("node.kubernetes.io/pid-pressure", "NoSchedule"), ("node.kubernetes.io/unschedulable", "NoSchedule"),
        ("dsctl.io/agents-not-ready", "NoSchedule"),  # the readiness gate's taint, at its default key
    )
]
_MAX_VIOLATIONS = 50
EXEMPTION_SLACK = 1.0
"""Seconds an exempt node's pod must stay available before the node counts against the budget.

Availability is judged from the Ready condition's ``lastTransitionTime``, which has whole
seconds, at the moment an event is processed. The controller decides on its own cache a few
milliseconds earlier or later, so a pod crossing ``minReadySeconds`` can be unavailable to the
controller when it deletes it (upstream deletes every unavailable old pod, outside the
budget) and available to the observer an instant later. The chaos soak found exactly that
(seeds 50153 and 50154): a rollout started within 20 ms of the initial pods becoming
available. The slack applies only with ``minReadySeconds`` > 0, where availability changes
with no event to order the two views by; nodes that were never exempt are judged without it.
"""


BUDGET_GRACE = 2.0
"""Seconds a budget stays in force after the desired set or the strategy shrinks it.

The controller decides deletions on its cache; they land a request's latency later, or a
``Retry-After`` later under a 429 storm (1 s in the chaos schedules). A node going NotReady
or being deleted in between lowers ``maxUnavailable`` when it is a percentage (25 % of 13
nodes is 4, of 12 it is 3), which the controller could not have known. So a node becoming
unavailable is judged against the largest budget in force during the last ``BUDGET_GRACE``
seconds, and nodes already unavailable when the budget shrinks are not a new finding: only a
rise in their number is (soak seed 50073).
"""


@dataclass(frozen=True, slots=True)
class Violation:
    """One broken invariant: seconds since observation began, rule name and what was seen."""

    at: float
    rule: str
    detail: str

    def __str__(self) -> str:
        return f"[{self.at:7.3f}s] {self.rule}: {self.detail}"


@dataclass(frozen=True, slots=True)
class PodInfo:
    """What the observer keeps of one daemon pod."""

    name: str
    node: str
    hash: str
    terminating: bool
    ready: bool
    ready_since: float | None

    def available(self, min_ready: float, now: float) -> bool:
        """Counted as the controller counts it: not terminating, Ready for > minReadySeconds."""
        if self.terminating or not self.ready:
            return False
        if min_ready <= 0:
            return True
        return self.ready_since is not None and self.ready_since + min_ready < now

    @classmethod
    def of(cls, pod: Mapping[str, Any]) -> PodInfo:
        meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
        ready = next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"), None)
        since: float | None = None
        if ready is not None and ready.get("lastTransitionTime"):
            with contextlib.suppress(ValueError):
                since = parse_rfc3339(str(ready["lastTransitionTime"]))
        return cls(name=str(meta.get("name")), node=_target_node(spec),
                   hash=str((meta.get("labels") or {}).get(HASH_LABEL, "")),
                   terminating=bool(meta.get("deletionTimestamp")),
                   ready=ready is not None and ready.get("status") == "True", ready_since=since)


def _target_node(spec: Mapping[str, Any]) -> str:
    """The bound node, else the node the daemon pod's ``matchFields`` affinity pins it to."""
    if spec.get("nodeName"):
        return str(spec["nodeName"])
    terms = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
             .get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms") or []
    for term in terms:
        for req in term.get("matchFields") or []:
            if req.get("key") == "metadata.name" and req.get("values"):
                return str(req["values"][0])
    return ""


def _owned_by(obj: Mapping[str, Any], uid: str) -> bool:
    refs = (obj.get("metadata") or {}).get("ownerReferences") or []
    return any(r.get("controller") is True and r.get("uid") == uid for r in refs)


def _template_body(template: Any) -> Any:
    """A template as a revision stores it, minus the strategic-merge ``$patch`` directive."""
    return {k: v for k, v in template.items() if k != "$patch"} if isinstance(template, dict) else template


@dataclass
class _Guard:
    predicate: Callable[[RolloutObserver], bool]
    message: str
    broken: asyncio.Future[None]


@dataclass
class RolloutObserver:
    """``async with RolloutObserver(client, "x") as obs:`` watches DaemonSet ``x`` until exit.

    The DaemonSet must exist on entry; entry returns after the initial lists, so the baseline
    (nodes already unavailable) is the state at that moment. Read-only: it never writes.
    """

    client: KubeClient
    name: str
    namespace: str = "default"
    clock: Callable[[], float] = time.time
    ds: dict[str, Any] = field(default_factory=dict)
    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    pods: dict[str, PodInfo] = field(default_factory=dict)
    revisions: dict[str, dict[str, Any]] = field(default_factory=dict)
    violations: list[Violation] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    timeline: list[tuple[float, str, int, int]] = field(default_factory=list)
    """Samples on change: (monotonic time, newest revision hash, nodes with a live pod of it, desired nodes
    with an available pod)."""
    max_unavailable_seen: int = 0
    max_pods_on_node: int = 0
    relists: int = 0
    watch_restarts: int = 0
    events: int = 0

    def __post_init__(self) -> None:
        self._by_node: dict[str, set[str]] = {}
        self._desired: set[str] = set()
        self._unavailable: set[str] = set()
        self._updated: set[str] = set()
        self._pending: dict[str, float] = {}
        self._crowded: set[str] = set()
        self._exempt: set[str] = set()
        self._excluded: set[str] = set()
        self._over_budget = 0
        self._budget_drops: list[tuple[float, int]] = []
        self._guards: list[_Guard] = []
        self._tasks: list[asyncio.Task[None]] = []
        self.started = time.monotonic()
        self.budget = 0
        self.surge = 0
        self.current_hash = ""

    # -- lifecycle --------------------------------------------------------------------------

    async def __aenter__(self) -> RolloutObserver:
        ds = await self.client.get(DAEMONSETS, self.name, namespace=self.namespace)
        self.ds = ds
        labels = ((ds.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
        selector = ",".join(f"{k}={v}" for k, v in sorted(labels.items())) or None
        feeds: list[tuple[Resource, str | None, str | None, Callable[[str, dict[str, Any]], None],
                          Callable[[list[dict[str, Any]]], None]]] = [
            (DAEMONSETS, None, f"metadata.name={self.name}", self._on_ds, self._reset_ds),
            (CONTROLLER_REVISIONS, selector, None, self._on_revision, self._reset_revisions),
            (NODES, None, None, self._on_node, self._reset_nodes),
            (PODS, selector, None, self._on_pod, self._reset_pods),
        ]
        # Every list completes before any watch starts, so no event is judged before the
        # baseline exists; each watch resumes from its own list's resourceVersion.
        rvs = [await self._list(res, lsel, fsel, on_reset) for res, lsel, fsel, _, on_reset in feeds]
        for (res, label_sel, field_sel, on_event, on_reset), rv in zip(feeds, rvs, strict=True):
            follow = self._follow(res, label_sel, field_sel, on_event=on_event, on_reset=on_reset, rv=rv)
            self._tasks.append(asyncio.create_task(follow, name=f"observer-{res.plural}"))
        now = self.clock()
        self._exempt = set(self._unavailable)
        self._evaluate(now, "start")
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()
        for guard in self._guards:
            guard.broken.cancel()

    async def _list(self, res: Resource, label_sel: str | None, field_sel: str | None,
                    on_reset: Callable[[list[dict[str, Any]]], None]) -> str:
        namespace = self.namespace if res.namespaced else None
        listed = await self.client.list(res, namespace=namespace, label_selector=label_sel, field_selector=field_sel)
        on_reset(list(listed.get("items") or []))
        return str((listed.get("metadata") or {}).get("resourceVersion") or "")

    async def _follow(self, res: Resource, label_sel: str | None, field_sel: str | None, *,
                      on_event: Callable[[str, dict[str, Any]], None],
                      on_reset: Callable[[list[dict[str, Any]]], None], rv: str) -> None:
        """Watch from ``rv`` forever; re-list on 410 (a relist may hide transient states)."""
        namespace = self.namespace if res.namespaced else None
        while True:
            try:
                if not rv:
                    rv = await self._list(res, label_sel, field_sel, on_reset)
                    self.relists += 1
                    self._evaluate(self.clock(), f"relist {res.plural}")
                async for event in self.client.watch(res, namespace=namespace, resource_version=rv,
                                                     label_selector=label_sel, field_selector=field_sel):
                    obj = event["object"]
                    rv = str((obj.get("metadata") or {}).get("resourceVersion") or rv)
                    if event["type"] != "BOOKMARK":
                        self.events += 1
                        on_event(event["type"], obj)
                        self._evaluate(self.clock(), f"{event['type']} {res.plural}")
            except Gone:
                rv = ""
            except (ConnectionFailed, ServerError, TooManyRequests):
                # Dropped streams and injected 5xx/429 are weather, not findings (chaos tests
                # cause them on purpose); the watch resumes from the last resourceVersion.
                self.watch_restarts += 1
                await asyncio.sleep(0.05)  # backoff before re-watching, not a wait for a result
            except Exception as err:
                self.errors.append(f"watch {res.plural}: {err!r}")
                await asyncio.sleep(0.2)

    # -- feeds: fold events into the model --------------------------------------------------

    def _reset_ds(self, items: list[dict[str, Any]]) -> None:
        if items:
            self._on_ds("MODIFIED", items[0])

    def _on_ds(self, kind: str, obj: dict[str, Any]) -> None:
        if kind != "DELETED":
            before = set(self._unavailable)
            self.ds = obj
            self._refresh_all()
            # A spec change (a longer minReadySeconds, a new node selector) can make nodes
            # unavailable with no pod touched: that is the user's doing, not the controller's.
            self._exempt |= self._unavailable - before

    def _reset_revisions(self, items: list[dict[str, Any]]) -> None:
        self.revisions.clear()
        for obj in items:
            self._on_revision("ADDED", obj, refresh=False)
        self._refresh_all()

    def _on_revision(self, kind: str, obj: dict[str, Any], *, refresh: bool = True) -> None:
        uid = str((self.ds.get("metadata") or {}).get("uid"))
        name = str(obj["metadata"]["name"])
        if kind == "DELETED" or not _owned_by(obj, uid):
            self.revisions.pop(name, None)
        else:
            self.revisions[name] = obj
        newest = max(self.revisions.values(), key=lambda r: int(r.get("revision") or 0), default=None)
        new_hash = self.revision_hash(newest) if newest is not None else ""
        if new_hash != self.current_hash:
            self.current_hash = new_hash
            if refresh:
                self._refresh_all()

    def revision_hash(self, revision: Mapping[str, Any]) -> str:
        """The hash a revision stands for: its hash label, else its name after ``<ds>-``."""
        meta = revision.get("metadata") or {}
        label = (meta.get("labels") or {}).get(HASH_LABEL)
        return str(label) if label else str(meta.get("name", "")).removeprefix(f"{self.name}-")

    def _reset_nodes(self, items: list[dict[str, Any]]) -> None:
        self.nodes = {str(n["metadata"]["name"]): n for n in items}
        self._refresh_all()

    def _on_node(self, kind: str, obj: dict[str, Any]) -> None:
        name = str(obj["metadata"]["name"])
        if kind == "DELETED":
            self.nodes.pop(name, None)
        else:
            self.nodes[name] = obj
        was = name in self._desired
        if self._eligible(obj if kind != "DELETED" else None) != was:
            self._refresh_all()

    def _reset_pods(self, items: list[dict[str, Any]]) -> None:
        uid = str((self.ds.get("metadata") or {}).get("uid"))
        self.pods.clear()
        self._by_node.clear()
        for obj in items:
            if _owned_by(obj, uid):
                self._store_pod(PodInfo.of(obj))
        self._refresh_all()

    def _on_pod(self, kind: str, obj: dict[str, Any]) -> None:
        uid = str((self.ds.get("metadata") or {}).get("uid"))
        name = str(obj["metadata"]["name"])
        old = self.pods.pop(name, None)
        if old is not None:
            self._by_node.get(old.node, set()).discard(name)
        new = self._store_pod(PodInfo.of(obj)) if kind != "DELETED" and _owned_by(obj, uid) else None
        # One refresh per node after the whole change: a pod's update is never a removal plus an add.
        for node in {p.node for p in (old, new) if p is not None}:
            self._refresh_node(node)

    def _store_pod(self, info: PodInfo) -> PodInfo:
        self.pods[info.name] = info
        self._by_node.setdefault(info.node, set()).add(info.name)
        return info

    # -- the model --------------------------------------------------------------------------

    @property
    def spec(self) -> Mapping[str, Any]:
        return self.ds.get("spec") or {}

    @property
    def rolling(self) -> bool:
        """Whether the RollingUpdate strategy (the default) is in force."""
        return bool((self.spec.get("updateStrategy") or {}).get("type", "RollingUpdate") == "RollingUpdate")

    @property
    def min_ready(self) -> float:
        return float(self.spec.get("minReadySeconds") or 0)

    @property
    def desired(self) -> frozenset[str]:
        """Nodes where the daemon pod should run."""
        return frozenset(self._desired)

    def _eligible(self, node: Mapping[str, Any] | None) -> bool:
        if node is None:
            return False
        pod_spec = (self.spec.get("template") or {}).get("spec") or {}
        if not required_node_affinity_matches(pod_spec, node):
            return False
        tolerations = [*(pod_spec.get("tolerations") or []), *_AUTO_TOLERATIONS]
        taints = (node.get("spec") or {}).get("taints") or []
        return find_untolerated(taints, tolerations, ("NoSchedule", "NoExecute")) is None

    def _refresh_all(self) -> None:
        before = self._desired
        self._desired = {name for name, node in self.nodes.items() if self._eligible(node)}
        rolling = (self.spec.get("updateStrategy") or {}).get("rollingUpdate") or {}
        desired = len(self._desired)
        self.surge = scaled_value(rolling.get("maxSurge"), desired, round_up=True) if self.rolling else 0
        unavailable = rolling.get("maxUnavailable", 1)
        previous = self.budget
        self.budget = scaled_value(unavailable, desired, round_up=True) if self.rolling else desired
        if self.surge == 0 and self.budget == 0:
            self.budget = 1
        if self.budget < previous:
            self._budget_drops.append((self.clock(), previous))
        self._unavailable.clear()
        self._updated.clear()
        self._pending.clear()
        for node in {*self._desired, *self._by_node}:
            self._refresh_node(node)
        # A node that joins (or starts matching) mid-rollout has no pod yet through no fault of
        # the controller, which may already have spent its budget: count it once it is served.
        self._exempt |= (self._desired - before) & self._unavailable

    def _refresh_node(self, node: str) -> None:
        now = self.clock()
        live = [self.pods[p] for p in self._by_node.get(node, ()) if not self.pods[p].terminating]
        self._pending.pop(node, None)
        if any(p.available(self.min_ready, now) for p in live) or node not in self._desired:
            self._unavailable.discard(node)
        else:
            self._unavailable.add(node)
            waits = [p.ready_since + self.min_ready for p in live if p.ready and p.ready_since is not None]
            if waits:
                self._pending[node] = min(waits)
        if self.current_hash and any(p.hash == self.current_hash for p in live):
            self._updated.add(node)
        else:
            self._updated.discard(node)
        limit = 2 if self.surge > 0 else 1
        self.max_pods_on_node = max(self.max_pods_on_node, len(live))
        if len(live) > limit and node not in self._crowded:
            self._crowded.add(node)
            self._violate("pods-per-node", f"node {node} has {len(live)} non-terminating pods (limit {limit}): "
                          + ", ".join(sorted(f"{p.name}@{p.hash}" for p in live)))
        elif len(live) <= limit:
            self._crowded.discard(node)

    def _served(self, node: str, now: float) -> bool:
        """Whether ``node`` has an available pod, for ``EXEMPTION_SLACK`` when availability is
        a matter of time (``minReadySeconds`` > 0; see there)."""
        if node in self._unavailable:
            return False
        if self.min_ready <= 0:
            return True
        return any(self.pods[p].available(self.min_ready + EXEMPTION_SLACK, now)
                   for p in self._by_node.get(node, ()) if not self.pods[p].terminating)

    def _evaluate(self, now: float, cause: str) -> None:
        for node, when in list(self._pending.items()):
            if when < now:
                self._refresh_node(node)
        self._exempt -= {node for node in self._exempt & self._desired if self._served(node, now)}
        counted = self._unavailable - self._exempt - self._excluded
        self.max_unavailable_seen = max(self.max_unavailable_seen, len(counted))
        if self.rolling and len(counted) > self.budget:
            if len(counted) > max(self._over_budget, self._recent_budget(now)):
                self._violate("budget", f"{len(counted)} desired nodes without an available pod > maxUnavailable "
                              f"{self.budget} after {cause}: {sorted(counted)}")
            self._over_budget = len(counted)
        else:
            self._over_budget = 0
        available = len(self._desired - self._unavailable)
        sample = (time.monotonic(), self.current_hash, len(self._updated), available)
        if not self.timeline or self.timeline[-1][1:] != sample[1:]:
            self.timeline.append(sample)
        for guard in list(self._guards):
            if not guard.broken.done() and not guard.predicate(self):
                guard.broken.set_exception(AssertionError(f"{guard.message} (broken after {cause})"))

    def _recent_budget(self, now: float) -> int:
        """The largest budget in force during the last ``BUDGET_GRACE`` seconds."""
        self._budget_drops = [(when, budget) for when, budget in self._budget_drops if now - when <= BUDGET_GRACE]
        return max([self.budget, *(budget for _, budget in self._budget_drops)])

    def _violate(self, rule: str, detail: str) -> None:
        if len(self.violations) < _MAX_VIOLATIONS:
            self.violations.append(Violation(round(time.monotonic() - self.started, 3), rule, detail))

    # -- what tests use ---------------------------------------------------------------------

    def exclude(self, *nodes: str) -> None:
        """Stop counting these nodes against the budget: the test disturbs them on purpose."""
        self._excluded.update(nodes)

    def pods_on(self, node: str) -> list[PodInfo]:
        """The daemon pods the observer currently sees on ``node``, terminating ones included."""
        return sorted((self.pods[p] for p in self._by_node.get(node, ())), key=lambda p: p.name)

    def nodes_with_hash(self, template_hash: str) -> set[str]:
        """Nodes that have a non-terminating pod labelled with ``template_hash``."""
        return {p.node for p in self.pods.values() if p.hash == template_hash and not p.terminating}

    def unavailable_nodes(self) -> set[str]:
        """Desired nodes lacking an available pod right now (exemptions not applied)."""
        self._evaluate(self.clock(), "query")
        return set(self._unavailable)

    def assert_clean(self) -> None:
        """Fail listing every violation and watch error seen so far."""
        problems = [str(v) for v in self.violations] + [f"observer error: {e}" for e in self.errors]
        assert not problems, f"rollout invariants of ds/{self.name} broken:\n  " + "\n  ".join(problems)

    async def holds(self, predicate: Callable[[RolloutObserver], bool], *, seconds: float, message: str) -> None:
        """Observe for ``seconds``: fail as soon as ``predicate`` is false after any event."""
        guard = _Guard(predicate, message, asyncio.get_running_loop().create_future())
        self._guards.append(guard)
        try:
            self._evaluate(self.clock(), "holds")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(guard.broken), timeout=seconds)
            self._evaluate(self.clock(), "holds end")
            if guard.broken.done():
                guard.broken.result()
        finally:
            self._guards.remove(guard)

    async def wait_for(self, predicate: Callable[[RolloutObserver], bool], *, timeout: float, message: str) -> None:
        """Poll the model (kept current by the watches) until ``predicate`` holds."""
        async def probe() -> bool:
            self._evaluate(self.clock(), "poll")
            return predicate(self)
        await eventually(probe, timeout=timeout, message=message)

    async def wait_rolled_out(self, timeout: float) -> dict[str, Any]:
        """Wait until the rollout is complete (see the module docstring); returns the DS status."""
        progress = _Progress()

        async def probe() -> _Progress:
            try:
                progress.problems = await self._rollout_problems()
            except ApiError as err:  # injected faults must not end the wait early
                progress.problems = [f"API error while checking: {err!r}"]
            return progress

        await eventually(probe, timeout=timeout, interval=0.2, message=f"ds/{self.name} rolled out")
        return dict(self.ds.get("status") or {})

    async def _rollout_problems(self) -> list[str]:
        live = await self.client.get(DAEMONSETS, self.name, namespace=self.namespace)
        meta, status = live.get("metadata") or {}, live.get("status") or {}
        problems: list[str] = []
        if int(status.get("observedGeneration") or 0) < int(meta.get("generation") or 0):
            problems.append(f"observedGeneration {status.get('observedGeneration')} < {meta.get('generation')}")
        newest = await self._newest_revision(str(meta.get("uid")))
        if newest is None:
            return [*problems, "no ControllerRevision"]
        template = _template_body(((newest.get("data") or {}).get("spec") or {}).get("template"))
        if template != (live.get("spec") or {}).get("template"):
            problems.append(f"newest revision {newest['metadata']['name']} does not hold the current template")
        want = self.revision_hash(newest)
        self._evaluate(self.clock(), "rollout check")
        for node in sorted(self._desired):
            pods = self.pods_on(node)
            if len(pods) != 1 or pods[0].hash != want or not pods[0].ready or pods[0].terminating:
                problems.append(f"{node}: " + (", ".join(f"{p.name}@{p.hash}{'' if p.ready else ' unready'}"
                                                         f"{' terminating' if p.terminating else ''}"
                                                         for p in pods) or "no pod"))
        strays = sorted(p.name for p in self.pods.values() if p.node not in self._desired)
        if strays:
            problems.append(f"pods on undesired nodes: {strays}")
        desired = len(self._desired)
        for key in ("desiredNumberScheduled", "currentNumberScheduled", "updatedNumberScheduled",
                    "numberReady", "numberAvailable"):
            if status.get(key, 0) != desired:
                problems.append(f"status.{key}={status.get(key)} != {desired}")
        if status.get("numberUnavailable", 0) or status.get("numberMisscheduled", 0):
            problems.append(f"status unavailable/misscheduled: {status.get('numberUnavailable')}/"
                            f"{status.get('numberMisscheduled')}")
        return problems[:20]

    async def _newest_revision(self, uid: str) -> dict[str, Any] | None:
        labels = (self.spec.get("selector") or {}).get("matchLabels") or {}
        listed = await self.client.list(CONTROLLER_REVISIONS, namespace=self.namespace,
                                        label_selector=",".join(f"{k}={v}" for k, v in sorted(labels.items())))
        owned = [r for r in listed.get("items") or [] if _owned_by(r, uid)]
        return max(owned, key=lambda r: int(r.get("revision") or 0), default=None)


@dataclass
class _Progress:
    """Truthy once nothing is left to do; its repr lists what is, for the timeout message."""

    problems: list[str] = field(default_factory=lambda: ["not checked yet"])

    def __bool__(self) -> bool:
        return not self.problems

    def __repr__(self) -> str:
        return "; ".join(self.problems)



async def update_template(client: KubeClient, name: str, *, image: str, annotations: dict[str, str] | None = None,
                          namespace: str = "default") -> dict[str, Any]:
    """Start a rollout: set the ``agent`` container's image (and template annotations) by strategic merge."""
    template: dict[str, Any] = {"spec": {"containers": [{"name": "agent", "image": image}]}}
    if annotations:
        template["metadata"] = {"annotations": annotations}
    return await client.patch(DAEMONSETS, name, {"spec": {"template": template}}, namespace=namespace,
                              patch_type="strategic")
