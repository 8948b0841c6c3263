"""The node readiness gate: when a node loses its readiness taint, and when it gets it back.

A node registers with the readiness taint (``--readiness-taint``, ``dsctl.io/agents-not-ready``
with effect ``NoSchedule`` by default), so the scheduler keeps ordinary pods off it. Every daemon
pod dsctl creates tolerates that taint, so the agents start at once and never wait for each
other. ``plan_gate`` decides, for one node, from what the caches hold:

- **Removal.** The taint goes once every *gating* DaemonSet (``spec.nodeReadinessGate``) that
  should run a pod on the node has an available pod there: Ready, for longer than its
  ``minReadySeconds``, and not being deleted. A gating DaemonSet that does not want the node (its
  ``nodeSelector``, affinity or taints rule it out; the readiness taint itself is tolerated) does
  not hold it, and a node that no gating DaemonSet wants loses the taint at once.
- **Timeout.** A node still tainted ``--readiness-timeout`` after its gate began gets one Warning
  event naming the DaemonSets that hold it; the taint stays (fail safe).
- **Continuous mode.** With ``--readiness-taint-mode continuous`` the taint is added back to a
  node where a gating DaemonSet's pod has been not Ready for ``--readiness-retaint-seconds``; a
  missing pod is no reason to taint (a new gating DaemonSet would otherwise taint every node).
  In ``bootstrap`` mode the taint is never added.

**When the gate began** (for the timeout and ``dsctl_node_readiness_gate_duration_seconds``): the
time dsctl added the taint, when it did; otherwise, for a node that carried the taint when this
process first saw it, the node's ``creationTimestamp`` (a node registers with its startup taint,
and the caches see it a moment later), unless the node is older than the timeout, which means the
taint came later or this process restarted long after the join: then the first sighting (ADR 0172).

The changes themselves are JSON patches guarded by a ``test`` of the taint list as the cache
holds it (``removal_patch``, ``addition_patch``), so a concurrent change to the node's taints is
never overwritten: kube-apiserver answers a failed test with 422 and the gate plans again from a
fresher cache (ADR 0170). The taint comes from the node's registration; dsctl never adds it to a
node that joins, which would race the scheduler.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dsctl.daemonset.podplan import Event
from dsctl.daemonset.reasons import READINESS_GATE_TIMEOUT, READINESS_TAINT_ADDED
from dsctl_api.objects import as_list, as_map, deletion_timestamp, is_map, meta, resource_version, spec, text
from dsctl_api.pods import is_pod_available, pod_ready_condition
from dsctl_api.timefmt import parse_rfc3339

__all__ = [
    "BOOTSTRAP",
    "CONTINUOUS",
    "DEFAULT_READINESS_TAINT",
    "DEFAULT_TAINT",
    "MODES",
    "GateMemory",
    "GatePlan",
    "GateSettings",
    "GatingDaemonSet",
    "ReadinessTaint",
    "addition_patch",
    "parse_readiness_taint",
    "plan_gate",
    "removal_patch",
]

Obj = Mapping[str, Any]

BOOTSTRAP = "bootstrap"
CONTINUOUS = "continuous"
MODES = (BOOTSTRAP, CONTINUOUS)
DEFAULT_READINESS_TAINT = "dsctl.io/agents-not-ready"
_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
_PREFIX = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_KEY = re.compile(rf"({_PREFIX}/)?{_NAME}", re.ASCII)
_NAMED = 10
"""At most this many DaemonSets are named in an event's message."""


@dataclass(frozen=True, slots=True)
class ReadinessTaint:
    """The taint the gate removes: its key and effect (any value)."""

    key: str
    effect: str = "NoSchedule"

    @classmethod
    def parse(cls, text: str) -> ReadinessTaint:
        """``key`` or ``key:effect``, as ``--readiness-taint`` takes it; ``ValueError`` names the problem."""
        key, _, effect = text.partition(":")
        effect = effect or "NoSchedule"
        if effect not in _EFFECTS:
            raise ValueError(f"effect must be one of {', '.join(_EFFECTS)}, not {effect!r}")
        if "=" in key:
            raise ValueError(f"give the key and effect only (key[:effect]); the value is not matched: {text!r}")
        prefix = key.partition("/")[0] if "/" in key else ""
        if not _KEY.fullmatch(key) or len(prefix) > 253:
            raise ValueError(f"{key!r} is not a valid taint key (an optional DNS prefix and '/', then a name of "
                             "at most 63 letters, digits, '-', '_' or '.')")
        return cls(key, effect)

    def matches(self, taint: Any) -> bool:
        """Whether ``taint`` (an entry of ``spec.taints``) is this one."""
        return is_map(taint) and taint.get("key") == self.key and taint.get("effect") == self.effect

    def on(self, node: Obj) -> bool:
        """Whether ``node`` carries this taint."""
        return any(self.matches(t) for t in as_list(spec(node).get("taints")))

    def toleration(self) -> dict[str, str]:
        """The toleration every daemon pod gets: ``operator: Exists`` on the key and effect."""
        return {"key": self.key, "operator": "Exists", "effect": self.effect}

    def body(self) -> dict[str, str]:
        """The taint as the gate adds it back (continuous mode)."""
        return {"key": self.key, "effect": self.effect}

    def __str__(self) -> str:
        return f"{self.key}:{self.effect}"


DEFAULT_TAINT = ReadinessTaint(DEFAULT_READINESS_TAINT)
"""``--readiness-taint``'s default, parsed."""


def parse_readiness_taint(text: str) -> ReadinessTaint | None:
    """``--readiness-taint`` as ``dsctl run``, ``dsctl plan`` and ``dsctl view`` all read it:
    ``key[:effect]``, or empty for no gate (then no pod gets the extra toleration); ``ValueError``
    names the problem."""
    return ReadinessTaint.parse(text) if text else None


@dataclass(frozen=True, slots=True)
class GateSettings:
    """The controller-wide settings of the gate (the ``--readiness-*`` flags)."""

    taint: ReadinessTaint
    mode: str = BOOTSTRAP
    timeout: float = 600.0
    """Seconds a node may stay gated before the Warning event."""
    retaint_seconds: float = 30.0
    """Continuous mode: seconds a gating pod may be not Ready before the taint comes back."""


@dataclass(frozen=True, slots=True)
class GatingDaemonSet:
    """One gating DaemonSet, as it concerns one node."""

    key: str
    """``namespace/name``, for messages."""
    wants: bool
    """Whether it should run a pod on the node (its ``should_run``; the readiness taint is tolerated)."""
    pods: tuple[Obj, ...]
    """Its pods that target the node, in any state."""
    min_ready: int = 0
    """Its ``minReadySeconds``."""


@dataclass(frozen=True, slots=True)
class GateMemory:
    """What the gate keeps about a tainted node between syncs (``RuntimeState`` owns it)."""

    since: float
    """When the node's gate began (wall-clock seconds)."""
    timed_out: bool = False
    """The timeout passed and its event was recorded."""


@dataclass(frozen=True, slots=True)
class GatePlan:
    """What to do about one node. ``remove`` and ``add`` are exclusive."""

    remove: bool = False
    add: bool = False
    events: tuple[Event, ...] = ()
    """Events about the node."""
    holding: tuple[str, ...] = ()
    """The gating DaemonSets that keep the node tainted (or, with ``add``, that taint it)."""
    requeue_after: float | None = None
    """Look again this many seconds from now, even with no event (minReadySeconds, timeout, retaint)."""
    memory: GateMemory | None = None
    """What to keep about the node once the plan is carried out; None: nothing."""
    gated_seconds: float | None = None
    """With ``remove``: how long the node was gated."""

    @property
    def writes(self) -> bool:
        """Whether the plan changes the node."""
        return self.remove or self.add


def _seconds(value: Any) -> float | None:
    try:
        return parse_rfc3339(text(value))
    except ValueError:
        return None


def _live(pods: Iterable[Obj]) -> list[Obj]:
    return [p for p in pods if is_map(p) and not deletion_timestamp(p)]


def _gate_start(node: Obj, *, now: float, timeout: float) -> float:
    """When the gate of a node first seen tainted began: its creation, unless that is older than
    the timeout (the taint came later, or this process started long after): then ``now``."""
    created = _seconds(meta(node).get("creationTimestamp"))
    if created is None or now - created > timeout:
        return now
    return min(created, now)


def _availability(gating: GatingDaemonSet, now: float) -> tuple[bool, float | None]:
    """Whether the DaemonSet has an available pod on the node; if not, when a Ready pod of it
    becomes available (seconds from now), if one will."""
    soonest: float | None = None
    for pod in _live(gating.pods):
        if is_pod_available(pod, gating.min_ready, now):
            return True, None
        condition = pod_ready_condition(pod)
        if condition is not None and condition.get("status") == "True":
            since = _seconds(condition.get("lastTransitionTime"))
            if since is not None:
                wake = max(0.0, since + gating.min_ready - now) + 0.05
                soonest = wake if soonest is None else min(soonest, wake)
    return False, soonest


def _unready_since(gating: GatingDaemonSet) -> float | None:
    """Since when the DaemonSet's pods on the node have all been not Ready (the earliest of its
    live pods' Ready transitions, or creations); None while one is Ready or none is there."""
    since: float | None = None
    for pod in _live(gating.pods):
        condition = pod_ready_condition(pod)
        if condition is not None and condition.get("status") == "True":
            return None
        at = _seconds(condition.get("lastTransitionTime")) if condition is not None else None
        if at is None:
            at = _seconds(meta(pod).get("creationTimestamp"))
        if at is not None:
            since = at if since is None else min(since, at)
    return since


def _named(keys: Sequence[str]) -> str:
    shown = ", ".join(keys[:_NAMED])
    return shown + (f" and {len(keys) - _NAMED} more" if len(keys) > _NAMED else "")


def _soonest(*values: float | None) -> float | None:
    present = [v for v in values if v is not None]
    return min(present) if present else None


def plan_gate(
    *, node: Obj, gating: Sequence[GatingDaemonSet], memory: GateMemory | None, now: float, settings: GateSettings,
) -> GatePlan:
    """Decide the gate of ``node`` at ``now`` (wall-clock seconds); see the module docstring."""
    wanting = sorted((g for g in gating if g.wants), key=lambda g: g.key)
    if settings.taint.on(node):
        return _tainted(node, wanting, memory, now=now, settings=settings)
    if settings.mode != CONTINUOUS:
        return GatePlan()
    return _untainted(wanting, now=now, settings=settings)


def _tainted(node: Obj, wanting: Sequence[GatingDaemonSet], memory: GateMemory | None, *, now: float,
             settings: GateSettings) -> GatePlan:
    since = memory.since if memory is not None else _gate_start(node, now=now, timeout=settings.timeout)
    holding: list[str] = []
    wakes: list[float | None] = []
    for gate in wanting:
        available, wake = _availability(gate, now)
        if not available:
            holding.append(gate.key)
            wakes.append(wake)
    if not holding:
        return GatePlan(remove=True, gated_seconds=max(0.0, now - since))
    elapsed = now - since
    timed_out = elapsed >= settings.timeout
    events: tuple[Event, ...] = ()
    if timed_out and not (memory is not None and memory.timed_out):
        events = (Event("Warning", READINESS_GATE_TIMEOUT,
                        f"Node still carries {settings.taint} after {_duration(elapsed)} (--readiness-timeout "
                        f"{_duration(settings.timeout)}); not ready: {_named(holding)}. The taint stays."),)
    if not timed_out:
        wakes.append(settings.timeout - elapsed)
    return GatePlan(events=events, holding=tuple(holding), requeue_after=_soonest(*wakes),
                    memory=GateMemory(since=since, timed_out=timed_out))


def _untainted(wanting: Sequence[GatingDaemonSet], *, now: float, settings: GateSettings) -> GatePlan:
    unready: list[str] = []
    wakes: list[float | None] = []
    for gate in wanting:
        since = _unready_since(gate)
        if since is None:
            continue
        left = since + settings.retaint_seconds - now
        if left <= 0:
            unready.append(gate.key)
        else:
            wakes.append(left + 0.05)
    if not unready:
        return GatePlan(requeue_after=_soonest(*wakes))
    message = (f"Added {settings.taint} back: not Ready for over {_duration(settings.retaint_seconds)} "
               f"(--readiness-retaint-seconds): {_named(unready)}")
    return GatePlan(add=True, events=(Event("Warning", READINESS_TAINT_ADDED, message),), holding=tuple(unready),
                    memory=GateMemory(since=now))


def _duration(seconds: float) -> str:
    """``1h2m3s``, ``10m0s``, ``45s``: Go's way of printing a duration, to whole seconds."""
    whole = max(0, round(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m{secs}s"
    if minutes:
        return f"{minutes}m{secs}s"
    return f"{secs}s"


# -- the writes -------------------------------------------------------------------------------


def _taints(node: Obj) -> list[Any]:
    return list(as_list(as_map(node.get("spec")).get("taints")))


def removal_patch(node: Obj, taint: ReadinessTaint) -> list[dict[str, Any]]:
    """A JSON patch that removes ``taint`` from ``node`` only if its taint list is still what
    the cache shows (a ``test`` of the whole list, then the change)."""
    taints = _taints(node)
    kept = [t for t in taints if not taint.matches(t)]
    change: dict[str, Any] = ({"op": "replace", "path": "/spec/taints", "value": kept} if kept
                              else {"op": "remove", "path": "/spec/taints"})
    return [{"op": "test", "path": "/spec/taints", "value": taints}, change]


def addition_patch(node: Obj, taint: ReadinessTaint) -> list[dict[str, Any]]:
    """A JSON patch that adds ``taint`` to ``node`` only if its taint list is still what the cache
    shows. A node without taints has no list to test; its ``resourceVersion`` is tested instead."""
    taints = _taints(node)
    if taints:
        return [{"op": "test", "path": "/spec/taints", "value": taints},
                {"op": "replace", "path": "/spec/taints", "value": [*taints, taint.body()]}]
    return [{"op": "test", "path": "/metadata/resourceVersion", "value": resource_version(node)},
            {"op": "add", "path": "/spec/taints", "value": [taint.body()]}]
