"""Properties of the planners over generated clusters, and their robustness to malformed objects."""

from __future__ import annotations

import contextlib
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsctl.controller.backoffstate import FailedPodBackoff
from dsctl.daemonset.eligibility import eligibility_signature, evaluate_nodes, node_should_run
from dsctl.daemonset.history import plan_history, plan_history_cleanup
from dsctl.daemonset.manage import plan_manage
from dsctl.daemonset.ownership import claim
from dsctl.daemonset.podsort import group_by_node, sort_pods
from dsctl.daemonset.status import compute_status
from dsctl.daemonset.template import TemplateError, new_pod, target_node
from dsctl.daemonset.update import plan_rolling_update
from dsctl.daemonset.validation import validate_daemonset
from dsctl_api.labels import selector_from_label_selector
from tests.support.profiles import examples

from .objects import DS_UID, HASH, T0, make_ds, make_node, make_pod, surge_strategy, taint

SETTINGS = settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])

NODE_NAMES = [f"n{i}" for i in range(6)]
LABEL_KEYS = ["zone", "disk"]
LABEL_VALUES = ["a", "b"]
TAINTS = [taint("t1", "NoSchedule"), taint("t2", "NoExecute"), taint("t3", "PreferNoSchedule")]
TOLERATIONS = [{"key": "t1", "operator": "Exists"}, {"key": "t2", "operator": "Exists", "effect": "NoExecute"}]

label_maps = st.dictionaries(st.sampled_from(LABEL_KEYS), st.sampled_from(LABEL_VALUES), max_size=2)


@st.composite
def clusters(draw: st.DrawFn) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    """A DaemonSet with a random selector and tolerations, nodes with random labels/taints, and pods."""
    surge = draw(st.booleans())
    ds = make_ds(
        pod_spec={
            "nodeSelector": draw(label_maps),
            "tolerations": draw(st.lists(st.sampled_from(TOLERATIONS), max_size=2)),
        },
        strategy=surge_strategy(1) if surge else None,
    )
    names = draw(st.lists(st.sampled_from(NODE_NAMES), unique=True, max_size=6))
    nodes = [
        make_node(n, labels=draw(label_maps), taints=draw(st.lists(st.sampled_from(TAINTS), unique_by=str)))
        for n in names
    ]
    pods = [
        make_pod(
            draw(st.sampled_from([*NODE_NAMES, "gone"])),
            phase=draw(st.sampled_from(["Pending", "Running", "Failed", "Succeeded"])),
            deleting=draw(st.booleans()),
            bound=draw(st.booleans()),
            ready=draw(st.booleans()),
            hash=draw(st.sampled_from([HASH, "old"])),
            created=T0 - draw(st.integers(0, 50)),
        )
        for _ in range(draw(st.integers(0, 12)))
    ]
    return ds, nodes, pods


@SETTINGS
@given(clusters())
def test_manage_invariants(cluster: tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]) -> None:
    """Creates only on eligible nodes, once each; deletes only live pods, once each; one pod kept per node."""
    ds, nodes, pods = cluster
    grouped = group_by_node(pods)
    plan = plan_manage(ds=ds, nodes=nodes, pods_by_node=grouped, hash=HASH, now=T0, backoff=FailedPodBackoff())
    fits = evaluate_nodes(ds, nodes)
    surge = "maxSurge" in ds["spec"]["updateStrategy"]["rollingUpdate"]

    uids = [d.uid for d in plan.deletes]
    deleted = set(uids)
    assert len(deleted) == len(uids)
    assert len(set(plan.creates)) == len(plan.creates)
    for node in plan.creates:
        assert fits[node].should_run
        if not surge:
            assert not grouped.get(node)
        else:
            running = [
                p
                for p in grouped.get(node, [])
                if "deletionTimestamp" not in p["metadata"]
                and p["metadata"]["uid"] not in deleted
                and p["status"]["phase"] not in ("Failed", "Succeeded")
            ]
            assert running == []

    by_uid = {p["metadata"]["uid"]: p for p in pods}
    for ref in plan.deletes:
        pod = by_uid[ref.uid]
        assert "deletionTimestamp" not in pod["metadata"]
        assert target_node(pod) == ref.node

    for node, verdict in fits.items():
        live = [p for p in grouped.get(node, []) if "deletionTimestamp" not in p["metadata"]]
        left = [p for p in live if p["metadata"]["uid"] not in deleted]
        if not verdict.should_continue_running:
            assert left == []
        elif not surge and all(p["status"]["phase"] in ("Pending", "Running") for p in live):
            assert len(left) == min(1, len(live))
            if live:
                assert left[0] is sort_pods(live)[0]


@SETTINGS
@given(clusters())
def test_status_invariants(cluster: tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]) -> None:
    """available <= ready <= current <= desired, and unavailable = desired - available."""
    ds, nodes, pods = cluster
    s = compute_status(ds=ds, nodes=nodes, pods_by_node=group_by_node(pods), hash=HASH, now=T0)
    assert 0 <= s.number_available <= s.number_ready <= s.current_number_scheduled <= s.desired_number_scheduled
    assert s.updated_number_scheduled <= s.current_number_scheduled
    assert s.number_unavailable == s.desired_number_scheduled - s.number_available
    assert s.desired_number_scheduled + s.number_misscheduled <= len(nodes)


junk = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)


def maybe(valid: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Either a plausible value or anything at all."""
    return st.one_of(valid, junk)


names = st.sampled_from(["n1", "n2", "", "x"])
timestamps = st.sampled_from(["2024-01-01T00:00:00Z", "", "yesterday", "2024-13-99T00:00:00Z"])
requirement = st.fixed_dictionaries(
    {},
    optional={
        "key": maybe(st.sampled_from(["zone", "metadata.name"])),
        "operator": maybe(st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"])),
        "values": maybe(st.lists(st.sampled_from(["a", "1", "n1"]), max_size=2)),
    },
)
term = st.fixed_dictionaries(
    {}, optional={"matchExpressions": maybe(st.lists(requirement)), "matchFields": maybe(st.lists(requirement))}
)
affinity = maybe(
    st.fixed_dictionaries(
        {},
        optional={
            "nodeAffinity": maybe(
                st.fixed_dictionaries(
                    {},
                    optional={
                        "requiredDuringSchedulingIgnoredDuringExecution": maybe(
                            st.fixed_dictionaries({}, optional={"nodeSelectorTerms": maybe(st.lists(term))})
                        )
                    },
                )
            )
        },
    )
)
pod_spec = maybe(
    st.fixed_dictionaries(
        {},
        optional={
            "nodeName": maybe(names),
            "nodeSelector": maybe(label_maps),
            "affinity": affinity,
            "tolerations": maybe(st.lists(maybe(st.sampled_from(TOLERATIONS)))),
            "hostNetwork": maybe(st.booleans()),
        },
    )
)
metadata = maybe(
    st.fixed_dictionaries(
        {},
        optional={
            "name": maybe(names),
            "namespace": maybe(st.just("default")),
            "uid": maybe(st.sampled_from([DS_UID, "u2"])),
            "labels": maybe(label_maps),
            "annotations": junk,
            "creationTimestamp": maybe(timestamps),
            "deletionTimestamp": maybe(timestamps),
            "ownerReferences": maybe(
                st.lists(st.fixed_dictionaries({"uid": maybe(st.just(DS_UID)), "controller": junk}))
            ),
        },
    )
)
condition = st.fixed_dictionaries(
    {}, optional={"type": maybe(st.just("Ready")), "status": junk, "lastTransitionTime": maybe(timestamps)}
)
malformed_pods = st.fixed_dictionaries(
    {},
    optional={
        "metadata": metadata,
        "spec": pod_spec,
        "status": maybe(
            st.fixed_dictionaries(
                {},
                optional={
                    "phase": maybe(st.sampled_from(["Failed", "Succeeded", "Running"])),
                    "conditions": maybe(st.lists(condition)),
                },
            )
        ),
    },
)
malformed_nodes = st.fixed_dictionaries(
    {},
    optional={
        "metadata": metadata,
        "spec": maybe(st.fixed_dictionaries({}, optional={"taints": maybe(st.lists(maybe(st.sampled_from(TAINTS))))})),
    },
)
malformed_ds = st.fixed_dictionaries(
    {},
    optional={
        "metadata": metadata,
        "spec": maybe(
            st.fixed_dictionaries(
                {},
                optional={
                    "template": maybe(st.fixed_dictionaries({}, optional={"metadata": metadata, "spec": pod_spec})),
                    "updateStrategy": junk,
                    "minReadySeconds": junk,
                },
            )
        ),
        "status": junk,
    },
)


@SETTINGS
@given(
    ds=malformed_ds,
    nodes=st.lists(maybe(malformed_nodes), max_size=4),
    pods=st.lists(maybe(malformed_pods), max_size=5),
    extra=st.dictionaries(st.text(max_size=3), st.lists(junk, max_size=2), max_size=2),
)
def test_planning_never_raises_on_malformed_objects(
    ds: Any, nodes: list[Any], pods: list[Any], extra: dict[str, list[Any]]
) -> None:
    """Missing fields and wrong types anywhere never make a planner raise."""
    grouped: dict[str, list[Any]] = {**extra, **group_by_node(pods)}
    backoff = FailedPodBackoff()
    plan_manage(ds=ds, nodes=nodes, pods_by_node=grouped, hash=HASH, now=T0, backoff=backoff)
    compute_status(ds=ds, nodes=nodes, pods_by_node=grouped, hash=HASH, now=T0)
    claim(
        pods,
        owner_uid=DS_UID,
        selector=selector_from_label_selector({}),
        owner_namespace="default",
        owner_deleting=False,
    )
    for node in nodes:
        if isinstance(node, dict):
            node_should_run(ds, node)
            eligibility_signature(node)
    for pod in pods:
        if isinstance(pod, dict):
            target_node(pod)
    with contextlib.suppress(TemplateError):
        new_pod(ds, "n1", hash=HASH)


int_or_percent = st.one_of(
    st.integers(min_value=-3, max_value=300),
    st.sampled_from(["0%", "10%", "100%", "150%", "abc", "-5%", "5", "", "%"]),
    st.booleans(),
    st.none(),
    junk,
)
strategies = st.fixed_dictionaries(
    {},
    optional={
        "type": st.one_of(st.sampled_from(["RollingUpdate", "OnDelete", "Recreate", ""]), junk),
        "rollingUpdate": maybe(st.fixed_dictionaries({}, optional={"maxUnavailable": int_or_percent,
                                                                   "maxSurge": int_or_percent})),
    },
)


@SETTINGS
@given(
    base_surge=st.booleans(),
    strategy=strategies,
    selector=st.one_of(st.none(), junk, st.just({"matchLabels": {"app": "other"}})),
    min_ready=st.one_of(st.integers(min_value=-2, max_value=30), junk),
    history_limit=st.one_of(st.integers(min_value=-2, max_value=12), junk),
    pods=st.lists(maybe(malformed_pods), max_size=5),
    revisions=st.lists(junk, max_size=3),
)
def test_the_sync_decisions_never_raise_on_malformed_rollouts(
    *, base_surge: bool, strategy: Any, selector: Any, min_ready: Any, history_limit: Any,
    pods: list[Any], revisions: list[Any],
) -> None:
    """Bad int-or-percent values, unknown strategies and junk specs are refused by validation, never raised.

    This is the controller's order: ``validate_daemonset`` first, and only a DaemonSet without
    problems reaches the rolling-update and history planners, which then must not raise either.
    """
    ds = make_ds(strategy=surge_strategy(1) if base_surge else None)
    ds["spec"]["updateStrategy"] = strategy
    if selector is not None:
        ds["spec"]["selector"] = selector
    ds["spec"]["minReadySeconds"] = min_ready
    ds["spec"]["revisionHistoryLimit"] = history_limit
    if validate_daemonset(ds):
        return
    grouped = group_by_node(pods)
    plan_rolling_update(ds=ds, nodes_should_run=set(grouped) | {"n1"}, pods_by_node=grouped, hash=HASH, now=T0)
    history = plan_history(ds=ds, revisions=[r for r in revisions if isinstance(r, dict)], pods=pods)
    plan_history_cleanup(ds=ds, old_revisions=list(history.old), pods=pods)
