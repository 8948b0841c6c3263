"""ControllerRevision history: snapshot, rollback renumbering, dedup, cleanup and collisions.

The multi-step scenarios run the planner against a small in-test revision store that applies
each ``HistoryPlan`` the way the controller does (updates, create, then deletes).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import pytest

from dsctl.daemonset.hashing import compute_hash
from dsctl.daemonset.history import (
    CURRENT_SINCE_ANNOTATION,
    CollisionDecision,
    HistoryPlan,
    plan_history,
    plan_history_cleanup,
    resolve_create_conflict,
    revision_data_equal,
    revision_patch,
)
from dsctl.daemonset.template import HASH_LABEL

DS_UID = "uid-ds"


def make_ds(
    image: str = "agent:1",
    *,
    collision_count: int | None = None,
    history_limit: int | None = None,
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A DaemonSet dict whose template differs only by image."""
    spec: dict[str, Any] = {
        "selector": {"matchLabels": {"app": "agent"}},
        "template": {
            "metadata": {"labels": {"app": "agent"}},
            "spec": {"containers": [{"name": "agent", "image": image}]},
        },
    }
    if history_limit is not None:
        spec["revisionHistoryLimit"] = history_limit
    ds: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "agent", "namespace": "ops", "uid": DS_UID},
        "spec": spec,
        "status": {},
    }
    if annotations:
        ds["metadata"]["annotations"] = annotations
    if collision_count is not None:
        ds["status"]["collisionCount"] = collision_count
    return ds


def make_revision(
    name: str, image: str, number: int, *, label: str | None = "same-as-name", owner: str = DS_UID
) -> dict[str, Any]:
    """A stored revision for the template with ``image``; label defaults to the revision's name."""
    labels = {"app": "agent"}
    if label is not None:
        labels[HASH_LABEL] = name if label == "same-as-name" else label
    return {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": {
            "name": name,
            "namespace": "ops",
            "labels": labels,
            "ownerReferences": [{"kind": "DaemonSet", "name": "agent", "uid": owner, "controller": True}],
        },
        "data": revision_patch(make_ds(image)),
        "revision": number,
    }


def make_pod(name: str, hash_label: str, *, deleting: bool = False, phase: str = "Running") -> dict[str, Any]:
    """A daemon pod carrying ``hash_label``."""
    meta: dict[str, Any] = {
        "name": name,
        "namespace": "ops",
        "uid": f"uid-{name}",
        "labels": {HASH_LABEL: hash_label},
    }
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": meta, "status": {"phase": phase}}


@dataclass
class RevisionStore:
    """The revisions the API server holds, changed only by applying plans."""

    items: dict[str, dict[str, Any]] = field(default_factory=dict)

    def apply(self, plan: HistoryPlan) -> None:
        """Apply a plan in the controller's order: updates, create, deletes."""
        for body in plan.updates:
            self.items[body["metadata"]["name"]] = copy.deepcopy(body)
        if plan.create is not None:
            self.items[plan.create["metadata"]["name"]] = copy.deepcopy(plan.create)
        for name in plan.deletes:
            del self.items[name]

    def numbers(self) -> dict[str, int]:
        """Revision number by name."""
        return {name: body["revision"] for name, body in self.items.items()}


def sync_history(store: RevisionStore, ds: dict[str, Any], pods: list[dict[str, Any]]) -> HistoryPlan:
    """One sync's history steps: construct, apply, clean up, apply."""
    plan = plan_history(ds=ds, revisions=list(store.items.values()), pods=pods)
    store.apply(plan)
    for name in plan_history_cleanup(ds=ds, old_revisions=plan.old, pods=pods):
        del store.items[name]
    return plan


def test_new_daemonset_snapshots_revision_one() -> None:
    """A DaemonSet without history gets revision 1 named <ds>-<hash>, owned by it, storing its template."""
    ds = make_ds(annotations={"kubernetes.io/change-cause": "first"})
    plan = plan_history(ds=ds, revisions=[])
    expected_hash = compute_hash(ds["spec"]["template"], None)
    assert plan.hash == expected_hash
    assert plan.revision == 1
    assert plan.create is not None
    assert plan.current == plan.create
    meta = plan.create["metadata"]
    assert meta["name"] == f"agent-{expected_hash}"
    assert meta["namespace"] == "ops"
    assert meta["labels"] == {"app": "agent", HASH_LABEL: expected_hash}
    assert meta["annotations"] == {"kubernetes.io/change-cause": "first"}
    assert meta["ownerReferences"] == [
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "name": "agent",
            "uid": DS_UID,
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert plan.create["data"] == {"spec": {"template": {**ds["spec"]["template"], "$patch": "replace"}}}
    assert plan.create["revision"] == 1
    assert (plan.updates, plan.deletes, plan.pod_patches, plan.old) == ((), (), (), ())


@pytest.mark.parametrize(
    ("ds_fields", "overrides", "expected"),
    [
        pytest.param({}, {}, ("apps/v1", "DaemonSet"), id="list-item-without-type-defaults-to-apps"),
        pytest.param(
            {"apiVersion": "dsctl.io/v1", "kind": "DaemonSet"},
            {},
            ("dsctl.io/v1", "DaemonSet"),
            id="from-object",
        ),
        pytest.param({}, {"api_version": "dsctl.io/v1", "kind": "Agent"}, ("dsctl.io/v1", "Agent"), id="explicit-crd"),
    ],
)
def test_snapshot_owner_reference_type(
    ds_fields: dict[str, str], overrides: dict[str, str], expected: tuple[str, str]
) -> None:
    """The snapshot's owner type comes from explicit arguments, then the object, then apps/v1."""
    ds = make_ds()
    del ds["apiVersion"], ds["kind"]
    ds.update(ds_fields)
    plan = plan_history(ds=ds, revisions=[], api_version=overrides.get("api_version"), kind=overrides.get("kind"))
    assert plan.create is not None
    ref = plan.create["metadata"]["ownerReferences"][0]
    assert (ref["apiVersion"], ref["kind"]) == expected


def test_revision_patch_is_a_deep_copy() -> None:
    """Changing stored revision data never reaches back into the cached DaemonSet."""
    ds = make_ds()
    patch = revision_patch(ds)
    patch["spec"]["template"]["spec"]["containers"][0]["image"] = "evil"
    assert ds["spec"]["template"]["spec"]["containers"][0]["image"] == "agent:1"
    assert "$patch" not in ds["spec"]["template"]


def test_revision_data_equal_ignores_key_order() -> None:
    """Revision data is compared as JSON structure, not as bytes."""
    ds = make_ds()
    revision = {"data": {"spec": {"template": {"$patch": "replace", **dict(reversed(ds["spec"]["template"].items()))}}}}
    assert revision_data_equal(ds, revision)
    assert not revision_data_equal(make_ds("agent:2"), revision)


def test_template_change_snapshots_the_next_revision() -> None:
    """A new template gets revision max(old)+1; the previous revision becomes old."""
    store = RevisionStore()
    first = sync_history(store, make_ds("agent:1"), [])
    second = sync_history(store, make_ds("agent:2"), [])
    assert second.create is not None
    assert second.revision == 2
    assert second.hash != first.hash
    assert [r["metadata"]["name"] for r in second.old] == [f"agent-{first.hash}"]
    assert sorted(store.numbers().values()) == [1, 2]


def test_unchanged_template_writes_nothing() -> None:
    """Syncing an unchanged DaemonSet finds its revision and plans no writes."""
    store = RevisionStore()
    first = sync_history(store, make_ds(), [])
    again = plan_history(ds=make_ds(), revisions=list(store.items.values()))
    assert not again.has_writes
    assert (again.hash, again.revision) == (first.hash, 1)


def test_rollback_reuses_and_renumbers_the_old_revision() -> None:
    """Going back to revision 1's template reuses revision 1 and renumbers it to 3; nothing is created."""
    store = RevisionStore()
    first = sync_history(store, make_ds("agent:1"), [])
    sync_history(store, make_ds("agent:2"), [])
    back = sync_history(store, make_ds("agent:1"), [])
    assert back.create is None
    assert back.hash == first.hash
    assert back.revision == 3
    assert [u["metadata"]["name"] for u in back.updates] == [f"agent-{first.hash}"]
    assert back.updates[0]["revision"] == 3
    assert store.numbers()[f"agent-{first.hash}"] == 3
    assert sorted(store.numbers().values()) == [2, 3]


def test_a_rollback_stamps_when_the_revision_became_current() -> None:
    """The renumbered revision carries dsctl.io/current-since: the start of the rollout it begins."""
    revisions = [make_revision("agent-a", "agent:1", 1), make_revision("agent-b", "agent:2", 2)]
    plan = plan_history(ds=make_ds("agent:1"), revisions=revisions, now=1_800_000_000.0)
    (renumbered,) = plan.updates
    assert renumbered["revision"] == 3
    assert renumbered["metadata"]["annotations"][CURRENT_SINCE_ANNOTATION] == "2027-01-15T08:00:00Z"
    assert plan.current is renumbered


def test_duplicates_are_deduped_and_their_pods_relabelled() -> None:
    """Two revisions holding the current template: the higher one stays, the other goes, its pods move."""
    revisions = [
        make_revision("agent-a", "agent:1", 1),
        make_revision("agent-b", "agent:2", 2),
        make_revision("agent-c", "agent:1", 3),
    ]
    pods = [
        make_pod("p1", "agent-a"),
        make_pod("p2", "agent-b"),
        make_pod("p3", "agent-c"),
        make_pod("p4", "agent-a", deleting=True),
    ]
    plan = plan_history(ds=make_ds("agent:1"), revisions=revisions, pods=pods)
    assert (plan.hash, plan.revision, plan.create) == ("agent-c", 3, None)
    assert plan.deletes == ("agent-a",)
    assert plan.updates == ()
    assert [(p.pod.name, p.patch) for p in plan.pod_patches] == [
        ("p1", {"metadata": {"labels": {HASH_LABEL: "agent-c"}}})
    ]
    assert [r["metadata"]["name"] for r in plan.old] == ["agent-b"]


def test_dedup_keeps_the_highest_then_renumbers_it() -> None:
    """Duplicates below an old revision: the highest duplicate is kept and renumbered above the old one."""
    revisions = [
        make_revision("agent-a", "agent:1", 1),
        make_revision("agent-c", "agent:1", 2),
        make_revision("agent-b", "agent:2", 5),
    ]
    plan = plan_history(ds=make_ds("agent:1"), revisions=revisions)
    assert (plan.hash, plan.revision) == ("agent-c", 6)
    assert plan.deletes == ("agent-a",)
    assert [(u["metadata"]["name"], u["revision"]) for u in plan.updates] == [("agent-c", 6)]


@pytest.mark.parametrize(
    ("image", "expect_current"),
    [
        pytest.param("agent:1", True, id="unlabelled-current"),
        pytest.param("agent:2", False, id="unlabelled-old"),
    ],
)
def test_unlabelled_revision_gets_its_name_as_hash(image: str, expect_current: bool) -> None:
    """A revision without the hash label is updated to carry its own name as the label."""
    revision = make_revision("agent-legacy", "agent:1", 4, label=None)
    plan = plan_history(ds=make_ds(image), revisions=[revision])
    assert [u["metadata"]["labels"][HASH_LABEL] for u in plan.updates] == ["agent-legacy"]
    assert "controller-revision-hash" not in revision["metadata"]["labels"]  # input untouched
    if expect_current:
        assert (plan.hash, plan.revision, plan.create) == ("agent-legacy", 4, None)
    else:
        assert plan.create is not None
        assert plan.revision == 5
        assert plan.old[0]["metadata"]["labels"][HASH_LABEL] == "agent-legacy"


def test_revisions_of_another_owner_are_ignored() -> None:
    """A revision controlled by a different UID is neither matched, renumbered nor cleaned up."""
    foreign = make_revision("agent-x", "agent:1", 9, owner="someone-else")
    plan = plan_history(ds=make_ds("agent:1"), revisions=[foreign])
    assert plan.create is not None
    assert (plan.revision, plan.old, plan.updates) == (1, (), ())


def test_cleanup_with_limit_two_after_five_updates_leaves_three() -> None:
    """revisionHistoryLimit 2: after five template changes the current and the two newest old remain."""
    store = RevisionStore()
    hashes = []
    for version in range(1, 7):
        ds = make_ds(f"agent:{version}", history_limit=2)
        plan = sync_history(store, ds, [make_pod("p", plan_history(ds=ds, revisions=[]).hash)])
        hashes.append(plan.hash)
    assert sorted(store.items) == sorted(f"agent-{h}" for h in hashes[-3:])
    assert sorted(store.numbers().values()) == [4, 5, 6]


@pytest.mark.parametrize(
    ("limit", "pods", "expected"),
    [
        pytest.param(None, [], [], id="default-limit-10-keeps-all-four"),
        pytest.param(0, [], ["r1", "r2", "r3", "r4"], id="limit-0-deletes-all-old"),
        pytest.param(2, [], ["r1", "r2"], id="oldest-first"),
        pytest.param(2, [make_pod("p", "r1")], ["r2", "r3"], id="live-pod-protects-its-revision"),
        pytest.param(
            2,
            [make_pod("p", "r1", deleting=True, phase="Failed"), make_pod("q", "r2")],
            ["r3", "r4"],
            id="deleted-terminal-pod-still-protects",
        ),
        pytest.param(
            0,
            [make_pod(f"p{i}", f"r{i}") for i in range(1, 5)],
            [],
            id="all-live-nothing-deleted-over-limit",
        ),
    ],
)
def test_cleanup(limit: int | None, pods: list[dict[str, Any]], expected: list[str]) -> None:
    """Cleanup deletes the oldest old revisions beyond the limit, skipping any a pod still carries."""
    old = [make_revision(f"r{n}", f"agent:{n}", n) for n in (3, 1, 4, 2)]
    assert plan_history_cleanup(ds=make_ds(history_limit=limit), old_revisions=old, pods=pods) == expected


@pytest.mark.parametrize(
    ("cached", "live", "existing_image", "expected"),
    [
        pytest.param(None, None, "agent:1", CollisionDecision("reuse", None, ""), id="same-data-reuse"),
        pytest.param(None, None, "agent:2", CollisionDecision("bump", 1, ""), id="unset-bumps-to-1"),
        pytest.param(1, 1, "agent:2", CollisionDecision("bump", 2, ""), id="bumps-by-one"),
        pytest.param(None, 1, "agent:2", CollisionDecision("stale", 1, ""), id="stale-cached-count"),
    ],
)
def test_resolve_create_conflict(
    cached: int | None, live: int | None, existing_image: str, expected: CollisionDecision
) -> None:
    """AlreadyExists: reuse equal data, bump the count on a real clash, retry on a stale count."""
    ds = make_ds("agent:1", collision_count=cached)
    existing = make_revision("agent-x", existing_image, 1)
    decision = resolve_create_conflict(ds=ds, existing=existing, live_ds=make_ds(collision_count=live))
    assert (decision.action, decision.collision_count) == (expected.action, expected.collision_count)
    assert decision.message


def test_collision_bump_moves_the_next_snapshot_to_a_new_name() -> None:
    """A revision squatting on our name with other data leads to a bump, and the next sync's name is free."""
    ds = make_ds("agent:2")
    wanted = f"agent-{compute_hash(ds['spec']['template'], None)}"
    squatter = make_revision(wanted, "agent:1", 1)
    first = plan_history(ds=ds, revisions=[squatter])
    assert first.create is not None
    assert first.create["metadata"]["name"] == wanted  # the create will fail with AlreadyExists
    decision = resolve_create_conflict(ds=ds, existing=squatter, live_ds=ds)
    assert (decision.action, decision.collision_count) == ("bump", 1)
    retry = plan_history(ds=make_ds("agent:2", collision_count=1), revisions=[squatter])
    assert retry.create is not None
    assert retry.create["metadata"]["name"] != wanted
    assert retry.hash == compute_hash(ds["spec"]["template"], 1)
    assert retry.revision == 2


def test_resolve_create_conflict_needs_the_live_object_only_for_a_clash() -> None:
    """Without the live DaemonSet an equal-data conflict is still settled; a clash asks for it."""
    ds = make_ds("agent:1")
    assert resolve_create_conflict(ds=ds, existing=make_revision("x", "agent:1", 1), live_ds=None).action == "reuse"
    with pytest.raises(ValueError, match="live_ds"):
        resolve_create_conflict(ds=ds, existing=make_revision("x", "agent:2", 1), live_ds=None)
