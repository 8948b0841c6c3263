"""Pending in-place patches: a DaemonSet waits until its pod cache is past every patch it sent."""

from __future__ import annotations

from typing import Any, cast

from dsctl.controller.expectations import Expectations, PendingPatches
from dsctl.controller.podwrites import PodWriter, patch_in_place
from dsctl.controller.recorder import EventRecorder
from dsctl.daemonset.podplan import ImageChange, PodRef, PodUpdate
from dsctl.kube import errors
from dsctl.kube.resources import PODS
from dsctl.tuning import UNKNOWN_OUTCOME_TTL
from tests.unit.daemonset.objects import make_ds, make_pod

from .fakeclient import FakeClient
from .test_podwrites import RecordingRecorder

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


def test_expires_in_names_the_first_deadline() -> None:
    """How long a DaemonSet stays held back: until its first pending patch stops being expected."""
    now = [0.0]
    pending = PendingPatches(clock=lambda: now[0], ttl=300)
    assert pending.expires_in("ns/ds") is None
    pending.expect("ns/ds", pod="default/p0", pod_uid="u0", resource_version="10")
    now[0] = 10.0
    pending.expect("ns/ds", pod="default/p1", pod_uid="u1", resource_version="10")
    assert pending.expires_in("ns/ds") == 290.0
    pending.unknown_outcome("ns/ds", pod="default/p1")
    assert pending.expires_in("ns/ds") == UNKNOWN_OUTCOME_TTL
    now[0] = 1000.0
    assert pending.expires_in("ns/ds") == 0.0


async def test_a_conflict_is_expected_only_briefly() -> None:
    """A 409 on an in-place patch: the cache should show the pod's newer version, but a pod that
    never changes holds the DaemonSet back for ``UNKNOWN_OUTCOME_TTL``, not the whole TTL."""
    fake = FakeClient()
    pod = make_pod("node-0", name="p0", hash=OLD)
    pod["metadata"]["resourceVersion"] = "10"
    fake.put(PODS, pod)
    fake.fail("patch", PODS, errors.Conflict(409, "Conflict", "the object has been modified"))
    now = [0.0]
    pending = PendingPatches(clock=lambda: now[0], ttl=300)
    writer = PodWriter(client=fake.as_client(), expectations=Expectations(clock=lambda: now[0]),
                       recorder=cast(EventRecorder, RecordingRecorder()))
    update = PodUpdate(pod=PodRef("default", "p0", pod["metadata"]["uid"], "node-0"), hash="h-new",
                       images=(ImageChange("agent", "agent:1", "agent:2"),), resource_version="10")
    done, failures = await patch_in_place(writer, key="ns/ds", ds=make_ds(), updates=(update,), pending=pending)
    assert (done, failures) == (0, [])
    cache = {"default/p0": pod}
    assert not pending.satisfied("ns/ds", cache.get)
    assert pending.expires_in("ns/ds") == UNKNOWN_OUTCOME_TTL
    now[0] = UNKNOWN_OUTCOME_TTL + 1
    assert pending.satisfied("ns/ds", cache.get)
