"""dsctl's fields beyond apps/v1 (the extension fields): one table of them, and their readers.

``EXTENSION_FIELDS`` declares every one: its CRD field, its apps/v1 annotation, the older
annotation names still read, its value type, its default and what it does. The reference page
is generated from the table, and the readers below look each field up through it.

Every field is read in both modes. A ``dsctl.io/v1`` DaemonSet carries it as a field;
an apps/v1 DaemonSet as the annotation, because kube-apiserver drops or refuses unknown fields
in apps/v1, while annotations survive ``kubectl apply`` and need no schema. Annotations are
``dsctl.io/`` and the field's name in kebab-case; an older camelCase name is still read, and
every sync that finds one records a ``DeprecatedAnnotation`` Warning naming the new key
(``deprecated_annotations``). The field wins over the annotation, and the annotation over a
deprecated name (ADR 0089).

The rollout controls (``partition``, ``paused``, ``selector``, ``rollingUpdateType``) hold a
RollingUpdate back; they never speed it up and never touch manage's work, so a node that joins
still gets a pod of the current revision and a failed pod is still replaced.
``InPlaceIfPossible`` requires a zero ``maxSurge``, as OpenKruise's webhook requires: a pod
patched in place has no surge neighbour to hand over to. The spec limits
(``progressDeadlineSeconds``, ``burstReplicas``) sit at ``spec`` level, where Deployment keeps
``progressDeadlineSeconds``.

The node-lifecycle fields: ``unhealthyNodePolicy`` and ``unhealthyNodeSeconds`` sit with the
rollout controls, and ``Skip`` leaves nodes that are not Ready out of the rolling update
(``dsctl.daemonset.nodelifecycle``); an unreadable one holds the rolling update as any
unreadable control does. ``maxDisruptions`` sits at ``spec`` level and sizes the
PodDisruptionBudget the controller keeps for the DaemonSet (``dsctl.daemonset.budget``).

**The update order** is stable: nodes by name, ascending. Nodes whose pod is already of the
current revision (or still being sorted out by manage) come first, then nodes without a
live pod, then nodes with an old pod that the selector admits. Only the first
``nodes - partition`` nodes of that order may be updated, so the nodes that keep their old
pods are the last ones in name order, and exactly ``partition`` old pods remain once the
rollout has done what it may. This is OpenKruise's Advanced DaemonSet rule, ordered ascending.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dsctl_api.labels import Selector, SelectorError, parse_selector, selector_from_label_selector
from dsctl_api.objects import annotations_of, as_map

__all__ = [
    "ANNOTATION_PREFIX",
    "BURST_REPLICAS_FIELD",
    "COUNT",
    "DEFAULT_PROGRESS_DEADLINE_SECONDS",
    "DEFAULT_UNHEALTHY_NODE_SECONDS",
    "EXTENSION_FIELDS",
    "IN_PLACE_IF_POSSIBLE",
    "MAX_DISRUPTIONS_FIELD",
    "NODE_READINESS_GATE_FIELD",
    "NO_CONTROLS",
    "PARTITION_FIELD",
    "PAUSED_FIELD",
    "PROGRESS_DEADLINE_FIELD",
    "ROLLING_UPDATE_TYPE_FIELD",
    "SELECTOR_FIELD",
    "SKIP",
    "STANDARD",
    "UNHEALTHY_NODE_POLICY_FIELD",
    "UNHEALTHY_NODE_SECONDS_FIELD",
    "ExtensionField",
    "InvalidControl",
    "RolloutControls",
    "burst_replicas",
    "deprecated_annotations",
    "effective_burst",
    "frozen_nodes",
    "gates_nodes",
    "max_disruptions",
    "node_readiness_gate",
    "progress_deadline_seconds",
    "rollout_controls",
    "set_at",
]

ANNOTATION_PREFIX = "dsctl.io/"
"""Every extension annotation is ``dsctl.io/<kebab-case name>``."""

STANDARD = "Standard"
IN_PLACE_IF_POSSIBLE = "InPlaceIfPossible"
_UPDATE_TYPES = (STANDARD, IN_PLACE_IF_POSSIBLE)

DEFAULT_PROGRESS_DEADLINE_SECONDS = 600
"""Deployment's default, kept for DaemonSets."""

COUNT = "Count"
SKIP = "Skip"
_UNHEALTHY_POLICIES = (COUNT, SKIP)
DEFAULT_UNHEALTHY_NODE_SECONDS = 60
"""How long a node is not Ready before ``Skip`` leaves it out: longer than a kubelet restart."""

_ROLLING = "spec.updateStrategy.rollingUpdate"
_SPEC = "spec"
_TRUE, _FALSE = ("true", "True", "TRUE", "1"), ("false", "False", "FALSE", "0", "")


@dataclass(frozen=True, slots=True)
class ExtensionField:
    """One extension field: where it is read, what it takes, its default and what it does."""

    name: str
    """The CRD field's name, camelCase as every API field."""
    parent: str
    """Where the CRD field sits in a ``dsctl.io/v1`` DaemonSet."""
    annotation: str
    """The apps/v1 annotation, kebab-case."""
    value_type: str
    """What it takes, in the reference page's words."""
    default: int | bool | str | None
    """The value when it is set nowhere; None: see ``doc``."""
    doc: str
    """What it does, in one line."""
    deprecated: tuple[str, ...] = ()
    """Older annotation names still read (each use is warned about with an event)."""

    @property
    def crd_path(self) -> str:
        """The CRD field's full path, e.g. ``spec.updateStrategy.rollingUpdate.partition``."""
        return f"{self.parent}.{self.name}"


PARTITION_FIELD = ExtensionField(
    "partition", _ROLLING, ANNOTATION_PREFIX + "partition", "integer >= 0", 0,
    "Keep this many pods on their old revision: the last nodes by name.")
PAUSED_FIELD = ExtensionField(
    "paused", _ROLLING, ANNOTATION_PREFIX + "paused", "boolean", False,
    "Delete or update no pod for the new revision until it is false again.")
SELECTOR_FIELD = ExtensionField(
    "selector", _ROLLING, ANNOTATION_PREFIX + "selector",
    "label selector (annotation: kubectl's -l syntax, e.g. zone=a)", None,
    "Update only the pods on nodes whose labels match; unset updates every node.")
ROLLING_UPDATE_TYPE_FIELD = ExtensionField(
    "rollingUpdateType", _ROLLING, ANNOTATION_PREFIX + "rolling-update-type", "Standard | InPlaceIfPossible",
    STANDARD, "InPlaceIfPossible patches an image-only change into the running pod (requires maxSurge 0).",
    deprecated=(ANNOTATION_PREFIX + "rollingUpdateType",))
PROGRESS_DEADLINE_FIELD = ExtensionField(
    "progressDeadlineSeconds", _SPEC, ANNOTATION_PREFIX + "progress-deadline-seconds", "integer >= 1",
    DEFAULT_PROGRESS_DEADLINE_SECONDS,
    "Seconds without progress before the rollout is reported ProgressDeadlineExceeded.")
BURST_REPLICAS_FIELD = ExtensionField(
    "burstReplicas", _SPEC, ANNOTATION_PREFIX + "burst-replicas", "integer >= 1", None,
    "At most this many pod creates, and deletes, in flight for the DaemonSet; unset: --burst-replicas. "
    "It can only lower the controller's burst (kubernetes issue 113287).")

UNHEALTHY_NODE_POLICY_FIELD = ExtensionField(
    "unhealthyNodePolicy", _ROLLING, ANNOTATION_PREFIX + "unhealthy-node-policy", "Count | Skip", COUNT,
    "Skip leaves nodes not Ready for unhealthyNodeSeconds out of the rolling update; Count is upstream's.")
UNHEALTHY_NODE_SECONDS_FIELD = ExtensionField(
    "unhealthyNodeSeconds", _ROLLING, ANNOTATION_PREFIX + "unhealthy-node-seconds", "integer >= 0",
    DEFAULT_UNHEALTHY_NODE_SECONDS, "Seconds a node's Ready condition is not True before Skip leaves it out.")
MAX_DISRUPTIONS_FIELD = ExtensionField(
    "maxDisruptions", _SPEC, ANNOTATION_PREFIX + "max-disruptions", "integer >= 0, or a percentage 0%-100%", None,
    "Keep a PodDisruptionBudget that lets evictions take at most this many of the pods (a percentage of the "
    "desired pods, rounded up); unset: none.")
NODE_READINESS_GATE_FIELD = ExtensionField(
    "nodeReadinessGate", _SPEC, ANNOTATION_PREFIX + "node-readiness-gate", "boolean", False,
    "Hold the readiness taint (--readiness-taint) on every node this DaemonSet should run on until its pod "
    "there is available.")

EXTENSION_FIELDS: tuple[ExtensionField, ...] = (
    PARTITION_FIELD, PAUSED_FIELD, SELECTOR_FIELD, ROLLING_UPDATE_TYPE_FIELD,
    PROGRESS_DEADLINE_FIELD, BURST_REPLICAS_FIELD,
    UNHEALTHY_NODE_POLICY_FIELD, UNHEALTHY_NODE_SECONDS_FIELD, MAX_DISRUPTIONS_FIELD,
    NODE_READINESS_GATE_FIELD,
)
"""Every field dsctl reads beyond apps/v1, in the order the reference page lists them."""


class InvalidControl(ValueError):
    """An extension field that cannot be read; ``field`` names the field or annotation."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def _parent(ds: Mapping[str, Any], path: str) -> Mapping[str, Any]:
    node: Mapping[str, Any] = as_map(ds)
    for part in path.split("."):
        node = as_map(node.get(part))
    return node


def _source(ds: Mapping[str, Any], field: ExtensionField) -> tuple[Any, str] | None:
    """The raw value and where it was read: the CRD field, the annotation, a deprecated name."""
    value = _parent(ds, field.parent).get(field.name)
    if value is not None:
        return value, field.crd_path
    annotations = annotations_of(ds)
    for key in (field.annotation, *field.deprecated):
        value = annotations.get(key)
        if value is not None:
            return value, f"metadata.annotations[{key}]"
    return None


def set_at(ds: Mapping[str, Any], field: ExtensionField) -> str | None:
    """Where ``field`` is set on ``ds``, as a user would look for it: the CRD field's path or the
    annotation's key; None when it is set nowhere."""
    found = _source(ds, field)
    if found is None:
        return None
    where = found[1]
    return where.removeprefix("metadata.annotations[").removesuffix("]") if where.startswith("metadata.") else where


def deprecated_annotations(ds: Mapping[str, Any]) -> tuple[str, ...]:
    """One message per deprecated annotation set on ``ds``, naming its replacement."""
    annotations = annotations_of(ds)
    if not annotations:
        return ()
    messages: list[str] = []
    for field in EXTENSION_FIELDS:
        for old in field.deprecated:
            if old not in annotations:
                continue
            found = _source(ds, field)
            if found is not None and found[1] != f"metadata.annotations[{old}]":
                messages.append(f"annotation {old} is deprecated and ignored: {found[1]} is set; remove it")
            else:
                messages.append(f"annotation {old} is deprecated: rename it to {field.annotation}")
    return tuple(messages)


# -- rollout controls -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RolloutControls:
    """What holds this DaemonSet's rolling update back; the defaults hold nothing."""

    partition: int = 0
    """Pods to keep on their old revision."""
    paused: bool = False
    """When True, the rolling update deletes and updates nothing."""
    selector: Selector | None = None
    """Only pods on nodes whose labels match are updated; None admits every node."""
    rolling_update_type: str = STANDARD
    """``Standard`` or ``InPlaceIfPossible``."""
    unhealthy_node_policy: str = COUNT
    """``Count`` (upstream's) or ``Skip``."""
    unhealthy_node_seconds: int = DEFAULT_UNHEALTHY_NODE_SECONDS
    """How long a node is not Ready before ``Skip`` leaves it out."""

    @property
    def skips_unhealthy(self) -> bool:
        """Whether nodes not Ready for ``unhealthy_node_seconds`` are left out of the rolling update."""
        return self.unhealthy_node_policy == SKIP

    @property
    def in_place(self) -> bool:
        """Whether image-only changes are patched into running pods."""
        return self.rolling_update_type == IN_PLACE_IF_POSSIBLE

    @property
    def holds_back(self) -> bool:
        """Whether any control is set."""
        return self.paused or self.partition > 0 or self.selector is not None


NO_CONTROLS = RolloutControls()
"""Nothing held back: upstream's rolling update."""


def _partition(ds: Mapping[str, Any]) -> int:
    found = _source(ds, PARTITION_FIELD)
    if found is None:
        return 0
    value, where = found
    if isinstance(value, str):
        if not value.strip().isdigit():
            raise InvalidControl(where, f"must be a non-negative integer, not {value!r}")
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidControl(where, f"must be a non-negative integer, not {value!r}")
    return value


def _paused(ds: Mapping[str, Any]) -> bool:
    return _boolean(ds, PAUSED_FIELD)


def _boolean(ds: Mapping[str, Any], field: ExtensionField) -> bool:
    """A true/false field (a boolean, or its text in an annotation); unset is false."""
    found = _source(ds, field)
    if found is None:
        return False
    value, where = found
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip() in _TRUE + _FALSE:
        return value.strip() in _TRUE
    raise InvalidControl(where, f"must be true or false, not {value!r}")


def _selector(ds: Mapping[str, Any]) -> Selector | None:
    found = _source(ds, SELECTOR_FIELD)
    if found is None:
        return None
    value, where = found
    try:
        if isinstance(value, str):
            return parse_selector(value)
        if isinstance(value, Mapping):
            return selector_from_label_selector(value)
    except SelectorError as exc:
        raise InvalidControl(where, str(exc)) from exc
    raise InvalidControl(where, f"must be a label selector, not {value!r}")


def _rolling_update_type(ds: Mapping[str, Any]) -> str:
    found = _source(ds, ROLLING_UPDATE_TYPE_FIELD)
    if found is None:
        return STANDARD
    value, where = found
    if value == "":
        return STANDARD
    if value not in _UPDATE_TYPES:
        raise InvalidControl(where, f"must be Standard or InPlaceIfPossible, not {value!r}")
    if value == IN_PLACE_IF_POSSIBLE and _surges(ds):
        surge = _parent(ds, _ROLLING).get("maxSurge")
        raise InvalidControl(
            where, f"InPlaceIfPossible requires {_ROLLING}.maxSurge to be 0, not {surge!r}"
        )
    return str(value)


def _surges(ds: Mapping[str, Any]) -> bool:
    """Whether ``maxSurge`` is set to anything but 0 or ``0%`` (Kruise's test, before scaling)."""
    surge = _parent(ds, _ROLLING).get("maxSurge")
    if surge is None or isinstance(surge, bool):
        return False
    if isinstance(surge, str):
        return surge.strip().rstrip("%").strip() not in ("0", "")
    return bool(surge != 0)


def _unhealthy_node_policy(ds: Mapping[str, Any]) -> str:
    found = _source(ds, UNHEALTHY_NODE_POLICY_FIELD)
    if found is None or found[0] == "":
        return COUNT
    value, where = found
    if value not in _UNHEALTHY_POLICIES:
        raise InvalidControl(where, f"must be Count or Skip, not {value!r}")
    return str(value)


def _unhealthy_node_seconds(ds: Mapping[str, Any]) -> int:
    found = _source(ds, UNHEALTHY_NODE_SECONDS_FIELD)
    if found is None:
        return DEFAULT_UNHEALTHY_NODE_SECONDS
    value, where = found
    if isinstance(value, str):
        if not value.strip().isdigit():
            raise InvalidControl(where, f"must be a whole number of seconds >= 0, not {value!r}")
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidControl(where, f"must be a whole number of seconds >= 0, not {value!r}")
    return value


def rollout_controls(ds: Mapping[str, Any]) -> RolloutControls:
    """The controls set on ``ds``; raises ``InvalidControl`` naming the first unreadable one."""
    return RolloutControls(partition=_partition(ds), paused=_paused(ds), selector=_selector(ds),
                           rolling_update_type=_rolling_update_type(ds),
                           unhealthy_node_policy=_unhealthy_node_policy(ds),
                           unhealthy_node_seconds=_unhealthy_node_seconds(ds))


def frozen_nodes(
    controls: RolloutControls,
    *,
    old_only: Sequence[str],
    settled: Sequence[str],
    node_labels: Mapping[str, Mapping[str, str]],
) -> frozenset[str]:
    """Nodes whose old pod the rolling update must leave alone this pass.

    ``old_only`` are the nodes whose single live pod is of an old revision; ``settled`` are all
    other nodes of the pass (a current pod, no live pod, or an excess left to manage). Both
    in any order. Nodes are ranked by the module's update order and only the first
    ``len(old_only) + len(settled) - partition`` may be updated; ``paused`` freezes everything.
    """
    if controls.paused:
        return frozenset(old_only)
    selector = controls.selector
    admitted = sorted(n for n in old_only if selector is None or selector.matches(node_labels.get(n, {})))
    frozen = set(old_only).difference(admitted)
    may_update = len(old_only) + len(settled) - controls.partition
    room = max(0, may_update - len(settled))
    frozen.update(admitted[room:])
    return frozenset(frozen)


# -- spec limits ------------------------------------------------------------------------------


def _positive_int(ds: Mapping[str, Any], field: ExtensionField) -> int | None:
    """The field's value as a positive integer; None when it is set nowhere."""
    found = _source(ds, field)
    if found is None:
        return None
    value, where = found
    if isinstance(value, str):
        stripped = value.strip()
        if not stripped.isdigit():
            raise InvalidControl(where, f"must be a positive integer, not {value!r}")
        value = int(stripped)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidControl(where, f"must be a positive integer, not {value!r}")
    return value


def progress_deadline_seconds(ds: Mapping[str, Any]) -> int:
    """Seconds without progress before a rollout is reported stuck; raises ``InvalidControl``."""
    found = _positive_int(ds, PROGRESS_DEADLINE_FIELD)
    return DEFAULT_PROGRESS_DEADLINE_SECONDS if found is None else found


def burst_replicas(ds: Mapping[str, Any]) -> int | None:
    """The DaemonSet's own burst, or None when unset; raises ``InvalidControl``."""
    return _positive_int(ds, BURST_REPLICAS_FIELD)


def max_disruptions(ds: Mapping[str, Any], *, desired: int) -> int | None:
    """How many of ``desired`` pods evictions may take at once: the integer, or the percentage of
    ``desired`` rounded up; None when unset. Raises ``InvalidControl`` for a negative value, a
    percentage beyond 100 %, or anything else unreadable."""
    found = _source(ds, MAX_DISRUPTIONS_FIELD)
    if found is None:
        return None
    value, where = found
    problem = f"must be an integer >= 0 or a percentage from 0% to 100%, not {value!r}"
    if isinstance(value, str):
        stripped = value.strip()
        if stripped.endswith("%"):
            digits = stripped[:-1]
            if not digits.isdigit() or int(digits) > 100:
                raise InvalidControl(where, problem)
            return -(-int(digits) * desired // 100)
        if not stripped.isdigit():
            raise InvalidControl(where, problem)
        return int(stripped)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidControl(where, problem)
    return value


def effective_burst(ds: Mapping[str, Any], *, global_burst: int) -> int:
    """min(global, per-DaemonSet): a DaemonSet may lower the burst, never raise it.

    An unreadable value falls back to the global burst (the caller reports it).
    """
    try:
        own = burst_replicas(ds)
    except InvalidControl:
        return global_burst
    return global_burst if own is None else min(global_burst, own)


# -- the node readiness gate ------------------------------------------------------------------


def node_readiness_gate(ds: Mapping[str, Any]) -> bool:
    """Whether ``ds`` gates its nodes (``dsctl.daemonset.readinessgate``); raises ``InvalidControl``.

    The gate reads an unreadable value as true: a taint held until the agent is available is the
    safe side of a typo, and the sync reports the value (ADR 0172).
    """
    return _boolean(ds, NODE_READINESS_GATE_FIELD)


def gates_nodes(ds: Mapping[str, Any]) -> bool:
    """``node_readiness_gate``, with an unreadable value taken as true."""
    try:
        return node_readiness_gate(ds)
    except InvalidControl:
        return True
