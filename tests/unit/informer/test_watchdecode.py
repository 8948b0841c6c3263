"""The lean pod decoder gives exactly what decode_event, then the projection, gives."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsctl.informer.projections import make_pod_projection, project_node
from dsctl.informer.watchdecode import (
    ListPage,
    WatchEvent,
    event_decoder,
    general_decoder,
    general_page_decoder,
    lean_pod_decoder,
)
from dsctl.kube.errors import ConnectionFailed, Gone, TooManyRequests
from tests.support.profiles import examples

KEEP = "dsctl.io/in-place-update"
PROJECT = make_pod_projection(keep_annotations=(KEEP,))

Obj = dict[str, Any]

POD: Obj = {
    "kind": "Pod",
    "apiVersion": "v1",
    "metadata": {
        "name": "agent-7",
        "generateName": "agent-",
        "namespace": "kube-system",
        "uid": "u-7",
        "resourceVersion": "1007",
        "creationTimestamp": "2026-11-30T10:00:00Z",
        "labels": {"app": "agent", "controller-revision-hash": "7d9f"},
        "annotations": {KEEP: "rev-2", "kubectl.kubernetes.io/default-container": "agent"},
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent",
                             "uid": "ds-uid", "controller": True, "blockOwnerDeletion": True}],
        "managedFields": [{"manager": "kube-controller-manager", "fieldsV1": {"f:spec": {}}}],
    },
    "spec": {
        "containers": [{"name": "agent", "image": "agent:1", "ports": [{"containerPort": 9100}]}],
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": ["node-7"]}]}]}}},
        "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists"}],
        "nodeName": "node-7",
        "priority": 0,
    },
    "status": {
        "phase": "Running",
        "conditions": [
            {"type": "Initialized", "status": "True", "lastProbeTime": None,
             "lastTransitionTime": "2026-11-30T10:00:00Z"},
            {"type": "Ready", "status": "True", "lastProbeTime": None,
             "lastTransitionTime": "2026-11-30T10:00:03Z"},
        ],
        "hostIP": "10.1.0.7",
        "containerStatuses": [{"name": "agent", "ready": True, "restartCount": 1,
                               "state": {"running": {"startedAt": "2026-11-30T10:00:02Z"}}}],
    },
}


def _prepare(obj: Obj) -> Obj:
    """What the reflector does to a watched object: fill in apiVersion/kind, then project."""
    if "kind" not in obj:
        obj["apiVersion"] = "v1"
        obj["kind"] = "Pod"
    return PROJECT(obj)


GENERAL = general_decoder(_prepare)
LEAN = event_decoder(PROJECT, prepare=_prepare, api_version="v1", kind="Pod").line


def _assert_decodes_alike(line: bytes) -> None:
    """The lean decoder gives what the general path gives, or fails as it does."""
    try:
        expected = GENERAL(line)
    except ConnectionFailed:
        with pytest.raises(ConnectionFailed):
            LEAN(line)
        return
    assert LEAN(line) == expected


def _must_not_fall_back(line: bytes | memoryview) -> WatchEvent:
    raise AssertionError(f"fell back to the general path: {bytes(line)[:80]!r}")


STRICT_DECODER = lean_pod_decoder(PROJECT, general=_must_not_fall_back, api_version="v1", kind="Pod")
STRICT = STRICT_DECODER.line


def _line(obj: Any, kind: str = "MODIFIED") -> bytes:
    return orjson.dumps({"type": kind, "object": obj})


def _status(code: int, reason: str) -> Obj:
    return {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code,
            "reason": reason, "message": f"{reason} happened"}


def _with(path: str, value: Any) -> Obj:
    """POD with the dotted ``path`` set to ``value`` (``...`` deletes it)."""
    pod = copy.deepcopy(POD)
    *parents, last = path.split(".")
    target: Any = pod
    for part in parents:
        target = target[int(part)] if isinstance(target, list) else target[part]
    if value is ...:
        del target[last]
    elif isinstance(target, list):
        target[int(last)] = value
    else:
        target[last] = value
    return pod


SHAPES = [
    pytest.param(POD, id="daemon-pod"),
    pytest.param({"metadata": {"name": "p", "namespace": "d"}}, id="minimal-no-kind"),
    pytest.param(_with("apiVersion", ...), id="kind-without-apiVersion"),
    pytest.param(_with("apiVersion", None), id="apiVersion-null"),
    pytest.param(_with("kind", 5), id="kind-not-a-string"),
    pytest.param(_with("metadata", ...), id="no-metadata"),
    pytest.param(_with("metadata", None), id="metadata-null"),
    pytest.param(_with("metadata", "x"), id="metadata-a-string"),
    pytest.param(_with("metadata.name", ...), id="no-name"),
    pytest.param(_with("metadata.name", None), id="name-null"),
    pytest.param(_with("metadata.name", 12), id="name-a-number"),
    pytest.param(_with("metadata.namespace", None), id="namespace-null"),
    pytest.param(_with("metadata.namespace", ...), id="cluster-scoped"),
    pytest.param(_with("metadata.uid", 5), id="uid-a-number"),
    pytest.param(_with("metadata.deletionTimestamp", "2026-11-30T11:00:00Z"), id="terminating"),
    pytest.param(_with("metadata.labels", {}), id="labels-empty"),
    pytest.param(_with("metadata.labels", None), id="labels-null"),
    pytest.param(_with("metadata.labels", ["a"]), id="labels-a-list"),
    pytest.param(_with("metadata.labels", {"a": 1, "b": None}), id="labels-not-strings"),
    pytest.param(_with("metadata.labels", {"b": "2", "a": "1"}), id="labels-other-order"),
    pytest.param(_with("metadata.ownerReferences", []), id="owners-empty"),
    pytest.param(_with("metadata.ownerReferences", None), id="owners-null"),
    pytest.param(_with("metadata.ownerReferences", [{"uid": "a", "controller": False}, 3]),
                 id="owners-with-a-non-object"),
    pytest.param(_with("metadata.ownerReferences", [{"uid": "a", "x": {"y": 1}}]),
                 id="owners-with-nested-value"),
    pytest.param(_with("metadata.annotations", ...), id="no-annotations"),
    pytest.param(_with("metadata.annotations", {"other": "x"}), id="kept-annotation-absent"),
    pytest.param(_with("metadata.annotations", {KEEP: None}), id="kept-annotation-null"),
    pytest.param(_with("metadata.annotations", None), id="annotations-null"),
    pytest.param(_with("spec", ...), id="no-spec"),
    pytest.param(_with("spec", None), id="spec-null"),
    pytest.param(_with("spec", []), id="spec-a-list"),
    pytest.param(_with("spec.nodeName", ""), id="nodeName-empty"),
    pytest.param(_with("spec.nodeName", None), id="nodeName-null"),
    pytest.param(_with("spec.nodeName", 3), id="nodeName-a-number"),
    pytest.param(_with("spec.affinity", None), id="affinity-null"),
    pytest.param(_with("spec.affinity", {"podAntiAffinity": {}}), id="affinity-without-node"),
    pytest.param(_with("spec.affinity.nodeAffinity", None), id="nodeAffinity-null"),
    pytest.param(_with("spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution",
                       None), id="required-null"),
    pytest.param(_with("spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution",
                       {"nodeSelectorTerms": [{"matchExpressions": [
                           {"key": "pool", "operator": "In", "values": ["a", "b"]}]}]}),
                 id="required-by-expression"),
    pytest.param(_with("spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution",
                       7), id="required-a-number"),
    pytest.param(_with("spec.affinity.nodeAffinity",
                       {"preferredDuringSchedulingIgnoredDuringExecution": []}),
                 id="only-preferred-affinity"),
    pytest.param(_with("status", ...), id="no-status"),
    pytest.param(_with("status", None), id="status-null"),
    pytest.param(_with("status.phase", None), id="phase-null"),
    pytest.param(_with("status.phase", 1), id="phase-a-number"),
    pytest.param(_with("status.conditions", []), id="conditions-empty"),
    pytest.param(_with("status.conditions", None), id="conditions-null"),
    pytest.param(_with("status.conditions.1.type", "ContainersReady"), id="no-ready-condition"),
    pytest.param(_with("status.conditions.1.status", ...), id="ready-without-status"),
    pytest.param(_with("status.conditions.1.lastTransitionTime", ...), id="ready-without-time"),
    pytest.param(_with("status.conditions.0", {"type": "Ready", "status": "False"}),
                 id="two-ready-conditions"),
    pytest.param(_with("status.conditions.0", "Ready"), id="condition-a-string"),
    pytest.param(_with("status.conditions.1.status", True), id="ready-status-a-bool"),
    pytest.param(_with("status.containerStatuses", []), id="container-statuses-empty"),
    pytest.param(_with("status.containerStatuses.0.name", ...), id="container-without-name"),
    pytest.param(_with("status.containerStatuses", [{"name": "a", "restartCount": 2}, {"restartCount": 1},
                                                    {"name": "b"}]), id="three-containers-one-unnamed"),
    pytest.param(_with("status.containerStatuses", [{"restartCount": 1}, {"restartCount": 2}]),
                 id="two-containers-unnamed"),
    pytest.param(_with("status.containerStatuses.0.restartCount", ...), id="no-restart-count"),
    pytest.param(_with("status.containerStatuses.0.restartCount", None), id="restart-count-null"),
    pytest.param(_with("status.containerStatuses.0.restartCount", True), id="restart-count-bool"),
    pytest.param(_with("status.containerStatuses.0.restartCount", 1.5), id="restart-count-float"),
    pytest.param(_with("status.containerStatuses.0.restartCount", 2**64 - 1), id="restart-count-u64-max"),
    pytest.param(_with("status.containerStatuses.0.restartCount", -(2**63)), id="restart-count-i64-min"),
    pytest.param(_with("metadata.name", "caf\u00e9-\U0001f600"), id="non-ascii-name"),
]


@pytest.mark.parametrize("kind", ["ADDED", "MODIFIED", "DELETED"])
@pytest.mark.parametrize("pod", SHAPES)
def test_lean_decode_equals_projection_of_the_full_object(pod: Obj, kind: str) -> None:
    """Every shape decodes to what the general path (orjson, fill-in, projection) gives."""
    _assert_decodes_alike(_line(pod, kind))


@pytest.mark.parametrize("pod", [
    pytest.param(POD, id="daemon-pod"),
    pytest.param({"metadata": {"name": "p", "namespace": "d"}}, id="minimal-no-kind"),
    pytest.param(_with("metadata.annotations", ...), id="no-annotations"),
    pytest.param(_with("spec.affinity", ...), id="bound-pod-without-affinity"),
    pytest.param(_with("status", {"phase": "Pending"}), id="pending"),
    pytest.param(_with("metadata.labels", {}), id="labels-empty"),
])
def test_ordinary_pods_take_the_lean_path(pod: Obj) -> None:
    """Pods as kube-apiserver sends them never need the general path."""
    assert STRICT(_line(pod)) == GENERAL(_line(pod))


def test_a_run_of_ordinary_lines_decodes_as_each_line() -> None:
    """A chunk's whole lines decode in one call to exactly the events of each line; blank
    (keep-alive) lines are skipped."""
    pods = [POD, {"metadata": {"name": "p", "namespace": "d"}}, _with("status", {"phase": "Pending"}),
            _with("spec.affinity", ...), _with("metadata.labels", {})]
    lines = [_line(pod, kind) for pod in pods for kind in ("ADDED", "MODIFIED", "DELETED")]
    run = b"\n".join(lines) + b"\n\n  \r\n"
    assert STRICT_DECODER.run is not None
    assert STRICT_DECODER.run(memoryview(run)) == [GENERAL(line) for line in lines]


@pytest.mark.parametrize("pod", SHAPES)
def test_a_run_holding_any_shape_decodes_alike_or_refuses(pod: Obj) -> None:
    """A run either decodes to the general path's events or raises (the watch then decodes
    its lines one by one): it never returns anything else."""
    lines = [_line(POD), _line(pod), _line(_with("metadata.name", "agent-8"))]
    run = memoryview(b"\n".join(lines) + b"\n")
    assert STRICT_DECODER.run is not None
    try:
        expected = [GENERAL(line) for line in lines]
    except ConnectionFailed:
        with pytest.raises(Exception):  # noqa: B017 - any refusal will do
            STRICT_DECODER.run(run)
        return
    try:
        got = STRICT_DECODER.run(run)
    except Exception:  # a refusal is allowed
        return
    assert got == expected


@pytest.mark.parametrize("line", [
    pytest.param(_line(_status(410, "Expired"), "ERROR"), id="error"),
    pytest.param(_line({"kind": "Pod", "apiVersion": "v1", "metadata": {"resourceVersion": "9"}},
                       "BOOKMARK"), id="bookmark"),
    pytest.param(b"not json", id="not-json"),
])
def test_a_run_with_a_line_the_lean_path_does_not_own_refuses(line: bytes) -> None:
    """ERROR events, bookmarks and malformed lines are the line decoder's to decide."""
    assert STRICT_DECODER.run is not None
    with pytest.raises(Exception):  # noqa: B017 - any refusal will do
        STRICT_DECODER.run(memoryview(_line(POD) + b"\n" + line + b"\n"))


def test_an_affinity_the_projection_drops_is_remembered_too() -> None:
    """Raw JSON that projects to nothing (anti-affinity only) is looked up, not parsed, the next time."""
    from dsctl.informer import watchdecode

    pod = _with("spec.affinity", {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "x"}}}]}})
    assert STRICT(_line(pod)) == GENERAL(_line(pod))
    raw = orjson.dumps(pod["spec"]["affinity"])
    assert watchdecode._AFFINITY.table.get(raw) is watchdecode.NOTHING
    assert STRICT(_line(pod)) == GENERAL(_line(pod))


def test_nesting_too_deep_for_msgspec_is_left_to_orjson() -> None:
    """A skipped field nested deeper than msgspec goes (but within orjson's limit) decodes as orjson decides."""
    pod = _with("spec.containers.0.args", "DEEP")
    line = _line(pod).replace(b'"DEEP"', b"[" * 1000 + b'"x"' + b"]" * 1000)
    _assert_decodes_alike(line)


def test_a_run_reads_values_not_lines() -> None:
    """Documented laxness: two events on one line decode as two where the line decoder refuses."""
    assert STRICT_DECODER.run is not None
    two = _line(POD) + b" " + _line(_with("metadata.name", "agent-8"))
    assert len(STRICT_DECODER.run(memoryview(two + b"\n"))) == 2
    with pytest.raises(ConnectionFailed):
        LEAN(two)


def test_shared_values_are_the_projections() -> None:
    """Labels, owners, affinity and Ready decoded lean are the very objects the list path caches."""
    listed = PROJECT(copy.deepcopy(POD))
    _, watched = STRICT(_line(POD))
    _, again = STRICT(_line(_with("metadata.resourceVersion", "1008")))
    for got in (watched, again):
        assert got["metadata"]["labels"] is listed["metadata"]["labels"]
        assert got["metadata"]["ownerReferences"] is listed["metadata"]["ownerReferences"]
        assert got["spec"]["affinity"] is listed["spec"]["affinity"]
        assert got["status"]["conditions"] is listed["status"]["conditions"]
        assert got["status"]["containerStatuses"] is listed["status"]["containerStatuses"]
    assert watched["metadata"]["namespace"] is listed["metadata"]["namespace"]
    assert watched["spec"]["nodeName"] is listed["spec"]["nodeName"]


def test_bookmark_keeps_its_annotations() -> None:
    """A BOOKMARK comes back as received: the streaming list reads its annotations."""
    bookmark = {"kind": "Pod", "apiVersion": "v1", "metadata": {
        "resourceVersion": "9", "annotations": {"k8s.io/initial-events-end": "true"}}}
    assert LEAN(_line(bookmark, "BOOKMARK")) == ("BOOKMARK", bookmark)


@pytest.mark.parametrize(("line", "error"), [
    pytest.param(_line(_status(410, "Expired"), "ERROR"), Gone, id="error-410"),
    pytest.param(_line(_status(429, "TooManyRequests"), "ERROR"), TooManyRequests, id="error-429"),
    pytest.param(orjson.dumps(_status(410, "Expired")), Gone, id="bare-status-line"),
    pytest.param(b'{"type": "MODIFIED", "object": {"metadata": {"name": ', ConnectionFailed,
                 id="truncated"),
    pytest.param(b"not json", ConnectionFailed, id="not-json"),
    pytest.param(b"[1, 2]", ConnectionFailed, id="not-an-object"),
    pytest.param(_line(POD, "SOMETHING"), ConnectionFailed, id="unknown-type"),
    pytest.param(_line(None), ConnectionFailed, id="object-null"),
    pytest.param(orjson.dumps({"object": POD}), ConnectionFailed, id="no-type"),
    pytest.param(orjson.dumps({"type": 3, "object": POD}), ConnectionFailed, id="type-a-number"),
])
def test_errors_are_those_of_decode_event(line: bytes, error: type[Exception]) -> None:
    """ERROR events and malformed lines raise exactly what the general path raises."""
    with pytest.raises(error) as general:
        GENERAL(line)
    with pytest.raises(error) as lean:
        LEAN(line)
    assert str(lean.value) == str(general.value)
    if isinstance(general.value, ConnectionFailed):
        assert isinstance(lean.value, ConnectionFailed)
        assert lean.value.reason == general.value.reason == "BadWatchEvent"


@pytest.mark.parametrize("count", [b"18446744073709551616", b"-9223372036854775809", b"1e2"])
def test_counts_orjson_reads_as_floats_decode_alike(count: bytes) -> None:
    """orjson reads integers beyond int64 as floats: the lean path gives the same value."""
    line = _line(POD).replace(b'"restartCount":1', b'"restartCount":' + count)
    assert LEAN(line) == GENERAL(line)


def test_memoryview_lines_decode_alike() -> None:
    """The watch hands lines as views of a chunk; a view decodes like the bytes."""
    chunk = b"junk\n" + _line(POD) + b"\n"
    view = memoryview(chunk)[5:-1]
    assert LEAN(view) == GENERAL(_line(POD))


def test_other_transforms_use_the_general_path() -> None:
    """Only a pod projection has a lean decoder; a node projection decodes in full, then projects."""
    seen: list[Obj] = []

    def prepare(obj: Obj) -> Obj:
        seen.append(obj)
        return project_node(obj)

    decoders = event_decoder(project_node, prepare=prepare, api_version="v1", kind="Node")
    assert decoders.run is None  # every chunk goes line by line
    decode: Callable[[bytes], WatchEvent] = decoders.line
    node = {"kind": "Node", "apiVersion": "v1", "metadata": {"name": "n", "uid": "u"},
            "status": {"capacity": {"cpu": "4"}}}
    assert decode(_line(node)) == ("MODIFIED", project_node(node))
    assert seen == [node]


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text("ab", max_size=2),
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.sampled_from("ab"), inner, max_size=2),
    max_leaves=4,
)
_PATHS = [
    "apiVersion", "kind", "metadata", "metadata.name", "metadata.namespace", "metadata.uid",
    "metadata.resourceVersion", "metadata.creationTimestamp", "metadata.deletionTimestamp",
    "metadata.labels", "metadata.labels.app", "metadata.annotations", f"metadata.annotations.{KEEP}",
    "metadata.ownerReferences", "metadata.ownerReferences.0", "metadata.ownerReferences.0.uid",
    "spec", "spec.nodeName", "spec.affinity", "spec.affinity.nodeAffinity",
    "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution",
    "status", "status.phase", "status.conditions", "status.conditions.1",
    "status.conditions.1.type", "status.conditions.1.status", "status.conditions.1.lastTransitionTime",
    "status.containerStatuses", "status.containerStatuses.0.name",
    "status.containerStatuses.0.restartCount",
]


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(changes=st.lists(st.tuples(st.sampled_from(_PATHS), _json | st.just(...)), max_size=3))
def test_random_shapes_decode_alike(changes: list[tuple[str, Any]]) -> None:
    """Any value at any projected field (or none) decodes as the general path decodes it."""
    pod: Any = copy.deepcopy(POD)
    for path, value in changes:
        try:
            pod = _with_in(pod, path, value)
        except (KeyError, IndexError, TypeError, ValueError):
            continue  # a parent replaced by an earlier change: nothing to set
    line = _line(pod)
    _assert_decodes_alike(line)


def _with_in(pod: Obj, path: str, value: Any) -> Obj:
    *parents, last = path.split(".")
    target: Any = pod
    for part in parents:
        target = target[int(part)] if isinstance(target, list) else target[part]
    if isinstance(target, list):
        if value is ...:
            del target[int(last)]
        else:
            target[int(last)] = value
    elif not isinstance(target, dict):
        raise TypeError(path)
    elif value is ...:
        target.pop(last, None)
    else:
        target[last] = value
    return pod


# -- list pages ---------------------------------------------------------------------------

LEAN_PAGE = event_decoder(PROJECT, prepare=_prepare, api_version="v1", kind="Pod").page


def _cached(page: ListPage) -> tuple[str, str, list[Obj]]:
    """What the reflector caches from a page: the items prepared, unless they are already."""
    items = page.items if page.prepared else [_prepare(item) for item in page.items]
    return page.resource_version, page.continue_, items


def _page(*items: Any, meta: Any = ..., **extra: Any) -> bytes:
    body: Obj = {"kind": "PodList", "apiVersion": "v1", **extra}
    body["metadata"] = {"resourceVersion": "42", "continue": "tok"} if meta is ... else meta
    body["items"] = list(items)
    return orjson.dumps(body)


def _item(pod: Any) -> Any:
    """A pod as a list carries it: without kind and apiVersion."""
    if not isinstance(pod, dict):
        return pod
    return {k: v for k, v in pod.items() if k not in ("kind", "apiVersion")}


@pytest.mark.parametrize("pod", SHAPES)
def test_a_page_decodes_to_what_the_general_path_caches(pod: Obj) -> None:
    """A page holding any shape, listed without or with kind, caches what decoding it whole
    and preparing each item caches."""
    for shown in (_item(pod), pod):
        body = _page(POD, shown, _with("metadata.name", "agent-8"))
        assert _cached(LEAN_PAGE(body)) == _cached(general_page_decoder(body))


def test_an_ordinary_page_is_decoded_straight_to_projections() -> None:
    """A page of pods as kube-apiserver lists them comes back prepared, and its shared values
    are the projection's."""
    body = _page(_item(POD), _item(_with("metadata.name", "agent-8")))
    page = LEAN_PAGE(body)
    assert page.prepared
    assert page[:2] == ("42", "tok")
    assert page.items == [_prepare(_item(POD)), _prepare(_item(_with("metadata.name", "agent-8")))]
    assert page.items[0]["metadata"]["labels"] is page.items[1]["metadata"]["labels"]


@pytest.mark.parametrize(("body", "expected"), [
    pytest.param(b'{"metadata":{"resourceVersion":"7"},"items":[]}', ("7", "", []), id="empty"),
    pytest.param(b'{"metadata":{"resourceVersion":"7"}}', ("7", "", []), id="no-items"),
    pytest.param(b'{"metadata":{"resourceVersion":"7"},"items":null}', ("7", "", []), id="items-null"),
    pytest.param(b'{"items":[]}', ("", "", []), id="no-metadata"),
    pytest.param(b'{"metadata":null,"items":[]}', ("", "", []), id="metadata-null"),
    pytest.param(b'{"metadata":{"continue":""},"items":[]}', ("", "", []), id="continue-empty"),
    pytest.param(b'{"metadata":{"resourceVersion":"7","continue":"c","remainingItemCount":3},"items":[]}',
                 ("7", "c", []), id="remaining-count"),
    pytest.param(b'{"metadata":{"resourceVersion":7},"items":[]}', (7, "", []), id="rv-a-number"),
])
def test_page_metadata_reads_as_the_general_path_reads_it(body: bytes, expected: tuple[Any, ...]) -> None:
    """The resourceVersion and continue token are what the general path reads, absent or odd."""
    assert _cached(LEAN_PAGE(body)) == _cached(general_page_decoder(body)) == expected


def test_a_page_that_is_not_json_fails_as_orjson_fails() -> None:
    """A body that is not JSON raises what decoding it with orjson raises."""
    with pytest.raises(orjson.JSONDecodeError):
        LEAN_PAGE(b'{"items": [')


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(changes=st.lists(st.tuples(st.sampled_from(_PATHS), _json | st.just(...)), max_size=3))
def test_random_shapes_in_a_page_decode_alike(changes: list[tuple[str, Any]]) -> None:
    """Any value at any projected field of a listed pod caches as the general path caches it."""
    pod: Any = copy.deepcopy(_item(POD))
    for path, value in changes:
        try:
            pod = _with_in(pod, path, value)
        except (KeyError, IndexError, TypeError, ValueError):
            continue
    body = _page(_item(POD), pod)
    assert _cached(LEAN_PAGE(body)) == _cached(general_page_decoder(body))
