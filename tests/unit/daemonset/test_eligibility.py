"""Node eligibility: should_run / should_continue_running for every placement rule and taint case."""

from __future__ import annotations

from typing import Any

import pytest

from dsctl.daemonset.eligibility import Eligibility, Fit, eligibility_signature, evaluate_nodes, node_should_run

from .objects import SIMPLE, SIMPLE2, make_ds, make_node, taint

YES = (True, True)
NO = (False, False)


def decided(fit: Fit) -> tuple[bool, bool]:
    """The decision of a verdict, without the reason that explains it."""
    return fit.should_run, fit.should_continue_running
KEEP_ONLY = (False, True)


def _affinity(*terms: dict[str, Any]) -> dict[str, Any]:
    return {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}
            }
        }
    }


def _expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    result: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        result["values"] = list(values)
    return result


def _resources(memory: str, cpu: str) -> dict[str, Any]:
    return {
        "containers": [
            {
                "name": "c",
                "image": "i",
                "resources": {"requests": {"memory": memory, "cpu": cpu}},
                "ports": [{"containerPort": 80, "hostPort": 666}],
            }
        ]
    }


# Upstream TestNodeShouldRunDaemonPod, re-expressed: a node labelled like the DS pods.
@pytest.mark.parametrize(
    ("pod_spec", "unschedulable", "expected"),
    [
        pytest.param(_resources("50M", "0.5"), False, YES, id="fits"),
        pytest.param(_resources("200M", "0.5"), False, YES, id="resources-ignored"),
        pytest.param({"nodeName": "other-node"}, False, NO, id="template-node-name-other"),
        pytest.param({"nodeName": "test-node"}, False, YES, id="template-node-name-same"),
        pytest.param({"nodeSelector": SIMPLE2}, False, NO, id="node-selector-mismatch"),
        pytest.param({"nodeSelector": SIMPLE}, False, YES, id="node-selector-match"),
        pytest.param(
            _affinity({"matchExpressions": [_expr("type", "In", "test")]}), False, NO, id="affinity-mismatch"
        ),
        pytest.param(
            _affinity({"matchExpressions": [_expr("type", "In", "production")]}),
            False,
            YES,
            id="affinity-match",
        ),
        pytest.param({}, True, YES, id="unschedulable-node-ignored"),
    ],
)
def test_upstream_node_should_run_cases(
    pod_spec: dict[str, Any], unschedulable: bool, expected: tuple[bool, bool]
) -> None:
    """Only nodeName, nodeSelector and required affinity decide; resources, ports and cordons do not."""
    ds = make_ds(pod_spec=pod_spec)
    node = make_node("test-node", labels=SIMPLE, unschedulable=unschedulable)
    assert decided(node_should_run(ds, node)) == expected


LABELS = {"zone": "a", "cores": "8", "gpu": "yes"}


@pytest.mark.parametrize(
    ("terms", "expected"),
    [
        pytest.param([{"matchExpressions": [_expr("zone", "In", "a", "b")]}], True, id="in-hit"),
        pytest.param([{"matchExpressions": [_expr("zone", "In", "b")]}], False, id="in-miss"),
        pytest.param([{"matchExpressions": [_expr("missing", "In", "a")]}], False, id="in-absent-key"),
        pytest.param([{"matchExpressions": [_expr("zone", "NotIn", "b")]}], True, id="notin-hit"),
        pytest.param([{"matchExpressions": [_expr("zone", "NotIn", "a")]}], False, id="notin-miss"),
        pytest.param([{"matchExpressions": [_expr("missing", "NotIn", "a")]}], True, id="notin-absent-key"),
        pytest.param([{"matchExpressions": [_expr("gpu", "Exists")]}], True, id="exists-hit"),
        pytest.param([{"matchExpressions": [_expr("tpu", "Exists")]}], False, id="exists-miss"),
        pytest.param([{"matchExpressions": [_expr("tpu", "DoesNotExist")]}], True, id="doesnotexist-hit"),
        pytest.param([{"matchExpressions": [_expr("gpu", "DoesNotExist")]}], False, id="doesnotexist-miss"),
        pytest.param([{"matchExpressions": [_expr("cores", "Gt", "4")]}], True, id="gt-hit"),
        pytest.param([{"matchExpressions": [_expr("cores", "Gt", "8")]}], False, id="gt-equal-is-miss"),
        pytest.param([{"matchExpressions": [_expr("zone", "Gt", "1")]}], False, id="gt-non-numeric-label"),
        pytest.param([{"matchExpressions": [_expr("cores", "Lt", "16")]}], True, id="lt-hit"),
        pytest.param([{"matchExpressions": [_expr("cores", "Lt", "8")]}], False, id="lt-equal-is-miss"),
        pytest.param([{"matchExpressions": [_expr("missing", "Lt", "8")]}], False, id="lt-absent-key"),
        pytest.param([{"matchFields": [_expr("metadata.name", "In", "n1")]}], True, id="fields-in-hit"),
        pytest.param([{"matchFields": [_expr("metadata.name", "In", "n2")]}], False, id="fields-in-miss"),
        pytest.param([{"matchFields": [_expr("metadata.name", "NotIn", "n2")]}], True, id="fields-notin-hit"),
        pytest.param(
            [{"matchFields": [_expr("metadata.name", "NotIn", "n1")]}], False, id="fields-notin-miss"
        ),
        pytest.param(
            [{"matchExpressions": [_expr("zone", "In", "a"), _expr("gpu", "DoesNotExist")]}],
            False,
            id="expressions-are-anded",
        ),
        pytest.param(
            [
                {
                    "matchExpressions": [_expr("zone", "In", "a")],
                    "matchFields": [_expr("metadata.name", "In", "n2")],
                }
            ],
            False,
            id="fields-and-expressions-anded",
        ),
        pytest.param(
            [
                {"matchExpressions": [_expr("zone", "In", "b")]},
                {"matchExpressions": [_expr("gpu", "Exists")]},
            ],
            True,
            id="terms-are-ored",
        ),
        pytest.param([], False, id="no-terms-matches-nothing"),
        pytest.param([{}], False, id="empty-term-matches-nothing"),
        pytest.param(
            [
                {"matchExpressions": [_expr("zone", "Bogus", "a")]},
                {"matchExpressions": [_expr("zone", "In", "a")]},
            ],
            True,
            id="malformed-term-skipped",
        ),
    ],
)
def test_required_affinity_operators(terms: list[dict[str, Any]], expected: bool) -> None:
    """Every node-selector operator and matchFields decide eligibility (both answers together)."""
    ds = make_ds(pod_spec=_affinity(*terms))
    assert decided(node_should_run(ds, make_node("n1", labels=LABELS))) == (expected, expected)


@pytest.mark.parametrize(
    ("node_selector", "terms", "expected"),
    [
        pytest.param({"zone": "a"}, [{"matchExpressions": [_expr("gpu", "Exists")]}], True, id="both-hold"),
        pytest.param(
            {"zone": "b"}, [{"matchExpressions": [_expr("gpu", "Exists")]}], False, id="selector-fails"
        ),
        pytest.param(
            {"zone": "a"}, [{"matchExpressions": [_expr("tpu", "Exists")]}], False, id="affinity-fails"
        ),
    ],
)
def test_node_selector_and_affinity_both_apply(
    node_selector: dict[str, str], terms: list[dict[str, Any]], expected: bool
) -> None:
    """nodeSelector and required affinity are ANDed."""
    ds = make_ds(pod_spec={"nodeSelector": node_selector, **_affinity(*terms)})
    assert node_should_run(ds, make_node("n1", labels=LABELS))[0] is expected


DEDICATED_TOLERATION = {"key": "dedicated", "operator": "Equal", "value": "user1", "effect": "NoSchedule"}


@pytest.mark.parametrize(
    ("taints", "pod_spec", "expected"),
    [
        pytest.param([taint("dedicated", "NoSchedule", "user1")], {}, KEEP_ONLY, id="noschedule-untolerated"),
        pytest.param([taint("dedicated", "NoExecute", "user1")], {}, NO, id="noexecute-untolerated"),
        pytest.param(
            [taint("dedicated", "PreferNoSchedule", "user1")], {}, YES, id="prefer-noschedule-ignored"
        ),
        pytest.param(
            [taint("dedicated", "NoSchedule", "user1")],
            {"tolerations": [DEDICATED_TOLERATION]},
            YES,
            id="noschedule-tolerated",
        ),
        pytest.param(
            [taint("dedicated", "NoSchedule", "user2")],
            {"tolerations": [DEDICATED_TOLERATION]},
            KEEP_ONLY,
            id="toleration-value-mismatch",
        ),
        pytest.param(
            [taint("dedicated", "NoSchedule", "user1"), taint("evict", "NoExecute")],
            {"tolerations": [DEDICATED_TOLERATION]},
            NO,
            id="noexecute-beside-tolerated-noschedule",
        ),
        pytest.param(
            [taint("a", "NoSchedule"), taint("b", "NoExecute")],
            {"tolerations": [{"operator": "Exists"}]},
            YES,
            id="wildcard-toleration",
        ),
        pytest.param(
            [taint("b", "NoExecute")],
            {"tolerations": [{"key": "b", "operator": "Exists", "effect": "NoSchedule"}]},
            NO,
            id="toleration-for-other-effect",
        ),
        pytest.param([taint("node.kubernetes.io/not-ready", "NoExecute")], {}, YES, id="not-ready-auto"),
        pytest.param([taint("node.kubernetes.io/unreachable", "NoExecute")], {}, YES, id="unreachable-auto"),
        pytest.param(
            [
                taint("node.kubernetes.io/disk-pressure", "NoSchedule"),
                taint("node.kubernetes.io/memory-pressure", "NoSchedule"),
                taint("node.kubernetes.io/pid-pressure", "NoSchedule"),
            ],
            {},
            YES,
            id="pressure-auto",
        ),
        pytest.param([taint("node.kubernetes.io/unschedulable", "NoSchedule")], {}, YES, id="cordoned-auto"),
        pytest.param(
            [taint("node.kubernetes.io/network-unavailable", "NoSchedule")],
            {},
            KEEP_ONLY,
            id="network-unavailable-pod-network",
        ),
        pytest.param(
            [taint("node.kubernetes.io/network-unavailable", "NoSchedule")],
            {"hostNetwork": True},
            YES,
            id="network-unavailable-host-network",
        ),
        pytest.param(
            [taint("node.kubernetes.io/memory-pressure", "NoExecute")],
            {},
            NO,
            id="auto-toleration-is-effect-specific",
        ),
        pytest.param(["garbage", {"effect": 3}], {}, YES, id="malformed-taints-ignored"),
    ],
)
def test_taints(taints: list[Any], pod_spec: dict[str, Any], expected: tuple[bool, bool]) -> None:
    """Untolerated NoSchedule blocks new pods only; untolerated NoExecute also evicts."""
    ds = make_ds(pod_spec=pod_spec)
    assert decided(node_should_run(ds, make_node("n1", taints=taints))) == expected


def test_not_ready_condition_without_taint_is_eligible() -> None:
    """A NotReady node without the not-ready taint is judged by its taints only."""
    assert decided(node_should_run(make_ds(), make_node("n1", ready=False))) == YES


@pytest.mark.parametrize(
    ("ds", "node", "expected"),
    [
        pytest.param({}, {}, YES, id="both-empty"),
        pytest.param({"spec": "x"}, {"metadata": "y", "spec": {"taints": "z"}}, YES, id="wrong-types"),
        pytest.param(
            {"spec": {"template": {"spec": {"nodeSelector": "zone=a"}}}},
            make_node("n1"),
            NO,
            id="selector-not-a-map-matches-nothing",
        ),
        pytest.param(
            {"spec": {"template": {"spec": {"nodeName": "n2"}}}}, make_node("n1"), NO, id="bare-node-name"
        ),
    ],
)
def test_malformed_objects(ds: dict[str, Any], node: dict[str, Any], expected: tuple[bool, bool]) -> None:
    """Malformed DaemonSets and nodes never raise."""
    assert decided(node_should_run(ds, node)) == expected


def test_evaluate_nodes_keys_by_name_and_skips_nameless() -> None:
    """evaluate_nodes returns one verdict per named node."""
    ds = make_ds(pod_spec={"nodeSelector": {"color": "blue"}})
    nodes = [make_node("a", labels={"color": "blue"}), make_node("b"), {"metadata": {}}]
    assert {n: decided(f) for n, f in evaluate_nodes(ds, nodes).items()} == {"a": YES, "b": NO}


def test_eligibility_is_reusable_across_nodes() -> None:
    """One compiled Eligibility gives the same answers as the one-shot form."""
    ds = make_ds(pod_spec={"nodeSelector": {"color": "blue"}})
    rules = Eligibility.of(ds)
    for node in [make_node("a", labels={"color": "blue"}), make_node("b", taints=[taint("x", "NoExecute")])]:
        assert rules.check(node) == node_should_run(ds, node)


@pytest.mark.parametrize(
    ("pod_spec", "free"),
    [
        pytest.param({}, True, id="no-placement"),
        pytest.param({"nodeSelector": {}}, True, id="empty-node-selector"),
        pytest.param({"affinity": {"nodeAffinity": {}}}, True, id="affinity-without-required-terms"),
        pytest.param({"nodeSelector": {"zone": "a"}}, False, id="node-selector"),
        pytest.param({"nodeSelector": "zone=a"}, False, id="malformed-node-selector-matches-nothing"),
        pytest.param(_affinity(), False, id="required-affinity-without-terms-matches-nothing"),
    ],
)
def test_placement_check_skipped_only_when_no_node_can_fail_it(pod_spec: dict[str, Any], free: bool) -> None:
    """Eligibility skips the nodeSelector/affinity check only for a template that constrains no node."""
    rules = Eligibility.of(make_ds(pod_spec=pod_spec))
    assert rules.placement_free is free
    node = make_node("n1", labels={"zone": "b"})
    assert decided(rules.check(node)) == (YES if free else NO)


def _with(node: dict[str, Any], **changes: Any) -> dict[str, Any]:
    result = {k: dict(v) if isinstance(v, dict) else v for k, v in node.items()}
    for path, value in changes.items():
        section, key = path.split("__")
        result[section] = {**result[section], key: value}
    return result


BASE = make_node("n1", labels={"a": "1"}, taints=[taint("x", "NoSchedule"), taint("y", "NoExecute")])


@pytest.mark.parametrize(
    ("changed", "same"),
    [
        pytest.param(
            _with(BASE, status__conditions=[{"type": "Ready", "status": "False"}]),
            True,
            id="status-change-ignored",
        ),
        pytest.param(_with(BASE, metadata__resourceVersion="99"), True, id="resource-version-ignored"),
        pytest.param(_with(BASE, metadata__annotations={"k": "v"}), True, id="annotations-ignored"),
        pytest.param(
            _with(BASE, spec__taints=[taint("y", "NoExecute"), taint("x", "NoSchedule")]),
            True,
            id="taint-order-ignored",
        ),
        pytest.param(
            _with(
                BASE,
                spec__taints=[
                    {**taint("x", "NoSchedule"), "timeAdded": "2024-01-01T00:00:00Z"},
                    taint("y", "NoExecute"),
                ],
            ),
            True,
            id="taint-time-added-ignored",
        ),
        pytest.param(_with(BASE, spec__unschedulable=True), True, id="cordon-ignored"),
        pytest.param(_with(BASE, metadata__labels={"a": "2"}), False, id="label-value"),
        pytest.param(_with(BASE, metadata__labels={"a": "1", "b": "1"}), False, id="label-added"),
        pytest.param(_with(BASE, spec__taints=[taint("x", "NoSchedule")]), False, id="taint-removed"),
        pytest.param(
            _with(BASE, spec__taints=[taint("x", "NoExecute"), taint("y", "NoExecute")]),
            False,
            id="taint-effect",
        ),
    ],
)
def test_eligibility_signature(changed: dict[str, Any], same: bool) -> None:
    """The signature changes exactly when labels or taints (the eligibility inputs) change."""
    assert (eligibility_signature(changed) == eligibility_signature(BASE)) is same


@pytest.mark.parametrize(
    ("pod_spec", "node", "expected"),
    [
        pytest.param({}, make_node("n1", labels=SIMPLE), Fit(True, True, ""), id="eligible-has-no-reason"),
        pytest.param({"nodeName": "n2"}, make_node("n1"), Fit(False, False, "nodeName"), id="template-node-name"),
        pytest.param({"nodeSelector": SIMPLE2}, make_node("n1", labels=SIMPLE), Fit(False, False, "nodeSelector"),
                     id="node-selector"),
        pytest.param({"nodeSelector": SIMPLE, **_affinity({"matchExpressions": [_expr("type", "In", "test")]})},
                     make_node("n1", labels=SIMPLE), Fit(False, False, "nodeAffinity"),
                     id="affinity-when-the-selector-passes"),
        pytest.param({"nodeSelector": SIMPLE2, **_affinity({"matchExpressions": [_expr("type", "In", "test")]})},
                     make_node("n1", labels=SIMPLE), Fit(False, False, "nodeSelector"),
                     id="selector-named-first-when-both-fail"),
        pytest.param({}, make_node("n1", taints=[taint("gpu", "NoSchedule", "a100")]),
                     Fit(False, True, "taint gpu=a100:NoSchedule"), id="noschedule-taint-with-value"),
        pytest.param({}, make_node("n1", taints=[taint("PreferNoSchedule", "PreferNoSchedule"),
                                                 taint("dedicated", "NoExecute")]),
                     Fit(False, False, "taint dedicated:NoExecute"), id="first-blocking-taint"),
    ],
)
def test_verdict_names_the_rule_that_keeps_the_pod_off(pod_spec: dict[str, Any], node: dict[str, Any],
                                                        expected: Fit) -> None:
    """A negative verdict names the first placement rule the node fails; a positive one names none."""
    assert node_should_run(make_ds(pod_spec=pod_spec), node) == expected


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        pytest.param((), (False, True), id="untolerated-noschedule"),
        pytest.param(({"key": "dsctl.io/agents-not-ready", "operator": "Exists", "effect": "NoSchedule"},),
                     (True, True), id="the-controllers-extra-toleration"),
    ],
)
def test_extra_tolerations_count_as_the_pods_own(extra: tuple[dict[str, str], ...],
                                                 expected: tuple[bool, bool]) -> None:
    """The readiness taint rules a node out only for a pod that would not get its toleration."""
    node = make_node("n1", taints=[{"key": "dsctl.io/agents-not-ready", "effect": "NoSchedule"}])
    assert node_should_run(make_ds(), node, extra=extra)[:2] == expected
    assert Eligibility.of(make_ds(), extra=extra).check(node)[:2] == expected
