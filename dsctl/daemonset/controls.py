"""Rollout controls beyond upstream: ``partition``, ``paused``, a node ``selector`` canary, and
``rollingUpdateType`` (in-place image updates).

These hold a RollingUpdate back; they never speed it up and never touch manage's work, so a
node that joins still gets a pod of the current revision and a failed pod is still replaced.

Where they are set (read in both modes; the field wins over the annotation):

- ``partition``: keep N pods on their old revision. Field ``partition: 3``, annotation
  ``dsctl.io/partition: "3"``.
- ``paused``: delete or update no pod for the new revision. Field ``paused: true``, annotation
  ``dsctl.io/paused: "true"``.
- ``selector``: update only pods on nodes whose labels match. Field: a LabelSelector
  (``selector: {matchLabels: {zone: a}}``); annotation: kubectl's ``-l`` syntax
  (``dsctl.io/selector: "zone=a"``).
- ``rollingUpdateType``: ``Standard`` (default: replace pods) or ``InPlaceIfPossible`` (patch
  an image-only change into the running pod, see ``dsctl.daemonset.inplace``). Field
  ``rollingUpdateType: InPlaceIfPossible``, annotation
  ``dsctl.io/rollingUpdateType: InPlaceIfPossible``. ``InPlaceIfPossible`` requires a zero
  ``maxSurge``, as OpenKruise's webhook requires: a pod patched in place has no surge
  neighbour to hand over to, so surge and in-place cannot mean anything together.

Fields live under ``spec.updateStrategy.rollingUpdate`` of a ``dsctl.io/v1`` DaemonSet.

apps/v1 DaemonSets get annotations because kube-apiserver drops or refuses unknown fields in
``rollingUpdate``; annotations survive ``kubectl apply`` and need no schema.

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

from dsctl.daemonset.access import update_strategy
from dsctl_api.labels import Selector, SelectorError, parse_selector, selector_from_label_selector
from dsctl_api.objects import annotations_of, as_map

__all__ = [
    "ANNOTATION_PREFIX",
    "IN_PLACE_IF_POSSIBLE",
    "NO_CONTROLS",
    "STANDARD",
    "InvalidControl",
    "RolloutControls",
    "frozen_nodes",
    "rollout_controls",
]

ANNOTATION_PREFIX = "dsctl.io/"
"""apps/v1 mode carries each control as the annotation ``dsctl.io/<field>``."""

STANDARD = "Standard"
IN_PLACE_IF_POSSIBLE = "InPlaceIfPossible"
_UPDATE_TYPES = (STANDARD, IN_PLACE_IF_POSSIBLE)

_FIELD = "spec.updateStrategy.rollingUpdate"
_TRUE, _FALSE = ("true", "True", "TRUE", "1"), ("false", "False", "FALSE", "0", "")


class InvalidControl(ValueError):
    """A rollout control that cannot be read; ``field`` names the field or annotation."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


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


def _source(ds: Mapping[str, Any], field: str) -> tuple[Any, str] | None:
    """The raw value and where it came from: the CRD field first, then the annotation."""
    rolling = as_map(update_strategy(ds).get("rollingUpdate"))
    if rolling.get(field) is not None:
        return rolling[field], f"{_FIELD}.{field}"
    annotation = annotations_of(ds).get(ANNOTATION_PREFIX + field)
    if annotation is not None:
        return annotation, f"metadata.annotations[{ANNOTATION_PREFIX}{field}]"
    return None


def _partition(ds: Mapping[str, Any]) -> int:
    found = _source(ds, "partition")
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
    found = _source(ds, "paused")
    if found is None:
        return False
    value, where = found
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip() in _TRUE + _FALSE:
        return value.strip() in _TRUE
    raise InvalidControl(where, f"must be true or false, not {value!r}")


def _selector(ds: Mapping[str, Any]) -> Selector | None:
    found = _source(ds, "selector")
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
    found = _source(ds, "rollingUpdateType")
    if found is None:
        return STANDARD
    value, where = found
    if value == "":
        return STANDARD
    if value not in _UPDATE_TYPES:
        raise InvalidControl(where, f"must be Standard or InPlaceIfPossible, not {value!r}")
    if value == IN_PLACE_IF_POSSIBLE and _surges(ds):
        surge = as_map(update_strategy(ds).get("rollingUpdate")).get("maxSurge")
        raise InvalidControl(
            where, f"InPlaceIfPossible requires {_FIELD}.maxSurge to be 0, not {surge!r}"
        )
    return str(value)


def _surges(ds: Mapping[str, Any]) -> bool:
    """Whether ``maxSurge`` is set to anything but 0 or ``0%`` (Kruise's test, before scaling)."""
    surge = as_map(update_strategy(ds).get("rollingUpdate")).get("maxSurge")
    if surge is None or isinstance(surge, bool):
        return False
    if isinstance(surge, str):
        return surge.strip().rstrip("%").strip() not in ("0", "")
    return bool(surge != 0)


def rollout_controls(ds: Mapping[str, Any]) -> RolloutControls:
    """The controls set on ``ds``; raises ``InvalidControl`` naming the first unreadable one."""
    return RolloutControls(partition=_partition(ds), paused=_paused(ds), selector=_selector(ds),
                           rolling_update_type=_rolling_update_type(ds))


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
