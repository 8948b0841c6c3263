"""The verbs of ``dsctl rollout``, each a few API calls around a decision from ``views``.

Every verb returns kubectl's exit code: 0 on success, 1 on any error, with the error on
stderr as ``error: …`` or ``Error from server (Reason): …``.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, TextIO

from dsctl.kube import errors
from dsctl.kube.client import KubeClient
from dsctl.kube.resources import CONTROLLER_REVISIONS
from dsctl.rollout import views
from dsctl.rollout.target import Target
from dsctl_api.objects import as_map, spec
from dsctl_api.timefmt import format_rfc3339

__all__ = ["VERBS", "Options", "run_verb"]


@dataclass(frozen=True, slots=True)
class Options:
    """What the command line asked for, beyond the target."""

    watch: bool = True
    timeout: float = 0.0
    """Seconds ``status`` waits before giving up; 0 waits for ever."""
    revision: int = 0
    """``history --revision``: print that revision's template (0: the table)."""
    to_revision: int = 0
    """``undo --to-revision``: 0 means the previous revision."""


Verb = Callable[[KubeClient, Target, Options, TextIO], Awaitable[None]]


async def _get(client: KubeClient, target: Target) -> dict[str, Any]:
    return await client.get(target.resource, target.name, namespace=target.namespace)


async def _revisions(client: KubeClient, target: Target, ds: dict[str, Any]) -> list[Mapping[str, Any]]:
    labels = as_map(as_map(spec(ds).get("selector")).get("matchLabels"))
    selector = ",".join(f"{k}={v}" for k, v in sorted(labels.items())) or None
    listed = await client.list(CONTROLLER_REVISIONS, namespace=target.namespace, label_selector=selector)
    return views.owned_revisions(ds, listed.get("items") or [])


async def status(client: KubeClient, target: Target, options: Options, out: TextIO) -> None:
    """Print the rollout's progress until it is done (or once, without ``--watch``)."""
    deadline = time.monotonic() + options.timeout if options.timeout > 0 else None
    ds = await _get(client, target)
    last = ""
    while True:
        message, done = views.status_message(target, ds)
        if message != last:
            print(message, file=out, flush=True)
            last = message
        if done or not options.watch:
            return
        ds = await _next_version(client, target, ds, deadline)


async def _next_version(client: KubeClient, target: Target, ds: dict[str, Any],
                        deadline: float | None) -> dict[str, Any]:
    """Wait for the DaemonSet to change; re-read it when the watch ends or falls behind."""
    remaining = None if deadline is None else deadline - time.monotonic()
    if remaining is not None and remaining <= 0:
        raise views.RolloutError("timed out waiting for the condition")
    version = str(as_map(ds.get("metadata")).get("resourceVersion") or "")
    window = 60 if remaining is None else max(1, min(60, int(remaining) + 1))
    events = client.watch(target.resource, namespace=target.namespace, resource_version=version,
                          field_selector=f"metadata.name={target.name}", timeout_seconds=window)
    try:
        async with contextlib.aclosing(events):
            async for event in events:
                if event.get("type") == "DELETED":
                    raise views.RolloutError("object has been deleted")
                if event.get("type") in ("ADDED", "MODIFIED"):
                    return dict(event["object"])
                if deadline is not None and time.monotonic() > deadline:
                    raise views.RolloutError("timed out waiting for the condition")
    except errors.Gone:
        pass
    if deadline is not None and time.monotonic() > deadline:
        raise views.RolloutError("timed out waiting for the condition")
    return await _get(client, target)


async def history(client: KubeClient, target: Target, options: Options, out: TextIO) -> None:
    """Print the revision table, or one revision's pod template."""
    ds = await _get(client, target)
    revisions = await _revisions(client, target, ds)
    if options.revision:
        out.write(views.revision_text(target, revisions, options.revision))
    else:
        out.write(views.history_text(target, revisions))
        out.write("\n")


async def undo(client: KubeClient, target: Target, options: Options, out: TextIO) -> None:
    """Roll the template back to a stored revision."""
    ds = await _get(client, target)
    revision, matches = views.undo_choice(ds, await _revisions(client, target, ds), options.to_revision)
    if matches:
        print(f"{target.ref} skipped rollback (current template already matches revision "
              f"{revision.get('revision')})", file=out)
        return
    patch, patch_type = views.undo_patch(target, revision)
    await client.patch(target.resource, target.name, patch, namespace=target.namespace, patch_type=patch_type)
    print(f"{target.ref} rolled back", file=out)


async def _set_paused(client: KubeClient, target: Target, *, paused: bool, out: TextIO) -> None:
    ds = await _get(client, target)
    patch = views.pause_patch(target, ds, paused=paused)
    await client.patch(target.resource, target.name, patch, namespace=target.namespace, patch_type="merge")
    print(f"{target.ref} {'paused' if paused else 'resumed'}", file=out)


async def pause(client: KubeClient, target: Target, options: Options, out: TextIO) -> None:
    """Hold the rolling update: no pod is deleted or updated until resumed."""
    await _set_paused(client, target, paused=True, out=out)


async def resume(client: KubeClient, target: Target, options: Options, out: TextIO) -> None:
    """Let a paused rolling update go on."""
    await _set_paused(client, target, paused=False, out=out)


async def restart(client: KubeClient, target: Target, options: Options, out: TextIO) -> None:
    """Replace every pod by changing a template annotation, as kubectl does."""
    ds = await _get(client, target)
    if views.is_paused(ds):
        raise views.RolloutError("can't restart paused daemon set (run rollout resume first)")
    await client.patch(target.resource, target.name, views.restart_patch(format_rfc3339(time.time())),
                       namespace=target.namespace, patch_type="merge")
    print(f"{target.ref} restarted", file=out)


VERBS: dict[str, Verb] = {
    "status": status, "history": history, "undo": undo, "pause": pause, "resume": resume, "restart": restart,
}


async def run_verb(verb: str, client: KubeClient, target: Target, options: Options, *,
                   out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    """Run one verb; print errors as kubectl does and return its exit code."""
    try:
        await VERBS[verb](client, target, options, out)
    except views.RolloutError as exc:
        print(f"error: {exc}", file=err)
        return 1
    except errors.ApiError as exc:
        print(f"Error from server ({exc.reason or exc.status}): {exc.message}", file=err)
        return 1
    except errors.KubeError as exc:
        print(f"error: {exc}", file=err)
        return 1
    return 0
