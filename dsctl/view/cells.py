"""What one cell of the grid shows: the state of one DaemonSet's pod on one node.

Pure: plain JSON dicts in, small frozen values out, no I/O. Every judgement that the
controller also makes is delegated to the controller's own domain functions, so the page
cannot disagree with what the controller does:

- eligibility (``dsctl.daemonset.eligibility``): whether the node should run the pod;
- revision (``dsctl.daemonset.template.is_pod_updated`` against the hash that
  ``dsctl.daemonset.history.plan_history`` picks as current): old or new;
- hold (``dsctl.daemonset.extensions.frozen_nodes``): which old pods the rolling update leaves
  alone because of ``partition``, the ``selector`` canary or ``paused``;
- the readiness gate (``dsctl.daemonset.readinessgate``): whether the node carries the
  controller's readiness taint (``ReadinessTaint.on``), and whether the gate waits for this
  DaemonSet's pod there (``plan_gate``'s ``holding``). Every daemon pod tolerates that taint, so
  the caller's eligibility rules carry its toleration and the taint never keeps a pod off.

A cell is four small axes (``State``, ``Revision``, ``Hold``, ``Gate``) packed into one integer
for the wire (``Cell.code``; the layout is ``CODEC``, sent to the page with every snapshot so
the page never hard-codes it). ADR 0131 records these choices, ADR 0127 the protocol, ADR 0215
the gate's and the lifecycle's part.

``Hold.UNHEALTHY`` (a node the rollout skips as unhealthy) is never guessed here: which nodes
``unhealthyNodePolicy: Skip`` leaves out is the controller's rule
(``dsctl.daemonset.nodelifecycle.skipped_on``), which the model applies, and ``holds`` takes its
answer as ``skipped_unhealthy``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from dsctl.daemonset.eligibility import Fit
from dsctl.daemonset.extensions import RolloutControls, frozen_nodes
from dsctl.daemonset.podsort import pod_sort_key
from dsctl.daemonset.readinessgate import (
    DEFAULT_READINESS_TAINT,
    GateSettings,
    GatingDaemonSet,
    ReadinessTaint,
    plan_gate,
)
from dsctl.daemonset.template import is_pod_updated
from dsctl.daemonset.update import find_updated_pods_on_node
from dsctl_api.objects import deletion_timestamp, status
from dsctl_api.pods import is_pod_ready

__all__ = [
    "CODEC",
    "READINESS_TAINT",
    "Cell",
    "Gate",
    "Hold",
    "Revision",
    "State",
    "cell_of",
    "gate_waits_for",
    "holds",
    "pick_pod",
    "pod_state",
]

Obj = Mapping[str, Any]

READINESS_TAINT = DEFAULT_READINESS_TAINT
"""The readiness-gate taint's default key (``--readiness-taint``)."""


class State(IntEnum):
    """The pod's state on the node (or why there is none)."""

    NOT_WANTED = 0
    """No pod and none should run: the node is not eligible."""
    MISSING = 1
    """No pod, but one should run."""
    PENDING = 2
    """Created, not running yet (unscheduled, or its containers are starting)."""
    NOT_READY = 3
    """Running, not Ready."""
    READY = 4
    """Running and Ready."""
    TERMINATING = 5
    """Only a pod being deleted is left."""
    FAILED = 6
    """The pod ended (Failed or Succeeded); the controller replaces it."""


class Revision(IntEnum):
    """The pod's revision against the DaemonSet's current one."""

    NONE = 0
    OLD = 1
    NEW = 2


class Hold(IntEnum):
    """Why the rolling update leaves this node's old pod alone."""

    NONE = 0
    PARTITION = 1
    SELECTOR = 2
    PAUSED = 3
    UNHEALTHY = 4
    """Skipped as unhealthy by the controller's planner (given to ``holds``, never guessed)."""


class Gate(IntEnum):
    """The node's readiness gate, as it concerns this DaemonSet."""

    NO = 0
    """The node does not carry the readiness taint."""
    YES = 1
    """The node carries the readiness taint; this DaemonSet's pod is not what it waits for."""
    WAITING = 2
    """The node carries the readiness taint and the gate waits for this DaemonSet's pod there (a
    gating DaemonSet that wants the node and has no available pod on it)."""


_FIELDS: tuple[tuple[str, type[IntEnum], int, int], ...] = (
    ("state", State, 0, 3),
    ("revision", Revision, 3, 2),
    ("hold", Hold, 5, 3),
)
_GATED_SHIFT = 8

CODEC: dict[str, Any] = {
    **{name: {"shift": shift, "bits": bits, "names": [m.name for m in enum]} for name, enum, shift, bits in _FIELDS},
    "gated": {"shift": _GATED_SHIFT, "bits": 2, "names": [m.name for m in Gate]},
}
"""How ``Cell.code`` packs the axes: each axis is ``(code >> shift) & (2**bits - 1)``, an index
into ``names``. Sent with every snapshot."""


@dataclass(frozen=True, slots=True)
class Cell:
    """One cell: the pod's state, its revision, what holds it back, and whether the node is gated."""

    state: State = State.NOT_WANTED
    revision: Revision = Revision.NONE
    hold: Hold = Hold.NONE
    gated: Gate = Gate.NO
    """The node's readiness gate (whatever this DaemonSet's pod does there)."""

    @property
    def code(self) -> int:
        """The cell as one small integer (see ``CODEC``)."""
        return int(self.state) | int(self.revision) << 3 | int(self.hold) << 5 | int(self.gated) << _GATED_SHIFT

    @classmethod
    def decode(cls, code: int) -> Cell:
        """The inverse of ``code``."""
        return cls(State(code & 7), Revision(code >> 3 & 3), Hold(code >> 5 & 7), Gate(code >> _GATED_SHIFT & 3))


def gate_waits_for(*, key: str, node: Obj, fit: Fit, pods: Sequence[Obj], min_ready: int, taint: ReadinessTaint,
                   now: float) -> bool:
    """Whether the readiness gate of ``node`` (which carries ``taint``) waits for this gating
    DaemonSet's pod: the controller's ``plan_gate`` over this DaemonSet alone names it as holding.

    ``fit`` must be judged with the taint's toleration, as the controller judges it.
    """
    gating = GatingDaemonSet(key=key, wants=fit.should_run, pods=tuple(pods), min_ready=min_ready)
    plan = plan_gate(node=node, gating=(gating,), memory=None, now=now, settings=GateSettings(taint=taint))
    return key in plan.holding


def pod_state(pod: Obj) -> State:
    """The state a pod that exists shows."""
    if deletion_timestamp(pod):
        return State.TERMINATING
    phase = status(pod).get("phase")
    if phase in ("Failed", "Succeeded"):
        return State.FAILED
    if phase == "Running":
        return State.READY if is_pod_ready(pod) else State.NOT_READY
    if phase in (None, "", "Pending"):
        return State.PENDING
    return State.NOT_READY  # "Unknown": the node stopped reporting


def pick_pod(pods: Sequence[Obj], hash: str, generation: int | None) -> Obj | None:
    """The pod a cell shows when a node holds several of the DaemonSet's pods.

    Live pods before terminating ones; among live pods one of the current revision first (the
    one a rollout is waiting for, beside a surging old pod), then the controller's own order
    (bound, oldest, name).
    """
    if not pods:
        return None
    if len(pods) == 1:
        return pods[0]
    return min(pods, key=lambda p: (bool(deletion_timestamp(p)), not is_pod_updated(p, hash, generation),
                                    pod_sort_key(p)))


def cell_of(
    *,
    fit: Fit,
    pods: Sequence[Obj],
    hash: str,
    generation: int | None,
    hold: Hold = Hold.NONE,
    gated: Gate = Gate.NO,
) -> Cell:
    """The cell of one DaemonSet on one node.

    ``fit`` is the node's eligibility for the DaemonSet (with the readiness taint's toleration,
    as the controller judges it); ``pods`` the DaemonSet's pods for this node;
    ``hash``/``generation`` the current revision; ``hold`` what holds this node back (``holds``),
    shown only on an old pod; ``gated`` the node's readiness gate (``gate_waits_for``).
    """
    pod = pick_pod(pods, hash, generation)
    if pod is None:
        state = State.MISSING if fit.should_run else State.NOT_WANTED
        return Cell(state, Revision.NONE, Hold.NONE, gated)
    revision = Revision.NEW if is_pod_updated(pod, hash, generation) else Revision.OLD
    return Cell(pod_state(pod), revision, hold if revision is Revision.OLD else Hold.NONE, gated)


def holds(
    *,
    controls: RolloutControls,
    rolling: bool,
    pods_by_node: Mapping[str, Sequence[Obj]],
    nodes_should_run: Iterable[str],
    hash: str,
    generation: int | None,
    node_labels: Mapping[str, Mapping[str, str]],
    skipped_unhealthy: Iterable[str] = (),
) -> dict[str, Hold]:
    """The nodes whose old pod the rolling update leaves alone, and why.

    The set is ``controls.frozen_nodes`` over the nodes as the rolling-update planner splits
    them (``find_updated_pods_on_node``); the reason is attributed after the fact: ``paused``
    holds every frozen node, a node the ``selector`` refuses is held by it, the rest by
    ``partition``. ``rolling`` False (OnDelete) holds nothing: nothing is updated anyway.
    ``skipped_unhealthy`` are the nodes the controller's planner skips as unhealthy.
    """
    result = {node: Hold.UNHEALTHY for node in skipped_unhealthy}
    if not rolling or not controls.holds_back:
        return result
    old_only: list[str] = []
    settled: list[str] = []
    for node in {*pods_by_node, *nodes_should_run}:
        found = find_updated_pods_on_node(pods_by_node.get(node, ()), hash, generation)
        (old_only if found.ok and found.old is not None and found.new is None else settled).append(node)
    if not old_only:
        return result
    frozen = frozen_nodes(controls, old_only=old_only, settled=settled, node_labels=node_labels)
    selector = controls.selector
    for node in frozen:
        if controls.paused:
            result.setdefault(node, Hold.PAUSED)
        elif selector is not None and not selector.matches(node_labels.get(node, {})):
            result.setdefault(node, Hold.SELECTOR)
        else:
            result.setdefault(node, Hold.PARTITION)
    return result

