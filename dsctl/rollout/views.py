"""Pure decisions and texts of ``dsctl rollout``: no I/O, table-tested.

The wording follows kubectl's rollout commands, so that scripts written against
``kubectl rollout`` read ``dsctl rollout`` the same way.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal

import yaml

from dsctl.daemonset.extensions import PAUSED_FIELD, InvalidControl, rollout_controls
from dsctl.daemonset.reasons import (
    DAEMONSET_PAUSED,
    DEPARTING_NODES,
    INVALID_ROLLOUT_CONTROL,
    PROGRESS_DEADLINE_EXCEEDED,
    PROGRESSING,
    ROLLOUT_HELD,
    UNHEALTHY_NODES,
)
from dsctl.rollout.target import Target
from dsctl_api.objects import annotations_of, as_int, as_list, as_map, meta, spec, uid

__all__ = [
    "CHANGE_CAUSE",
    "RESTARTED_AT",
    "RolloutError",
    "history_text",
    "owned_revisions",
    "pause_patch",
    "restart_patch",
    "revision_text",
    "status_message",
    "undo_choice",
    "undo_patch",
]

CHANGE_CAUSE = "kubernetes.io/change-cause"
RESTARTED_AT = "kubectl.kubernetes.io/restartedAt"
_PAUSED = PAUSED_FIELD.annotation

Obj = Mapping[str, Any]
HELD = (DAEMONSET_PAUSED, ROLLOUT_HELD, INVALID_ROLLOUT_CONTROL, UNHEALTHY_NODES, DEPARTING_NODES)
"""``Progressing`` reasons of a rollout held back on purpose (a control, or nodes left out)."""


class RolloutError(Exception):
    """A rollout command that cannot go on; the message is kubectl-style, without ``error:``."""


def status_message(target: Target, ds: Obj) -> tuple[str, bool]:
    """kubectl's status line for ``ds`` and whether the rollout is done.

    Raises ``RolloutError`` for a strategy other than RollingUpdate (as kubectl does) and, beyond
    kubectl, when the controller reported ``ProgressDeadlineExceeded``. Beyond kubectl too, a
    rollout that a control holds back on purpose gets a second line: the ``Progressing``
    condition's reason and message, which name the control and how many pods it holds back
    (kubectl's own line for a DaemonSet is computed from the counters alone).
    """
    strategy = as_map(spec(ds).get("updateStrategy")).get("type") or "RollingUpdate"
    if strategy != "RollingUpdate":
        raise RolloutError("rollout status is only available for RollingUpdate strategy type")
    status = as_map(ds.get("status"))
    if as_int(meta(ds).get("generation"), 0) > as_int(status.get("observedGeneration"), 0):
        return "Waiting for daemon set spec update to be observed...", False
    # As kubectl's Deployment viewer: judged only once the current generation was observed,
    # by the reason alone, in its words ("deployment" becomes "daemon set").
    for condition in as_list(status.get("conditions")):
        if as_map(condition).get("type") == PROGRESSING and condition.get("reason") == PROGRESS_DEADLINE_EXCEEDED:
            raise RolloutError(f'daemon set "{target.name}" exceeded its progress deadline')
    desired = as_int(status.get("desiredNumberScheduled"), 0)
    updated = as_int(status.get("updatedNumberScheduled"), 0)
    available = as_int(status.get("numberAvailable"), 0)
    name = f'"{target.name}"'
    held = _held(status)
    if updated < desired:
        return f"Waiting for daemon set {name} rollout to finish: {updated} out of {desired} new pods have been " \
               f"updated...{held}", False
    if available < desired:
        return f"Waiting for daemon set {name} rollout to finish: {available} of {desired} updated pods are " \
               f"available...{held}", False
    return f"daemon set {name} successfully rolled out", True


def _held(status: Obj) -> str:
    """A line naming what holds the rollout back on purpose, from the ``Progressing`` condition; or ''."""
    for condition in as_list(status.get("conditions")):
        cond = as_map(condition)
        if cond.get("type") == PROGRESSING and cond.get("status") == "Unknown" and cond.get("reason") in HELD:
            return f"\n{cond.get('reason')}: {cond.get('message')}"
    return ""


def owned_revisions(ds: Obj, revisions: Iterable[Obj]) -> list[Obj]:
    """The ControllerRevisions whose controller is ``ds``, by revision number."""
    owner = uid(ds)
    mine = [r for r in revisions
            if any(as_map(ref).get("uid") == owner and as_map(ref).get("controller")
                   for ref in as_list(meta(r).get("ownerReferences")))]
    return sorted(mine, key=lambda r: as_int(r.get("revision"), 0))


def history_text(target: Target, revisions: list[Obj]) -> str:
    """``rollout history``: one row per revision with its change cause."""
    rows = [f"{target.ref} ", f"{'REVISION':<10}CHANGE-CAUSE"]
    for rev in revisions:
        cause = annotations_of(rev).get(CHANGE_CAUSE) or "<none>"
        rows.append(f"{as_int(rev.get('revision'), 0):<10}{cause}")
    return "\n".join(rows) + "\n"


def _template(rev: Obj) -> dict[str, Any]:
    """A revision's pod template, without the strategic-merge directive."""
    data = as_map(rev.get("data"))
    template = dict(as_map(as_map(data.get("spec")).get("template")))
    template.pop("$patch", None)
    return template


def revision_text(target: Target, revisions: list[Obj], number: int) -> str:
    """``rollout history --revision N``: the pod template of that revision."""
    for rev in revisions:
        if as_int(rev.get("revision"), 0) == number:
            body = yaml.safe_dump(_template(rev), sort_keys=True, default_flow_style=False)
            indented = "".join(f"  {line}\n" for line in body.splitlines())
            return f"{target.ref} with revision #{number}\nPod Template:\n{indented}"
    raise RolloutError(f"unable to find the specified revision {number}")


def undo_choice(ds: Obj, revisions: list[Obj], to_revision: int) -> tuple[Obj, bool]:
    """The revision to roll back to, and whether the current template already matches it.

    ``to_revision`` 0 means the previous revision, as in kubectl.
    """
    if to_revision == 0:
        if len(revisions) <= 1:
            raise RolloutError("no last revision to roll back to")
        chosen = revisions[-2]
    else:
        found = [r for r in revisions if as_int(r.get("revision"), 0) == to_revision]
        if not found:
            raise RolloutError(f"unable to find specified revision {to_revision} in history")
        chosen = found[0]
    return chosen, _template(chosen) == dict(as_map(spec(ds).get("template")))


def undo_patch(target: Target, revision: Obj) -> tuple[Any, Literal["strategic", "json"]]:
    """The patch that rolls ``target`` back to ``revision``, and its patch type.

    apps/v1 gets the revision's data as a strategic merge patch, exactly as kubectl sends it;
    a custom resource has no strategic merge, so its template is replaced by a JSON patch.
    """
    if not target.crd:
        return dict(as_map(revision.get("data"))), "strategic"
    return [{"op": "replace", "path": "/spec/template", "value": _template(revision)}], "json"


def is_paused(ds: Obj) -> bool:
    """Whether the rollout controls hold ``ds`` paused (an unreadable control counts as paused)."""
    try:
        return rollout_controls(ds).paused
    except InvalidControl:
        return True


def pause_patch(target: Target, ds: Obj, *, paused: bool) -> dict[str, Any]:
    """A JSON merge patch that pauses or resumes ``ds``.

    apps/v1 uses the ``dsctl.io/paused`` annotation (the API has no field for it); the custom
    resource uses ``spec.updateStrategy.rollingUpdate.paused``. Resuming clears both.
    """
    if paused == is_paused(ds):
        raise RolloutError(f"{target.plural_ref} is {'already' if paused else 'not'} paused")
    if paused:
        if target.crd:
            return {"spec": {"updateStrategy": {"rollingUpdate": {"paused": True}}}}
        return {"metadata": {"annotations": {_PAUSED: "true"}}}
    patch: dict[str, Any] = {}
    if _PAUSED in annotations_of(ds):
        patch["metadata"] = {"annotations": {_PAUSED: None}}
    if as_map(as_map(spec(ds).get("updateStrategy")).get("rollingUpdate")).get("paused") is not None:
        patch["spec"] = {"updateStrategy": {"rollingUpdate": {"paused": None}}}
    return patch


def restart_patch(now_rfc3339: str) -> dict[str, Any]:
    """A JSON merge patch that changes the template, so every pod is replaced, as kubectl does."""
    return {"spec": {"template": {"metadata": {"annotations": {RESTARTED_AT: now_rfc3339}}}}}
