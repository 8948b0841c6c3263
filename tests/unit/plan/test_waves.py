"""The update section of a plan: waves, held nodes and methods, as the controller's own syncs
decide them over a rolled-out fleet of ten nodes."""

from __future__ import annotations

from typing import Any

import pytest

from dsctl.daemonset.history import plan_history
from tests.support.builders import rolling
from tests.unit.plan.fleet import daemonset, nodes, plan_for, rolled_out, stored, waves

V2 = "registry.example/agent:2.0"
N = [f"node-{i:02d}" for i in range(10)]


def _ds(image: str = "registry.example/agent:1.0", *, strategy: dict[str, Any] | None = None,
        annotations: dict[str, str] | None = None, min_ready: int = 0) -> dict[str, Any]:
    ds = daemonset("agent", image=image, strategy=strategy or rolling(max_unavailable=3),
                   min_ready_seconds=min_ready)
    if annotations:
        ds["metadata"]["annotations"] = annotations
    return ds


def _update(plan: dict[str, Any]) -> dict[str, Any]:
    update: dict[str, Any] = plan["daemonsets"][0]["update"]
    return update


@pytest.mark.parametrize(
    ("strategy", "annotations", "expected"),
    [
        pytest.param(rolling(max_unavailable=3), None, [N[0:3], N[3:6], N[6:9], N[9:]], id="max-unavailable-3"),
        pytest.param(rolling(max_unavailable="25%"), None, [N[0:3], N[3:6], N[6:9], N[9:]],
                     id="percent-rounds-up"),
        pytest.param(rolling(max_unavailable=0, max_surge=4), None, [N[0:4], N[4:8], N[8:]], id="surge"),
        pytest.param(rolling(max_unavailable=5), {"dsctl.io/partition": "4"}, [N[0:5], N[5:6]],
                     id="partition-holds-the-last-nodes"),
        pytest.param(rolling(max_unavailable=5), {"dsctl.io/paused": "true"}, [], id="paused"),
        pytest.param(rolling(max_unavailable=10), {"dsctl.io/selector": "zone=a"}, [], id="selector-admits-none"),
        pytest.param({"type": "OnDelete"}, None, [], id="on-delete"),
    ],
)
def test_waves_follow_the_controllers_budget(strategy: dict[str, Any], annotations: dict[str, str] | None,
                                             expected: list[list[str]]) -> None:
    """An image change rolls in waves of the budget, in node-name order, minus what the controls hold."""
    cluster = rolled_out(_ds(strategy=strategy), nodes(10))
    plan = plan_for(_ds(V2, strategy=strategy, annotations=annotations), cluster)
    assert waves(plan) == expected
    assert _update(plan)["changing"]["count"] == 10
    assert plan["changes"] is True


@pytest.mark.parametrize(
    ("annotations", "key", "held"),
    [
        pytest.param({"dsctl.io/partition": "4"}, "partition", N[6:], id="partition"),
        pytest.param({"dsctl.io/paused": "true"}, "paused", N, id="paused"),
        pytest.param({"dsctl.io/selector": "zone=a"}, "selector", N, id="selector"),
    ],
)
def test_held_nodes_name_the_control(annotations: dict[str, str], key: str, held: list[str]) -> None:
    """The nodes left on the old revision are attributed to partition, the selector or pause."""
    cluster = rolled_out(_ds(), nodes(10))
    update = _update(plan_for(_ds(V2, annotations=annotations), cluster))
    assert update["held"] == {key: held}
    assert update["holdMessage"]


def test_unavailable_pods_now_shrink_the_first_wave() -> None:
    """A pod not Ready now is replaced at once and uses one unit of the budget."""
    cluster = rolled_out(_ds(), nodes(10), not_ready=("node-07",))
    plan = plan_for(_ds(V2), cluster)
    first = waves(plan)[0]
    assert first == ["node-07", "node-00", "node-01"]
    assert _update(plan)["unavailableNow"] == 1


def test_burst_spreads_one_wave_over_several_syncs() -> None:
    """A budget larger than the burst is still one wave: nothing becomes available in between."""
    strategy = rolling(max_unavailable="100%")
    cluster = rolled_out(_ds(strategy=strategy), nodes(10))
    plan = plan_for(_ds(V2, strategy=strategy), cluster, burst=4)
    assert waves(plan) == [N]
    assert _update(plan)["simulation"]["syncs"] > 3


def test_in_place_if_possible_patches_an_image_only_change() -> None:
    """InPlaceIfPossible with an image-only change patches every pod; the method says so."""
    in_place = {"dsctl.io/rolling-update-type": "InPlaceIfPossible"}
    cluster = rolled_out(_ds(annotations=in_place), nodes(10))
    update = _update(plan_for(_ds(V2, annotations=in_place), cluster))
    assert [w["inPlace"] for w in update["waves"]] == [3, 3, 3, 1]
    (old,) = update["changing"]["revisions"]
    assert old["imageOnly"] and old["method"] == "in-place"
    assert old["images"] == [{"container": "agent", "old": "registry.example/agent:1.0", "new": V2}]


def test_a_change_beyond_images_recreates() -> None:
    """A command change is not image-only: recreate, even with InPlaceIfPossible."""
    in_place = {"dsctl.io/rolling-update-type": "InPlaceIfPossible"}
    cluster = rolled_out(_ds(annotations=in_place), nodes(4))
    new = _ds(V2, annotations=in_place)
    new["spec"]["template"]["spec"]["containers"][0]["command"] = ["/agent", "--v2"]
    (old,) = _update(plan_for(new, cluster))["changing"]["revisions"]
    assert (old["imageOnly"], old["method"]) == (False, "recreate")


def test_revision_hash_is_the_controllers() -> None:
    """The predicted revision is the one the controller's history planner names for the stored object."""
    cluster = rolled_out(_ds(), nodes(3))
    update = _update(plan_for(_ds(V2), cluster))
    expected = plan_history(ds=stored(_ds(V2)), revisions=[], api_version="apps/v1", kind="DaemonSet")
    assert (update["revision"]["hash"], update["revision"]["number"]) == (expected.hash, 2)
    assert update["revision"]["new"] is True


def test_rollback_reuses_the_old_revision() -> None:
    """Applying the template of an existing revision reuses it, renumbered, as a rollback does."""
    cluster = rolled_out(_ds(), nodes(3))
    original = cluster.revisions[0]
    cluster.revisions.append({**original, "metadata": {**original["metadata"], "name": "agent-other",
                                                       "labels": {"app": "agent", "controller-revision-hash": "other"},
                                                       "uid": "rev-2"},
                              "data": {"spec": {"template": {"$patch": "replace", "metadata": {}}}}, "revision": 2})
    update = _update(plan_for(_ds(), cluster))
    assert update["revision"]["new"] is False
    assert update["revision"]["name"] == original["metadata"]["name"]


def test_collision_bumps_the_count_as_the_controller_does() -> None:
    """A revision already holding the new hash's name with other data moves the hash, with collisionCount 1."""
    cluster = rolled_out(_ds(), nodes(3))
    clash = plan_history(ds=stored(_ds(V2)), revisions=[], api_version="apps/v1", kind="DaemonSet")
    assert clash.create is not None
    squatter = {**clash.create, "data": {"spec": {"template": {"$patch": "replace", "metadata": {"labels": {}}}}}}
    cluster.revisions.append(squatter)
    update = _update(plan_for(_ds(V2), cluster))
    assert update["revision"]["collisionCount"] == 1
    assert update["revision"]["hash"] != clash.hash


def test_duration_is_waves_times_startup_plus_min_ready() -> None:
    """The estimate is the number of waves times (start-up + minReadySeconds), with its assumption."""
    cluster = rolled_out(_ds(min_ready=5), nodes(10))
    duration = _update(plan_for(_ds(V2, min_ready=5), cluster, pod_startup=10.0))["duration"]
    assert (duration["perWaveSeconds"], duration["seconds"]) == (15.0, 60.0)
    assert duration["startupSource"] == "--pod-startup"
    assert "minReadySeconds" in duration["assumption"]


def test_startup_is_observed_from_the_live_pods() -> None:
    """Without --pod-startup, the median creation-to-Ready time of the live pods is used."""
    cluster = rolled_out(_ds(), nodes(4))
    duration = _update(plan_for(_ds(V2), cluster))["duration"]
    assert duration["podStartupSeconds"] == 10.0
    assert "4 live pods" in duration["startupSource"]


def test_max_waves_stops_a_long_rollout() -> None:
    """Past --max-waves the plan says it stopped, and the rest are beyond the simulation."""
    strategy = rolling(max_unavailable=1)
    cluster = rolled_out(_ds(strategy=strategy), nodes(10))
    update = _update(plan_for(_ds(V2, strategy=strategy), cluster, max_waves=3, pod_startup=2.0))
    assert [w["nodes"] for w in update["waves"]] == [N[0:1], N[1:2], N[2:3]]
    assert update["simulation"]["truncated"] is True
    assert update["held"] == {"beyondSimulation": N[3:]}
    assert (update["duration"]["waves"], update["duration"]["seconds"]) == (10, 20.0)
    assert "past the simulated waves" in update["duration"]["assumption"]


def test_no_change_has_no_waves_and_no_changes() -> None:
    """The file as applied: nothing changes, exit code 0."""
    cluster = rolled_out(_ds(), nodes(5))
    plan = plan_for(_ds(), cluster)
    assert plan["changes"] is False
    assert plan["daemonsets"][0]["action"] == "none"
    assert waves(plan) == []


def test_exactly_max_waves_is_not_truncated() -> None:
    """A rollout that needs exactly --max-waves waves is simulated whole."""
    cluster = rolled_out(_ds(), nodes(10))
    update = _update(plan_for(_ds(V2), cluster, max_waves=4))
    assert len(update["waves"]) == 4
    assert update["simulation"] == {"syncs": update["simulation"]["syncs"], "settled": True, "truncated": False}
    assert update["held"] == {}
