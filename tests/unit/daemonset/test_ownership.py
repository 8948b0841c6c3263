"""Claiming pods: own, adopt, release or ignore, and the patches that adopt and release."""

from __future__ import annotations

from typing import Any

import pytest

from dsctl.daemonset.ownership import adopt_patch, claim, release_patch
from dsctl_api.labels import selector_from_label_selector

from .objects import DS_UID, SIMPLE, SIMPLE2, make_ds, make_pod

SELECTOR = selector_from_label_selector({"matchLabels": SIMPLE})

CASES = {
    "ours-matching": make_pod("n", name="ours-matching"),
    "ours-relabelled": make_pod("n", name="ours-relabelled", labels=SIMPLE2),
    "orphan-matching": make_pod("n", name="orphan-matching", owner_uid=None),
    "orphan-other-labels": make_pod("n", name="orphan-other-labels", owner_uid=None, labels=SIMPLE2),
    "orphan-deleting": make_pod("n", name="orphan-deleting", owner_uid=None, deleting=True),
    "orphan-other-namespace": make_pod(
        "n", name="orphan-other-namespace", owner_uid=None, namespace="kube-system"
    ),
    "other-controller": make_pod("n", name="other-controller", owner_uid="someone-else"),
    "ours-deleting": make_pod("n", name="ours-deleting", deleting=True),
}


def _names(objs: tuple[Any, ...]) -> set[str]:
    return {o["metadata"]["name"] for o in objs}


@pytest.mark.parametrize(
    ("deleting", "owned", "adopt", "release"),
    [
        pytest.param(
            False,
            {"ours-matching", "ours-deleting"},
            {"orphan-matching"},
            {"ours-relabelled"},
            id="live-daemonset",
        ),
        pytest.param(True, {"ours-matching", "ours-deleting"}, set(), set(), id="daemonset-being-deleted"),
    ],
)
def test_claim(deleting: bool, owned: set[str], adopt: set[str], release: set[str]) -> None:
    """Ours stay ours, matching orphans are adopted, strays released; other controllers' pods are ignored."""
    result = claim(
        [*CASES.values(), "junk"],
        owner_uid=DS_UID,
        selector=SELECTOR,
        owner_namespace="default",
        owner_deleting=deleting,
    )
    assert _names(result.owned) == owned
    assert _names(result.to_adopt) == adopt
    assert _names(result.to_release) == release


def test_claim_without_owner_uid_owns_nothing() -> None:
    """A DaemonSet without a UID (malformed projection) never matches a reference."""
    pod = make_pod("n", owner_uid="")
    result = claim([pod], owner_uid="", selector=SELECTOR, owner_namespace="default", owner_deleting=False)
    assert result.owned == () and result.to_release == ()


def test_non_controller_reference_is_an_orphan() -> None:
    """An ownerReference without controller: true does not make a pod owned."""
    pod = make_pod("n", owner_uid=None)
    pod["metadata"]["ownerReferences"] = [{"uid": "x", "kind": "ConfigMap", "name": "c"}]
    result = claim(
        [pod], owner_uid=DS_UID, selector=SELECTOR, owner_namespace="default", owner_deleting=False
    )
    assert len(result.to_adopt) == 1


def test_adopt_patch() -> None:
    """Adoption adds a controller reference and pins the pod's UID."""
    pod = make_pod("n", owner_uid=None)
    patch = adopt_patch(make_ds(), pod)
    assert patch["metadata"]["uid"] == pod["metadata"]["uid"]
    (ref,) = patch["metadata"]["ownerReferences"]
    assert ref["uid"] == DS_UID and ref["controller"] is True and ref["blockOwnerDeletion"] is True


def test_release_patch() -> None:
    """Release deletes our reference by UID via the strategic-merge $patch directive."""
    pod = make_pod("n")
    assert release_patch(DS_UID, pod) == {
        "metadata": {"ownerReferences": [{"$patch": "delete", "uid": DS_UID}], "uid": pod["metadata"]["uid"]}
    }
