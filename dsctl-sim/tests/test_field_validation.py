"""Server-side field validation (``fieldValidation``) through ``dsctl sim serve`` and the real kubectl.

What kube-apiserver does, pinned here: plain ``kubectl apply`` sends ``fieldValidation=Strict``
and a misspelled field fails the write with nothing stored; ``Warn`` (also what an absent
parameter means) drops the field and names it in a ``Warning: 299`` header, which kubectl
prints; ``Ignore`` drops it silently. Create and update bodies fail with 400 BadRequest,
patches with 422 Invalid on ``patch``, and an unsupported mode with 422 on the options kind.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import orjson
import pytest

from dsctl_sim.apiwarnings import warning_headers
from tests.support.poll import eventually
from tests.support.simproc import SimProcess

DS = "/apis/apps/v1/namespaces/default/daemonsets"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
WIDGETS = "/apis/example.dsctl.io/v1/namespaces/default/widgets"
MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
SMP = "application/strategic-merge-patch+json"

TYPO = "spec.template.spec.containers[0].imagee"
TYPO_HEADER = f'299 - "unknown field \\"{TYPO}\\""'
DECODE_ERROR = 'DaemonSet in version "v1" cannot be handled as a DaemonSet: strict decoding error: '

DS_YAML = """\
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: agent
  namespace: default
spec:
  selector:
    matchLabels: {{app: agent}}
  template:
    metadata:
      labels: {{app: agent}}
    spec:
      containers:
      - name: agent
        image: {image}
{extra}"""
TYPO_LINE = "        imagee: typo\n"


@pytest.fixture
async def sim() -> AsyncIterator[SimProcess]:
    """A one-node sim without control-plane loops: objects change only when the test writes."""
    async with SimProcess(nodes=1, args=["--no-control-plane"]) as proc:
        yield proc


@dataclass
class Reply:
    """One raw API answer: status, decoded body and the ``Warning`` header values."""

    status: int
    body: Any
    warnings: list[str]


async def send(sim: SimProcess, method: str, path: str, body: Any = None, *, mode: str | None = None,
               content_type: str = "application/json") -> Reply:
    """One request with an optional ``fieldValidation``; bytes bodies are sent as they are."""
    params = {"fieldValidation": mode} if mode is not None else None
    data = body if isinstance(body, bytes) or body is None else orjson.dumps(body)
    async with sim.session().request(method, sim.url + path, data=data, params=params,
                                     headers={"Content-Type": content_type}) as resp:
        raw = await resp.read()
        return Reply(resp.status, orjson.loads(raw) if raw else None, resp.headers.getall("Warning", []))


def daemonset(**container_extra: Any) -> dict[str, Any]:
    """DaemonSet ``agent`` with one container; keyword arguments are added to the container."""
    labels = {"app": "agent"}
    container = {"name": "agent", "image": "nginx:1", **container_extra}
    return {
        "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"},
        "spec": {"selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels}, "spec": {"containers": [container]}}},
    }


def container_of(ds: dict[str, Any]) -> dict[str, Any]:
    first: dict[str, Any] = ds["spec"]["template"]["spec"]["containers"][0]
    return first


async def kubectl_get_ds(sim: SimProcess) -> dict[str, Any]:
    out = await sim.kubectl("get", "daemonset", "agent", "-o", "json")
    got: dict[str, Any] = json.loads(out.stdout)
    return got


# -- kubectl ----------------------------------------------------------------------------------


async def test_kubectl_apply_refuses_a_misspelled_field(sim: SimProcess) -> None:
    """Plain `kubectl apply` (Strict) fails with the strict decoding error and creates nothing."""
    manifest = DS_YAML.format(image="nginx:1", extra=TYPO_LINE).encode()
    out = await sim.kubectl("apply", "-f", "-", input=manifest, check=False)
    assert out.returncode != 0
    assert "Error from server (BadRequest)" in out.stderr
    assert f'{DECODE_ERROR}unknown field "{TYPO}"' in out.stderr
    missing = await sim.kubectl("get", "daemonset", "agent", check=False)
    assert missing.returncode != 0 and 'daemonsets.apps "agent" not found' in missing.stderr


@pytest.mark.parametrize(
    ("flag", "warned"),
    [
        pytest.param("--validate=warn", True, id="warn"),
        pytest.param("--validate=ignore", False, id="ignore"),
    ],
)
async def test_kubectl_apply_lenient_modes_drop_the_field(sim: SimProcess, flag: str, warned: bool) -> None:
    """`--validate=warn` creates the DaemonSet without the field and prints the warning; `ignore` is silent."""
    manifest = DS_YAML.format(image="nginx:1", extra=TYPO_LINE).encode()
    out = await sim.kubectl("apply", flag, "-f", "-", input=manifest)
    assert "daemonset.apps/agent created" in out.stdout
    if warned:
        assert f'Warning: unknown field "{TYPO}"' in out.stderr
    else:
        assert "Warning" not in out.stderr
    stored = container_of(await kubectl_get_ds(sim))
    assert stored["image"] == "nginx:1" and "imagee" not in stored


async def test_dropped_fields_are_logged(sim: SimProcess) -> None:
    """The sim's log names each write whose unknown fields were dropped."""
    manifest = DS_YAML.format(image="nginx:1", extra=TYPO_LINE).encode()
    await sim.kubectl("apply", "--validate=warn", "-f", "-", input=manifest)

    async def logged() -> bool:
        return any("sim_unknown_fields_dropped" in line and TYPO in line and "Warn" in line
                   for line in sim.log_tail(200).splitlines())

    await eventually(logged, timeout=10, message="the sim_unknown_fields_dropped log line")


async def test_kubectl_apply_refuses_a_misspelled_field_on_update(sim: SimProcess) -> None:
    """Re-applying with a typo (a strategic merge patch under Strict) is refused and changes nothing."""
    await sim.kubectl("apply", "-f", "-", input=DS_YAML.format(image="nginx:1", extra="").encode())
    before = await kubectl_get_ds(sim)
    manifest = DS_YAML.format(image="nginx:2", extra=TYPO_LINE).encode()
    out = await sim.kubectl("apply", "-f", "-", input=manifest, check=False)
    assert out.returncode != 0
    assert "The request is invalid: patch: Invalid value: " in out.stderr
    assert f'strict decoding error: unknown field "{TYPO}"' in out.stderr
    after = await kubectl_get_ds(sim)
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert container_of(after)["image"] == "nginx:1"


# -- raw HTTP ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "warnings"),
    [
        pytest.param(None, [TYPO_HEADER], id="absent-means-warn"),
        pytest.param("", [TYPO_HEADER], id="empty-means-warn"),
        pytest.param("Warn", [TYPO_HEADER], id="warn"),
        pytest.param("Ignore", [], id="ignore"),
    ],
)
async def test_create_drops_unknown_fields_unless_strict(sim: SimProcess, mode: str | None,
                                                         warnings: list[str]) -> None:
    """Without Strict the object is created without the field; Warn, the default, names it in a header."""
    reply = await send(sim, "POST", DS, daemonset(imagee="typo"), mode=mode)
    assert reply.status == 201, reply.body
    assert reply.warnings == warnings
    assert "imagee" not in container_of(reply.body)
    stored = await send(sim, "GET", f"{DS}/agent")
    assert "imagee" not in container_of(stored.body) and stored.warnings == []


async def test_strict_create_and_update_are_400_and_store_nothing(sim: SimProcess) -> None:
    """Under Strict, a create or update body with unknown fields is a 400 decoding error naming each."""
    body = daemonset(imagee="typo")
    body["spec"]["bogus"] = True
    refused = await send(sim, "POST", DS, body, mode="Strict")
    assert refused.status == 400
    assert refused.body["reason"] == "BadRequest"
    assert refused.body["message"] == f'{DECODE_ERROR}unknown field "{TYPO}", unknown field "spec.bogus"'
    assert (await send(sim, "GET", f"{DS}/agent")).status == 404

    created = await send(sim, "POST", DS, daemonset(), mode="Strict")
    assert created.status == 201 and created.warnings == []
    changed = {**created.body, "spec": {**created.body["spec"], "minReadySecondz": 5}}
    refused = await send(sim, "PUT", f"{DS}/agent", changed, mode="Strict")
    assert refused.status == 400
    assert refused.body["message"] == f'{DECODE_ERROR}unknown field "spec.minReadySecondz"'
    stored = await send(sim, "GET", f"{DS}/agent")
    assert stored.body["metadata"]["resourceVersion"] == created.body["metadata"]["resourceVersion"]


async def test_update_under_warn_drops_and_warns(sim: SimProcess) -> None:
    """A PUT without fieldValidation stores the object without the unknown field and warns about it."""
    created = (await send(sim, "POST", DS, daemonset())).body
    changed = {**created, "spec": {**created["spec"], "minReadySeconds": 5, "minReadySecondz": 5}}
    reply = await send(sim, "PUT", f"{DS}/agent", changed)
    assert reply.status == 200, reply.body
    assert reply.warnings == ['299 - "unknown field \\"spec.minReadySecondz\\""']
    assert reply.body["spec"]["minReadySeconds"] == 5 and "minReadySecondz" not in reply.body["spec"]


@pytest.mark.parametrize(
    ("content_type", "patch", "shown"),
    [
        pytest.param(MERGE, {"spec": {"zeta": 1, "bogus": True}}, None, id="merge"),
        pytest.param(JSON_PATCH, [{"op": "add", "path": "/spec/zeta", "value": 1},
                                  {"op": "add", "path": "/spec/bogus", "value": True}], None, id="json-patch"),
        pytest.param(SMP, {"spec": {"zeta": 1, "bogus": {"b": [1, 2.5, True, None]}}},
                     "map[spec:map[bogus:map[b:[1 2.5 true <nil>]] zeta:1]]", id="strategic-merge"),
    ],
)
async def test_strict_patch_is_422_on_patch_and_changes_nothing(
    sim: SimProcess, content_type: str, patch: Any, shown: str | None
) -> None:
    """Under Strict every patch type is refused once applied: 422 Invalid on `patch`, object unchanged."""
    created = (await send(sim, "POST", DS, daemonset())).body
    reply = await send(sim, "PATCH", f"{DS}/agent", patch, mode="Strict", content_type=content_type)
    assert reply.status == 422, reply.body
    assert reply.body["reason"] == "Invalid"
    [cause] = reply.body["details"]["causes"]
    assert cause["field"] == "patch" and cause["reason"] == "FieldValueInvalid"
    message = reply.body["message"]
    assert message.startswith(' "" is invalid: patch: Invalid value: "')
    if shown is None:  # JSON and merge patch show the patched object; paths in document order
        assert '\\"zeta\\":1' in message
        assert message.endswith('strict decoding error: unknown field "spec.zeta", unknown field "spec.bogus"')
    else:  # a strategic merge patch shows the patch as Go prints a map; paths sorted
        assert message == (f' "" is invalid: patch: Invalid value: "{shown}": strict decoding error: '
                           'unknown field "spec.bogus", unknown field "spec.zeta"')
    stored = await send(sim, "GET", f"{DS}/agent")
    assert stored.body["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


@pytest.mark.parametrize(
    ("content_type", "patch"),
    [
        pytest.param(MERGE, {"metadata": {"labelz": {"a": "b"}}, "spec": {"minReadySecondz": 3}}, id="merge"),
        pytest.param(SMP, {"spec": {"minReadySecondz": 3}, "metadata": {"labelz": {"a": "b"}}}, id="strategic-merge"),
    ],
)
async def test_patch_under_warn_drops_and_warns(sim: SimProcess, content_type: str, patch: Any) -> None:
    """Without fieldValidation a patch applies without its unknown fields, one warning each."""
    await send(sim, "POST", DS, daemonset())
    reply = await send(sim, "PATCH", f"{DS}/agent", patch, content_type=content_type)
    assert reply.status == 200, reply.body
    assert sorted(reply.warnings) == ['299 - "unknown field \\"metadata.labelz\\""',
                                      '299 - "unknown field \\"spec.minReadySecondz\\""']
    assert "labelz" not in reply.body["metadata"] and "minReadySecondz" not in reply.body["spec"]


@pytest.mark.parametrize(
    ("method", "content_type", "strict_code"),
    [pytest.param("PUT", "application/json", 400, id="update"), pytest.param("PATCH", MERGE, 422, id="patch")],
)
async def test_status_writes_are_checked_too(sim: SimProcess, method: str, content_type: str,
                                             strict_code: int) -> None:
    """A status write decodes the whole object: Strict refuses an unknown field, Warn drops it and warns."""
    created = (await send(sim, "POST", DS, daemonset())).body

    def body(**status: Any) -> Any:
        return {**created, "status": status} if method == "PUT" else {"status": status}

    refused = await send(sim, method, f"{DS}/agent/status", body(numberReadyy=1), mode="Strict",
                         content_type=content_type)
    assert refused.status == strict_code, refused.body
    assert refused.body["message"].endswith('strict decoding error: unknown field "status.numberReadyy"')
    warned = await send(sim, method, f"{DS}/agent/status", body(observedGeneration=1, numberReadyy=1),
                        mode="Warn", content_type=content_type)
    assert warned.status == 200, warned.body
    assert warned.warnings == ['299 - "unknown field \\"status.numberReadyy\\""']
    assert warned.body["status"]["observedGeneration"] == 1 and "numberReadyy" not in warned.body["status"]


@pytest.mark.parametrize(
    ("method", "path", "kind"),
    [
        pytest.param("POST", DS, "CreateOptions", id="create"),
        pytest.param("PUT", f"{DS}/agent", "UpdateOptions", id="update"),
        pytest.param("PATCH", f"{DS}/agent", "PatchOptions", id="patch"),
    ],
)
async def test_unsupported_mode_is_422_before_the_body_is_read(sim: SimProcess, method: str, path: str,
                                                               kind: str) -> None:
    """An unknown fieldValidation value (they are case-sensitive) is refused on the options, body unread."""
    reply = await send(sim, method, path, b"{not json", mode="strict", content_type=MERGE if method == "PATCH"
                       else "application/json")
    assert reply.status == 422
    detail = 'Unsupported value: "strict": supported values: "", "Ignore", "Strict", "Warn"'
    assert reply.body["message"] == f'{kind}.meta.k8s.io "" is invalid: fieldValidation: {detail}'
    assert reply.body["details"] == {
        "group": "meta.k8s.io", "kind": kind,
        "causes": [{"field": "fieldValidation", "reason": "FieldValueNotSupported", "message": detail}],
    }


async def test_warnings_also_ride_on_a_failed_write(sim: SimProcess) -> None:
    """A Warn-mode write that then fails validation still carries its warning, as kube-apiserver's does."""
    body = daemonset(imagee="typo")
    del container_of(body)["image"]
    reply = await send(sim, "POST", DS, body, mode="Warn")
    assert reply.status == 422 and reply.body["reason"] == "Invalid"
    assert reply.warnings == [TYPO_HEADER]


async def test_custom_resources_are_not_checked(sim: SimProcess) -> None:
    """Custom resources keep unknown fields even under Strict: the field table holds no CRD schemas."""
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.dsctl.io"},
        "spec": {"group": "example.dsctl.io", "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                 "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                     "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]},
    }
    assert (await send(sim, "POST", CRDS, crd, mode="Strict")).status == 201

    async def served() -> bool:
        return (await send(sim, "GET", WIDGETS)).status == 200

    await eventually(served, timeout=10, message="the widgets resource to be served")
    widget = {"apiVersion": "example.dsctl.io/v1", "kind": "Widget", "metadata": {"name": "w"},
              "spec": {"anything": {"goes": 1}}}
    reply = await send(sim, "POST", WIDGETS, widget, mode="Strict")
    assert reply.status == 201 and reply.warnings == []
    assert reply.body["spec"] == {"anything": {"goes": 1}}


# -- the header format ------------------------------------------------------------------------


def test_warning_headers_are_quoted_deduplicated_and_bounded() -> None:
    """Warning values follow kube-apiserver: `299 - "<text>"` escaped, once per text, cut past 4096 characters."""
    assert warning_headers(['unknown field "a\\b"', 'unknown field "a\\b"', "", "two\nlines"]) == [
        '299 - "unknown field \\"a\\\\b\\""'
    ]
    long = [f"{i}" + "x" * 999 for i in range(5)]  # 5,000 characters: past the budget
    assert warning_headers(long) == [f'299 - "{text[:256]}"' for text in long]
    fits = ["y" * 1000] * 1 + ["z" * 3000]
    assert warning_headers(fits) == [f'299 - "{text}"' for text in fits]
