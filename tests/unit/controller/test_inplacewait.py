"""Pending in-place patches: a DaemonSet waits until its pod cache is past every patch it sent."""

from __future__ import annotations

from typing import Any

from dsctl.controller.inplacewait import UNKNOWN_OUTCOME_TTL, PendingPatches
from tests.unit.daemonset.objects import make_pod

OLD = "h-old"


def test_pending_patches_hold_until_the_cache_moves_past_the_patched_version() -> None:
    """A DaemonSet whose cache still shows a pod at the patched version may not plan; a newer version,
    a gone pod, another UID, a certain refusal or the deadline releases it."""
    now = [0.0]
    pending = PendingPatches(clock=lambda: now[0], ttl=300)
    old = make_pod("node-0", name="p0", hash=OLD)
    old["metadata"]["resourceVersion"] = "10"
    cache: dict[str, dict[str, Any]] = {"default/p0": old}
    pod_uid = old["metadata"]["uid"]
    pending.expect("ns/ds", pod="default/p0", pod_uid=pod_uid, resource_version="10")
    assert not pending.satisfied("ns/ds", cache.get)
    cache["default/p0"] = {**old, "metadata": {**old["metadata"], "resourceVersion": "11"}}
    assert pending.satisfied("ns/ds", cache.get) and len(pending) == 0
    pending.expect("ns/ds", pod="default/p0", pod_uid="gone-uid", resource_version="11")
    assert pending.satisfied("ns/ds", cache.get), "another uid under the name: the patched pod is gone"
    pending.expect("ns/ds", pod="default/p0", pod_uid=pod_uid, resource_version="11")
    pending.cancel("ns/ds", pod="default/p0")
    assert pending.satisfied("ns/ds", cache.get), "a certain refusal changed nothing"
    pending.expect("ns/ds", pod="default/p0", pod_uid=pod_uid, resource_version="11")
    pending.unknown_outcome("ns/ds", pod="default/p0")
    now[0] = UNKNOWN_OUTCOME_TTL - 1
    assert not pending.satisfied("ns/ds", cache.get)
    now[0] = UNKNOWN_OUTCOME_TTL + 1
    assert pending.satisfied("ns/ds", cache.get), "an unanswered patch is expected only briefly"
    pending.expect("ns/ds", pod="default/p0", pod_uid=pod_uid, resource_version="11")
    now[0] += 301
    assert pending.satisfied("ns/ds", cache.get), "expired"
