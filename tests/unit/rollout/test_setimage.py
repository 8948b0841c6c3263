"""``dsctl set image``: kubectl's arguments, and the patch each mode gets."""

from __future__ import annotations

from typing import Any

import pytest

from dsctl.kube.resources import DAEMONSETS, crd_daemonsets
from dsctl.rollout.setimage import ImageError, image_patch, parse_images, split_arguments
from dsctl.rollout.target import Target

APPS = Target(DAEMONSETS, "default", "agent")
CRD = Target(crd_daemonsets(), "default", "agent")


def _ds(*containers: tuple[str, str], init: tuple[tuple[str, str], ...] = ()) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": n, "image": i, "ports": [{"containerPort": 80}]}
                                           for n, i in containers]}
    if init:
        spec["initContainers"] = [{"name": n, "image": i} for n, i in init]
    return {"metadata": {"name": "agent", "resourceVersion": "41"}, "spec": {"template": {"spec": spec}}}


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        pytest.param(["ds/agent", "a=b"], ("ds/agent", ["a=b"]), id="type-slash-name"),
        pytest.param(["daemonset", "agent", "a=b", "c=d"], ("daemonset/agent", ["a=b", "c=d"]), id="type-then-name"),
        pytest.param(["agent", "a=b"], ("agent", ["a=b"]), id="bare-name"),
        pytest.param(["dds/agent"], ("dds/agent", []), id="no-pairs-yet"),
    ],
)
def test_arguments_take_kubectls_shapes(words: list[str], expected: tuple[str, list[str]]) -> None:
    """TYPE/NAME, TYPE NAME and a bare NAME are all followed by the pairs."""
    assert split_arguments(words) == expected


@pytest.mark.parametrize(
    ("pairs", "error"),
    [
        pytest.param([], "at least one image update is required", id="none"),
        pytest.param(["agent"], "invalid image update 'agent'", id="no-equals"),
        pytest.param(["=img"], "invalid image update '=img'", id="no-container"),
        pytest.param(["agent="], "invalid image update 'agent='", id="no-image"),
        pytest.param(["*=a", "b=c"], "all containers are already specified by *", id="star-and-more"),
    ],
)
def test_bad_pairs_are_refused(pairs: list[str], error: str) -> None:
    """Each malformed update is one clear error, as kubectl words it."""
    with pytest.raises(ImageError, match=error.replace("*", r"\*")):
        parse_images(pairs)


def test_pairs_parse_images_with_registries_and_digests() -> None:
    """Only the first '=' splits: an image may carry a port and a digest."""
    assert parse_images(["agent=reg:5000/agent@sha256:ab", "*x=y"]) == {"agent": "reg:5000/agent@sha256:ab",
                                                                         "*x": "y"}


@pytest.mark.parametrize(
    ("ds", "images", "expected"),
    [
        pytest.param(_ds(("agent", "a:1"), ("side", "s:1")), {"agent": "a:2"},
                     {"spec": {"template": {"spec": {"containers": [{"name": "agent", "image": "a:2"}]}}}},
                     id="one-container-by-merge-key"),
        pytest.param(_ds(("agent", "a:1"), init=(("setup", "s:1"),)), {"*": "x:9"},
                     {"spec": {"template": {"spec": {"initContainers": [{"name": "setup", "image": "x:9"}],
                                                     "containers": [{"name": "agent", "image": "x:9"}]}}}},
                     id="star-covers-init-containers"),
        pytest.param(_ds(("agent", "a:1"), ("side", "s:1")), {"agent": "a:1", "side": "s:2"},
                     {"spec": {"template": {"spec": {"containers": [{"name": "side", "image": "s:2"}]}}}},
                     id="unchanged-containers-left-out"),
    ],
)
def test_apps_v1_gets_a_strategic_merge_patch(ds: dict[str, Any], images: dict[str, str],
                                              expected: dict[str, Any]) -> None:
    """apps/v1: only the changed containers, by name, as kubectl sends them."""
    patch = image_patch(APPS, ds, images)
    assert patch is not None and patch.patch_type == "strategic" and patch.body == expected


def test_a_custom_resource_gets_whole_lists_fenced_by_resource_version() -> None:
    """dsctl.io/v1: a merge patch of the changed lists, every other field kept, at the read resourceVersion."""
    ds = _ds(("agent", "a:1"), ("side", "s:1"), init=(("setup", "i:1"),))
    patch = image_patch(CRD, ds, {"side": "s:2"})
    assert patch is not None and patch.patch_type == "merge" and patch.changed == ("side",)
    assert patch.body == {"metadata": {"resourceVersion": "41"}, "spec": {"template": {"spec": {"containers": [
        {"name": "agent", "image": "a:1", "ports": [{"containerPort": 80}]},
        {"name": "side", "image": "s:2", "ports": [{"containerPort": 80}]},
    ]}}}}


@pytest.mark.parametrize("target", [pytest.param(APPS, id="apps-v1"), pytest.param(CRD, id="crd")])
def test_nothing_to_change_is_no_patch(target: Target) -> None:
    """The images already set mean no write."""
    assert image_patch(target, _ds(("agent", "a:1")), {"agent": "a:1"}) is None


def test_an_unknown_container_fails_before_any_write() -> None:
    """A name matching no container or init container names it, as kubectl does."""
    with pytest.raises(ImageError, match='unable to find container named "web"'):
        image_patch(APPS, _ds(("agent", "a:1")), {"agent": "a:2", "web": "w:1"})
