"""Table output: kubectl's columns and cells per kind, custom printer columns, ages."""

from __future__ import annotations

from typing import Any

import pytest

from dsctl_api.timefmt import format_rfc3339
from dsctl_sim.discovery import human_duration, jsonpath_first, to_table
from dsctl_sim.registry import BUILTIN_TYPES, ResourceType

NOW = 1_800_000_000.0
TYPES = {(rt.group, rt.plural): rt for rt in BUILTIN_TYPES}
WIDGETS = ResourceType("example.com", "v1", "Widget", "widgets", True, builtin=False)


def ago(seconds: float) -> str:
    """An RFC 3339 timestamp ``seconds`` before NOW."""
    return format_rfc3339(NOW - seconds)


def table(group: str, plural: str, *objects: dict[str, Any], **kw: Any) -> dict[str, Any]:
    """The Table for built-in type (group, plural)."""
    return to_table(TYPES[(group, plural)], list(objects), NOW, **kw)


def headers(t: dict[str, Any], *, wide: bool = False) -> list[str]:
    """Column names as kubectl prints them (upper case), default or wide."""
    return [c["name"].upper() for c in t["columnDefinitions"] if wide or c["priority"] == 0]


def cells(t: dict[str, Any], *, wide: bool = False) -> list[Any]:
    """The first row's cells for the default or wide columns."""
    defs = t["columnDefinitions"]
    return [v for c, v in zip(defs, t["rows"][0]["cells"], strict=True) if wide or c["priority"] == 0]


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        pytest.param(-5, "<invalid>", id="future"),
        pytest.param(-1, "0s", id="clock-skew"),
        pytest.param(5, "5s", id="seconds"),
        pytest.param(119, "119s", id="under-two-minutes"),
        pytest.param(192, "3m12s", id="minutes-seconds"),
        pytest.param(300, "5m", id="round-minutes"),
        pytest.param(25 * 60, "25m", id="minutes"),
        pytest.param(5 * 3600 + 180, "5h3m", id="hours-minutes"),
        pytest.param(20 * 3600, "20h", id="hours"),
        pytest.param(3 * 86400 + 4 * 3600, "3d4h", id="days-hours"),
        pytest.param(2 * 86400, "2d", id="round-days"),
        pytest.param(400 * 86400, "400d", id="days"),
        pytest.param(3 * 365 * 86400 + 5 * 86400, "3y5d", id="years-days"),
        pytest.param(10 * 365 * 86400, "10y", id="years"),
    ],
)
def test_human_duration(seconds: float, text: str) -> None:
    """Ages read like kubectl's."""
    assert human_duration(seconds) == text


def _node(**extra: Any) -> dict[str, Any]:
    node: dict[str, Any] = {
        "metadata": {
            "name": "node-0",
            "creationTimestamp": ago(3 * 86400),
            "labels": {
                "node-role.kubernetes.io/control-plane": "",
                "node-role.kubernetes.io/worker": "",
                "kubernetes.io/os": "linux",
            },
        },
        "spec": {},
        "status": {
            "conditions": [{"type": "MemoryPressure", "status": "False"}, {"type": "Ready", "status": "True"}],
            "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}, {"type": "Hostname", "address": "node-0"}],
            "nodeInfo": {
                "kubeletVersion": "v1.36.0",
                "osImage": "sim",
                "kernelVersion": "6.8",
                "containerRuntimeVersion": "c://2",
            },
        },
    }
    node.update(extra)
    return node


@pytest.mark.parametrize(
    ("node", "status"),
    [
        pytest.param(_node(), "Ready", id="ready"),
        pytest.param(_node(spec={"unschedulable": True}), "Ready,SchedulingDisabled", id="cordoned"),
        pytest.param(_node(status={"conditions": [{"type": "Ready", "status": "Unknown"}]}), "NotReady", id="unknown"),
        pytest.param(_node(status={}), "Unknown", id="no-conditions"),
    ],
)
def test_nodes(node: dict[str, Any], status: str) -> None:
    """NAME STATUS ROLES AGE VERSION, with SchedulingDisabled for cordoned nodes."""
    t = table("", "nodes", node)
    assert headers(t) == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    assert cells(t)[1] == status
    assert cells(t)[2] == "control-plane,worker"
    assert cells(t)[3] == "3d"


def test_nodes_wide() -> None:
    """Wide node output adds addresses and node info."""
    t = table("", "nodes", _node())
    assert headers(t, wide=True)[5:] == [
        "INTERNAL-IP",
        "EXTERNAL-IP",
        "OS-IMAGE",
        "KERNEL-VERSION",
        "CONTAINER-RUNTIME",
    ]
    assert cells(t, wide=True)[5:] == ["10.0.0.1", "<none>", "sim", "6.8", "c://2"]


def _pod(**status: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "web-0", "namespace": "default", "creationTimestamp": ago(90)},
        "spec": {"nodeName": "node-1", "containers": [{"name": "a"}, {"name": "b"}]},
        "status": {"phase": "Running", "podIP": "10.1.0.5", **status},
    }


RUNNING = {"state": {"running": {}}, "ready": True, "restartCount": 0}


@pytest.mark.parametrize(
    ("pod", "ready", "status", "restarts"),
    [
        pytest.param(_pod(containerStatuses=[RUNNING, RUNNING]), "2/2", "Running", "0", id="running"),
        pytest.param(_pod(phase="Pending"), "0/2", "Pending", "0", id="pending"),
        pytest.param(
            _pod(
                containerStatuses=[
                    RUNNING,
                    {
                        "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                        "restartCount": 4,
                        "lastState": {"terminated": {"finishedAt": ago(120)}},
                    },
                ]
            ),
            "1/2",
            "CrashLoopBackOff",
            "4 (2m ago)",
            id="crashloop",
        ),
        pytest.param(
            _pod(containerStatuses=[{"state": {"terminated": {"exitCode": 137}}}]),
            "0/2",
            "ExitCode:137",
            "0",
            id="exit-code",
        ),
        pytest.param(
            {
                **_pod(containerStatuses=[RUNNING, RUNNING]),
                "metadata": {"name": "web-0", "deletionTimestamp": ago(1), "creationTimestamp": ago(90)},
            },
            "2/2",
            "Terminating",
            "0",
            id="terminating",
        ),
        pytest.param(
            {
                **_pod(phase="Pending", initContainerStatuses=[{"state": {"waiting": {"reason": "PodInitializing"}}}]),
                "spec": {"initContainers": [{"name": "init"}], "containers": [{"name": "a"}]},
            },
            "0/1",
            "Init:0/1",
            "0",
            id="init",
        ),
        pytest.param(_pod(phase="Failed", reason="Evicted"), "0/2", "Evicted", "0", id="evicted"),
    ],
)
def test_pods(pod: dict[str, Any], ready: str, status: str, restarts: str) -> None:
    """NAME READY STATUS RESTARTS AGE, with kubectl's status reasoning."""
    t = table("", "pods", pod)
    assert headers(t) == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert cells(t) == ["web-0", ready, status, restarts, "90s"]


def test_pods_wide() -> None:
    """Wide pod output adds IP, NODE, NOMINATED NODE and READINESS GATES."""
    t = table("", "pods", _pod())
    assert headers(t, wide=True)[5:] == ["IP", "NODE", "NOMINATED NODE", "READINESS GATES"]
    assert cells(t, wide=True)[5:] == ["10.1.0.5", "node-1", "<none>", "<none>"]


def test_daemonsets() -> None:
    """DESIRED CURRENT READY UP-TO-DATE AVAILABLE NODE SELECTOR AGE, plus containers/images/selector wide."""
    ds = {
        "metadata": {"name": "agent", "creationTimestamp": ago(600)},
        "spec": {
            "selector": {
                "matchLabels": {"app": "agent"},
                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["b", "a"]}],
            },
            "template": {
                "spec": {
                    "nodeSelector": {"os": "linux", "disk": "ssd"},
                    "containers": [{"name": "a", "image": "i:1"}, {"name": "b", "image": "j:2"}],
                }
            },
        },
        "status": {
            "desiredNumberScheduled": 3,
            "currentNumberScheduled": 3,
            "numberReady": 2,
            "updatedNumberScheduled": 1,
            "numberAvailable": 2,
        },
    }
    t = table("apps", "daemonsets", ds)
    assert headers(t) == ["NAME", "DESIRED", "CURRENT", "READY", "UP-TO-DATE", "AVAILABLE", "NODE SELECTOR", "AGE"]
    assert cells(t) == ["agent", 3, 3, 2, 1, 2, "disk=ssd,os=linux", "10m"]
    assert cells(t, wide=True)[8:] == ["a,b", "i:1,j:2", "app=agent,tier in (a,b)"]


def test_controller_revisions_events_namespaces_leases_crds() -> None:
    """The remaining built-in kinds print their kubectl columns."""
    rev = {
        "metadata": {
            "name": "agent-6d9f",
            "creationTimestamp": ago(60),
            "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "uid": "u", "controller": True}
            ],
        },
        "revision": 3,
    }
    t = table("apps", "controllerrevisions", rev)
    assert headers(t) == ["NAME", "CONTROLLER", "REVISION", "AGE"]
    assert cells(t) == ["agent-6d9f", "daemonset.apps/agent", 3, "60s"]
    ns = {"metadata": {"name": "default", "creationTimestamp": ago(7200)}, "status": {"phase": "Active"}}
    assert cells(table("", "namespaces", ns)) == ["default", "Active", "120m"]
    lease = {"metadata": {"name": "dsctl", "creationTimestamp": ago(30)}, "spec": {"holderIdentity": "pod-a"}}
    assert headers(table("coordination.k8s.io", "leases", lease)) == ["NAME", "HOLDER", "AGE"]
    assert cells(table("coordination.k8s.io", "leases", lease)) == ["dsctl", "pod-a", "30s"]
    crd = {"metadata": {"name": "widgets.example.com", "creationTimestamp": "2027-01-15T08:00:00Z"}}
    t = table("apiextensions.k8s.io", "customresourcedefinitions", crd)
    assert headers(t) == ["NAME", "CREATED AT"] and cells(t) == ["widgets.example.com", "2027-01-15T08:00:00Z"]


def test_core_and_new_events() -> None:
    """Both Event APIs print LAST SEEN TYPE REASON OBJECT MESSAGE, without a NAME column by default."""
    core = {
        "metadata": {"name": "agent.1"},
        "involvedObject": {"kind": "DaemonSet", "name": "agent"},
        "reason": "SuccessfulCreate",
        "message": "Created pod: agent-x ",
        "type": "Normal",
        "firstTimestamp": ago(300),
        "lastTimestamp": ago(10),
        "count": 4,
        "source": {"component": "daemonset-controller"},
    }
    t = table("", "events", core)
    assert headers(t) == ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert cells(t) == ["10s", "Normal", "SuccessfulCreate", "daemonset/agent", "Created pod: agent-x"]
    assert cells(t, wide=True)[7:] == ["5m", 4, "agent.1"]
    new = {
        "metadata": {"name": "e"},
        "regarding": {"kind": "Pod", "name": "p"},
        "note": "Killing",
        "type": "Warning",
        "reason": "Failed",
        "eventTime": "2027-01-01T00:00:00.000000Z",
        "reportingController": "dsctl",
        "reportingInstance": "dsctl-0",
        "series": {"count": 2, "lastObservedTime": format_rfc3339(NOW - 5)},
    }
    t = table("events.k8s.io", "events", new)
    assert cells(t)[1:] == ["Warning", "Failed", "pod/p", "Killing"]
    assert cells(t)[0] == "5s"
    assert cells(t, wide=True)[5] == "dsctl, dsctl-0"


@pytest.mark.parametrize(
    ("include", "expected"),
    [
        pytest.param(
            "Metadata",
            {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": {"name": "default"}},
            id="metadata",
        ),
        pytest.param("Object", {"metadata": {"name": "default"}, "status": {"phase": "Active"}}, id="object"),
        pytest.param("None", None, id="none"),
    ],
)
def test_row_objects(include: str, expected: Any) -> None:
    """Rows embed PartialObjectMetadata by default, the object on request, or nothing."""
    t = table(
        "", "namespaces", {"metadata": {"name": "default"}, "status": {"phase": "Active"}}, include_object=include
    )
    assert t["kind"] == "Table" and t["apiVersion"] == "meta.k8s.io/v1"
    assert t["rows"][0].get("object") == expected


def test_watch_rows_without_headers() -> None:
    """include_headers=False leaves the column definitions out (watch events after the first)."""
    t = table("", "namespaces", {"metadata": {"name": "a"}}, include_headers=False)
    assert t["columnDefinitions"] == [] and len(t["rows"]) == 1


def test_custom_resources_default_and_printer_columns() -> None:
    """CRs print NAME AGE, or NAME plus the CRD's additionalPrinterColumns evaluated by JSONPath."""
    widget = {
        "metadata": {"name": "w1", "creationTimestamp": ago(45), "labels": {"app.kubernetes.io/name": "w"}},
        "spec": {"size": 3, "enabled": True, "ratio": 0.5, "tags": ["a"]},
        "status": {"conditions": [{"type": "Synced", "status": "False"}, {"type": "Ready", "status": "True"}]},
    }
    plain = to_table(WIDGETS, [widget], NOW)
    assert headers(plain) == ["NAME", "AGE"] and cells(plain) == ["w1", "45s"]
    columns: list[dict[str, Any]] = [
        {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
        {"name": "Ready", "type": "string", "jsonPath": '.status.conditions[?(@.type=="Ready")].status'},
        {"name": "Enabled", "type": "boolean", "jsonPath": ".spec.enabled"},
        {"name": "Ratio", "type": "number", "jsonPath": ".spec.ratio", "priority": 1},
        {"name": "App", "type": "string", "jsonPath": ".metadata.labels['app.kubernetes.io/name']"},
        {"name": "First Tag", "type": "string", "jsonPath": ".spec.tags[0]"},
        {"name": "Missing", "type": "string", "jsonPath": ".spec.nothing"},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    ]
    t = to_table(WIDGETS, [widget], NOW, printer_columns=columns)
    assert headers(t) == ["NAME", "SIZE", "READY", "ENABLED", "APP", "FIRST TAG", "MISSING", "AGE"]
    assert cells(t, wide=True) == ["w1", 3, "True", True, 0.5, "w", "a", None, "45s"]


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        pytest.param("{.a.b}", 1, id="braces"),
        pytest.param(".list[-1].n", "z", id="negative-index"),
        pytest.param(".list[*].n", "y", id="star-first"),
        pytest.param(".a.missing", None, id="missing"),
    ],
)
def test_jsonpath_subset(path: str, expected: Any) -> None:
    """The JSONPath subset returns the first match or None."""
    assert jsonpath_first({"a": {"b": 1}, "list": [{"n": "y"}, {"n": "z"}]}, path) == expected


def test_unsupported_jsonpath_is_an_error_not_a_crash() -> None:
    """Syntax outside the subset raises ValueError; in a table it yields an empty cell."""
    with pytest.raises(ValueError, match="unsupported JSONPath"):
        jsonpath_first({}, ".a..b")
    t = to_table(
        WIDGETS,
        [{"metadata": {"name": "w"}}],
        NOW,
        printer_columns=[{"name": "X", "type": "string", "jsonPath": ".a..b"}],
    )
    assert t["rows"][0]["cells"] == ["w", None]
