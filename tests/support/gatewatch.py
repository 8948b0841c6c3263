"""A watch on nodes and pods that judges the node readiness gate, event by event.

``GateWatch`` lists, then watches, every node and every pod, the way a user's monitoring would.
The simulator stamps every write with one global, increasing resourceVersion, so events of the
two streams can be put in one order by their resourceVersions, and the state of every gating pod
*at the moment a taint was removed* can be reconstructed exactly, whichever stream ran ahead.

It checks the invariant **a readiness taint is never removed while a gating pod on that node is
not Ready**: at the removal's resourceVersion, every gating DaemonSet with a live (not
terminating) pod on the node has one of them Ready. A removal is judged once the pod stream has
passed its resourceVersion (an event or a bookmark: run the simulator with short bookmarks).

It also keeps, per node, when the removal and each gating pod's first Ready arrived (monotonic
seconds of this process, so both carry the same watch delay), for the latency from the last
gating pod Ready to the removal; and, per pod, the resourceVersion at which it was bound.
Read-only: it never writes.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from dsctl.kube.client import KubeClient
from dsctl.kube.errors import ApiError, Gone
from dsctl.kube.resources import NODES, PODS, Resource

__all__ = ["GateWatch", "PodState", "Removal"]

Obj = Mapping[str, Any]


def _rv(obj: Obj) -> int:
    return int((obj.get("metadata") or {}).get("resourceVersion") or 0)


def _target(pod: Obj) -> str:
    spec = pod.get("spec") or {}
    if spec.get("nodeName"):
        return str(spec["nodeName"])
    terms = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
             .get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms") or []
    for term in terms:
        for req in term.get("matchFields") or []:
            if req.get("key") == "metadata.name" and req.get("values"):
                return str(req["values"][0])
    return ""


def _ready(pod: Obj) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])


@dataclass(frozen=True, slots=True)
class PodState:
    """One version of a gating pod, as the watch saw it."""

    rv: int
    owner: str
    node: str
    live: bool
    ready: bool


@dataclass(frozen=True, slots=True)
class Removal:
    """A readiness taint that went: the node, the resourceVersion and when the event arrived."""

    node: str
    rv: int
    at: float


@dataclass
class GateWatch:
    """``async with GateWatch(client, taint_key, gating=...)``; ``gating(pod)`` names the pod's gating
    DaemonSet (``namespace/name``) or returns None for any other pod."""

    client: KubeClient
    taint_key: str
    gating: Callable[[Obj], str | None]
    namespace: str | None = None
    pod_selector: str | None = None
    """A label selector for the pods watched (the gating ones and any a test follows), for large clusters."""
    violations: list[str] = field(default_factory=list)
    removals: list[Removal] = field(default_factory=list)
    added: list[Removal] = field(default_factory=list)
    """Taints that came back (continuous mode): same shape as a removal."""
    errors: list[str] = field(default_factory=list)
    gaps: int = 0
    """Relists after a 410 (events in between are not ordered, so not judged)."""

    def __post_init__(self) -> None:
        self.tainted: dict[str, bool] = {}
        self.history: dict[str, list[PodState]] = {}
        self.first_ready: dict[tuple[str, str], float] = {}
        """(node, gating DaemonSet) -> when its first Ready pod there was seen."""
        self.bound_rv: dict[str, int] = {}
        """pod name -> resourceVersion at which the watch first saw it bound."""
        self.pods_rv = 0
        self.nodes_rv = 0
        self._pending: list[Removal] = []
        self._tasks: list[asyncio.Task[None]] = []
        self._judged = 0

    async def __aenter__(self) -> GateWatch:
        nodes = await self.client.list(NODES)
        pods = await self.client.list(PODS, namespace=self.namespace, label_selector=self.pod_selector)
        for node in nodes["items"]:
            self._on_node("ADDED", node, initial=True)
        for pod in pods["items"]:
            self._on_pod("ADDED", pod)
        self.nodes_rv = int(nodes["metadata"]["resourceVersion"])
        self.pods_rv = int(pods["metadata"]["resourceVersion"])
        self._tasks = [
            asyncio.create_task(self._follow(NODES, None, None, str(self.nodes_rv), self._on_node_event),
                                name="gate-nodes"),
            asyncio.create_task(self._follow(PODS, self.namespace, self.pod_selector, str(self.pods_rv),
                                             self._on_pod_event), name="gate-pods"),
        ]
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    # -- streams ------------------------------------------------------------------------------

    async def _follow(self, res: Resource, namespace: str | None, selector: str | None, rv: str,
                      on_event: Callable[[str, Obj], None]) -> None:
        while True:
            try:
                if not rv:
                    rv = await self._relist(res, namespace, selector)
                watch = self.client.watch(res, namespace=namespace, resource_version=rv, label_selector=selector)
                async with contextlib.aclosing(watch) as events:
                    async for event in events:
                        obj = event["object"]
                        rv = str((obj.get("metadata") or {}).get("resourceVersion") or rv)
                        on_event(str(event["type"]), obj)
            except Gone:
                rv = ""
            except ApiError:
                await asyncio.sleep(0.05)  # injected faults and dropped streams: resume from the last version
            except Exception as err:
                self.errors.append(f"watch {res.plural}: {err!r}")
                await asyncio.sleep(0.2)

    async def _relist(self, res: Resource, namespace: str | None, selector: str | None) -> str:
        """After a 410: list again. What happened in the gap cannot be ordered, so removals not yet
        judged, and taint changes found by the list, are counted in ``gaps``, never judged."""
        listed = await self.client.list(res, namespace=namespace, label_selector=selector)
        rv = int(listed["metadata"]["resourceVersion"])
        self.gaps += 1
        if res is NODES:
            for node in listed["items"]:
                self._on_node("ADDED", node, initial=True)
            self.nodes_rv = max(self.nodes_rv, rv)
        else:
            seen = set()
            for pod in listed["items"]:
                seen.add(f"{pod['metadata'].get('namespace')}/{pod['metadata']['name']}")
                self._on_pod("MODIFIED", {**pod, "metadata": {**pod["metadata"], "resourceVersion": str(rv)}})
            for name, states in self.history.items():
                if name not in seen and states[-1].live:
                    states.append(PodState(rv=rv, owner=states[-1].owner, node=states[-1].node, live=False,
                                           ready=False))
            self.gaps += len(self._pending)
            self._pending = [r for r in self._pending if r.rv > rv]
            self.pods_rv = max(self.pods_rv, rv)
        return str(rv)

    def _on_node_event(self, kind: str, node: Obj) -> None:
        self.nodes_rv = max(self.nodes_rv, _rv(node))
        if kind != "BOOKMARK":
            self._on_node(kind, node)

    def _on_pod_event(self, kind: str, pod: Obj) -> None:
        if kind != "BOOKMARK":
            self._on_pod(kind, pod)
        self.pods_rv = max(self.pods_rv, _rv(pod))
        self._judge()

    # -- the model ----------------------------------------------------------------------------

    def carries(self, node: Obj) -> bool:
        """Whether ``node`` carries the readiness taint."""
        return any(t.get("key") == self.taint_key for t in (node.get("spec") or {}).get("taints") or [])

    def _on_node(self, kind: str, node: Obj, *, initial: bool = False) -> None:
        name = str(node["metadata"]["name"])
        now = time.monotonic()
        if kind == "DELETED":
            self.tainted.pop(name, None)
            return
        before = self.tainted.get(name)
        after = self.carries(node)
        self.tainted[name] = after
        if initial or before is None or before == after:
            return
        change = Removal(name, _rv(node), now)
        if before and not after:
            self.removals.append(change)
            self._pending.append(change)
            self._judge()
        else:
            self.added.append(change)

    def _on_pod(self, kind: str, pod: Obj) -> None:
        meta = pod["metadata"]
        name = f"{meta.get('namespace')}/{meta['name']}"
        node = _target(pod)
        if (pod.get("spec") or {}).get("nodeName") and name not in self.bound_rv:
            self.bound_rv[name] = _rv(pod)
        owner = self.gating(pod)
        if owner is None:
            return
        state = PodState(rv=_rv(pod), owner=owner, node=node,
                         live=kind != "DELETED" and not meta.get("deletionTimestamp"), ready=_ready(pod))
        self.history.setdefault(name, []).append(state)
        if state.live and state.ready:
            self.first_ready.setdefault((node, owner), time.monotonic())

    # -- the invariant ------------------------------------------------------------------------

    def _judge(self) -> None:
        due = [r for r in self._pending if r.rv <= self.pods_rv]
        if not due:
            return
        self._pending = [r for r in self._pending if r.rv > self.pods_rv]
        for removal in due:
            self._judged += 1
            unready = self.unready_at(removal.node, removal.rv)
            if unready:
                self.violations.append(f"{removal.node}: readiness taint removed at rv {removal.rv} while gating "
                                       f"pods were not Ready: {', '.join(unready)}")

    def unready_at(self, node: str, rv: int) -> list[str]:
        """Gating DaemonSets with live pods on ``node`` at ``rv``, none of them Ready."""
        live: dict[str, bool] = {}
        for states in self.history.values():
            state = next((s for s in reversed(states) if s.rv <= rv), None)
            if state is None or not state.live or state.node != node:
                continue
            live[state.owner] = live.get(state.owner, False) or state.ready
        return sorted(owner for owner, ready in live.items() if not ready)

    def caught_up(self, rv: int) -> bool:
        """Whether both streams have passed ``rv`` and every removal up to there is judged."""
        return self.nodes_rv >= rv and self.pods_rv >= rv and not self._pending

    @property
    def judged(self) -> int:
        """Removals judged so far."""
        return self._judged

    @property
    def pending(self) -> int:
        """Removals not judged yet (the pod stream has not passed them)."""
        return len(self._pending)

    def removal_of(self, node: str) -> Removal | None:
        """The first removal seen on ``node``."""
        return next((r for r in self.removals if r.node == node), None)

    def last_ready(self, node: str, owners: set[str]) -> float | None:
        """When the last of ``owners``' first Ready pods on ``node`` was seen; None until all were."""
        seen = [self.first_ready.get((node, owner)) for owner in owners]
        return None if any(t is None for t in seen) else max(t for t in seen if t is not None)
