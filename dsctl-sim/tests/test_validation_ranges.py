"""Ranges like kube-apiserver's: Go integer types, the 256 KiB annotation limit, label values on every kind.

Each case is a body kube-apiserver refuses and the simulator used to store, so the
controller's tests ran on objects no real cluster holds (issue 14, reproduction 4).
"""

from __future__ import annotations

from typing import Any

import pytest

from dsctl_sim.validation import decode_error, validate
from simapi import Api

DAEMONSETS = "/apis/apps/v1/namespaces/default/daemonsets"
REVISIONS = "/apis/apps/v1/namespaces/default/controllerrevisions"
INT64_MAX = 2**63 - 1


def daemonset(name: str = "agent", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": {"app": "agent"}},
            "template": {"metadata": {"labels": {"app": "agent"}},
                         "spec": {"containers": [{"name": "agent", "image": "busybox"}]}},
        },
    }
    body["spec"].update(spec)
    return body


def revision(name: str, number: Any, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "ControllerRevision",
            "metadata": {"name": name, "labels": labels or {"app": "agent"}},
            "data": {"spec": {"template": {"$patch": "replace"}}}, "revision": number}


@pytest.mark.parametrize(
    ("key", "obj", "expected"),
    [
        pytest.param("apps/daemonsets", daemonset(revisionHistoryLimit=10**15),
                     "json: cannot unmarshal number 1000000000000000 into Go struct field "
                     "DaemonSetSpec.spec.revisionHistoryLimit of type int32", id="history-limit-int32"),
        pytest.param("apps/daemonsets", daemonset(minReadySeconds=10**12),
                     "json: cannot unmarshal number 1000000000000 into Go struct field "
                     "DaemonSetSpec.spec.minReadySeconds of type int32", id="min-ready-int32"),
        pytest.param("apps/daemonsets", daemonset(minReadySeconds=1.5),
                     "json: cannot unmarshal number 1.5 into Go struct field "
                     "DaemonSetSpec.spec.minReadySeconds of type int32", id="min-ready-fraction"),
        pytest.param("apps/daemonsets", daemonset(minReadySeconds="5"),
                     "json: cannot unmarshal string into Go struct field "
                     "DaemonSetSpec.spec.minReadySeconds of type int32", id="min-ready-string"),
        pytest.param("apps/controllerrevisions", revision("r", INT64_MAX + 1),
                     "json: cannot unmarshal number 9223372036854775808 into Go struct field "
                     "ControllerRevision.revision of type int64", id="revision-past-int64"),
        pytest.param("apps/controllerrevisions", revision("r", float(2**64)),
                     "json: cannot unmarshal number 18446744073709551616 into Go struct field "
                     "ControllerRevision.revision of type int64", id="revision-past-uint64"),
        pytest.param("apps/daemonsets",
                     daemonset(template={"metadata": {"labels": {"app": "agent"}}, "spec": {
                         "terminationGracePeriodSeconds": 2**63,
                         "containers": [{"name": "agent", "image": "busybox"}]}}),
                     "json: cannot unmarshal number 9223372036854775808 into Go struct field "
                     "PodSpec.spec.template.spec.terminationGracePeriodSeconds of type int64", id="grace-int64"),
        pytest.param("apps/daemonsets",
                     daemonset(template={"metadata": {"labels": {"app": "agent"}}, "spec": {
                         "containers": [{"name": "agent", "image": "busybox", "ports": [{"containerPort": 2**31}]}]}}),
                     "json: cannot unmarshal number 2147483648 into Go struct field "
                     "ContainerPort.spec.template.spec.containers.ports.containerPort of type int32", id="port-int32"),
        pytest.param("apps/daemonsets", {**daemonset(), "status": {"collisionCount": 2**31}},
                     "json: cannot unmarshal number 2147483648 into Go struct field "
                     "DaemonSetStatus.status.collisionCount of type int32", id="status-int32"),
    ],
)
def test_decode_error_names_the_go_field(key: str, obj: dict[str, Any], expected: str) -> None:
    """An integer its Go field cannot hold gets encoding/json's message, naming struct, path and type."""
    assert decode_error(key, obj) == expected


@pytest.mark.parametrize(
    ("key", "obj"),
    [
        pytest.param("apps/daemonsets", daemonset(revisionHistoryLimit=2**31 - 1, minReadySeconds=0), id="int32-max"),
        pytest.param("apps/controllerrevisions", revision("r", INT64_MAX), id="int64-max"),
        pytest.param("pods", {"metadata": {"name": "p"}, "spec": {"terminationGracePeriodSeconds": 30}}, id="pod"),
        pytest.param("widgets.example.io", {"spec": {"size": 10**30}}, id="unlisted-kind"),
    ],
)
def test_values_that_fit_decode(key: str, obj: dict[str, Any]) -> None:
    """The largest values a field holds are fine, and kinds without a table are not checked."""
    assert decode_error(key, obj) is None


async def test_out_of_range_writes_are_bad_requests(api: Api) -> None:
    """Creates and updates with a number out of range answer 400 with the apiserver's wrapper; nothing is stored."""
    status, body = await api.call("POST", DAEMONSETS, daemonset(revisionHistoryLimit=10**15))
    assert status == 400 and body["reason"] == "BadRequest"
    assert body["message"] == (
        'DaemonSet in version "v1" cannot be handled as a DaemonSet: json: cannot unmarshal number '
        "1000000000000000 into Go struct field DaemonSetSpec.spec.revisionHistoryLimit of type int32")
    status, body = await api.call("POST", REVISIONS, revision("agent-1", INT64_MAX + 1))
    assert status == 400 and "ControllerRevision.revision of type int64" in body["message"]
    status, _ = await api.call("GET", f"{REVISIONS}/agent-1")
    assert status == 404
    stored = await api.ok("POST", REVISIONS, revision("agent-2", INT64_MAX))
    assert stored["revision"] == INT64_MAX
    status, body = await api.call("PUT", f"{REVISIONS}/agent-2", {**stored, "revision": INT64_MAX + 1})
    assert status == 400
    ds = await api.ok("POST", DAEMONSETS, daemonset())
    status, body = await api.call("PUT", f"{DAEMONSETS}/agent/status",
                                  {**ds, "status": {"numberReady": 2**31, "observedGeneration": 1}})
    assert status == 400 and "DaemonSetStatus.status.numberReady of type int32" in body["message"]


async def test_template_annotations_are_limited_to_256_kib(api: Api) -> None:
    """A 1.5 MB template annotation is refused like kube-apiserver does: 422 on the template's annotations."""
    big = daemonset()
    big["spec"]["template"]["metadata"]["annotations"] = {"note": "x" * 1_500_000}
    status, body = await api.call("POST", DAEMONSETS, big)
    assert status == 422
    assert {"field": "spec.template.metadata.annotations", "reason": "FieldValueTooLong",
            "message": "Too long: must have at most 262144 bytes"} in body["details"]["causes"]
    just = daemonset()
    just["spec"]["template"]["metadata"]["annotations"] = {"n": "x" * (256 * 1024 - 1)}
    await api.ok("POST", DAEMONSETS, just)


@pytest.mark.parametrize(
    "value",
    [pytest.param("ünï-cødé", id="unicode"), pytest.param("a" * 64, id="too-long"),
     pytest.param("-dash", id="leading-dash")],
)
def test_label_values_are_checked_on_controller_revisions(value: str) -> None:
    """A ControllerRevision with a label value apps/v1 refuses gets the label-value cause (issue 14, item 1)."""
    causes = validate("apps/controllerrevisions", revision("r", 1, {"app": value}), None)
    assert [c["field"] for c in causes] == ["metadata.labels"] * len(causes) and causes
    assert all(c["message"].startswith(f'Invalid value: "{value}": ') for c in causes)


async def test_daemonset_with_both_surge_and_unavailable_is_refused(api: Api) -> None:
    """maxSurge and maxUnavailable both non-zero is refused with apps/v1's message (issue 15)."""
    body = daemonset(updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 1}})
    status, out = await api.call("POST", DAEMONSETS, body)
    assert status == 422
    assert {"field": "spec.updateStrategy.rollingUpdate.maxSurge", "reason": "FieldValueInvalid",
            "message": "Invalid value: 1: may not be set when maxUnavailable is non-zero"} in out["details"]["causes"]
