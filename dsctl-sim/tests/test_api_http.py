"""The simulated API server's verbs and resourceVersion semantics, over real HTTP."""

from __future__ import annotations

from typing import Any

import pytest

from simapi import Api
from watchclient import read_watch

PODS = "/api/v1/namespaces/default/pods"
DS = "/apis/apps/v1/namespaces/default/daemonsets"


def pod(name: str, *, labels: dict[str, str] | None = None, node: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "busybox"}]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels or {}}, "spec": spec}


def daemonset(name: str, image: str = "nginx:1") -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": name},
        "spec": {"selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels},
                              "spec": {"containers": [{"name": "c", "image": image}]}}},
    }


async def test_crud_round_trip(api: Api) -> None:
    """Create fills server fields (201), get returns it, delete removes it, then get is a 404 Status."""
    created = await api.ok("POST", PODS, pod("a"))
    assert created["metadata"]["uid"] and created["metadata"]["resourceVersion"]
    got = await api.ok("GET", f"{PODS}/a")
    assert got["metadata"]["uid"] == created["metadata"]["uid"]
    await api.ok("DELETE", f"{PODS}/a")
    status, body = await api.call("GET", f"{PODS}/a")
    assert status == 404
    assert body["kind"] == "Status" and body["reason"] == "NotFound" and body["code"] == 404
    assert body["message"] == 'pods "a" not found'


@pytest.mark.parametrize(
    ("method", "path", "body", "code", "reason"),
    [
        pytest.param("POST", "/api/v1/namespaces/nope/pods", pod("x"), 404, "NotFound", id="missing-namespace"),
        pytest.param("GET", "/api/v1/widgets", None, 404, "NotFound", id="unknown-resource"),
        pytest.param("GET", f"{PODS}?labelSelector=a%20in%20(", None, 400, "BadRequest", id="bad-label-selector"),
        pytest.param("GET", f"{PODS}?fieldSelector=spec.bogus%3D1", None, 400, "BadRequest", id="bad-field"),
        pytest.param("POST", PODS, b"{not json", 400, "BadRequest", id="bad-body"),
        pytest.param("PUT", f"{PODS}/missing", pod("missing"), 404, "NotFound", id="update-missing"),
    ],
)
async def test_errors_are_status_objects(  # noqa: PLR0917
    api: Api, method: str, path: str, body: Any, code: int, reason: str
) -> None:
    """Every failure answers with a metav1.Status carrying the HTTP code and reason."""
    status, out = await api.call(method, path, body)
    assert status == code
    assert out["kind"] == "Status" and out["status"] == "Failure"
    assert out["code"] == code and out["reason"] == reason and out["message"]


async def test_create_conflict_and_generate_name(api: Api) -> None:
    """A taken name is 409 AlreadyExists; generateName makes a fresh name each time."""
    await api.ok("POST", PODS, pod("a"))
    status, out = await api.call("POST", PODS, pod("a"))
    assert (status, out["reason"]) == (409, "AlreadyExists")
    gen = {**pod(""), "metadata": {"generateName": "web-"}}
    names = {(await api.ok("POST", PODS, gen))["metadata"]["name"] for _ in range(3)}
    assert len(names) == 3 and all(n.startswith("web-") for n in names)


async def test_stale_update_conflicts(api: Api) -> None:
    """An update carrying an old resourceVersion gets 409 Conflict; a fresh one succeeds."""
    created = await api.ok("POST", DS, daemonset("x"))
    fresh = {**created, "spec": daemonset("x", "nginx:2")["spec"]}
    updated = await api.ok("PUT", f"{DS}/x", fresh)
    assert updated["metadata"]["generation"] == 2
    stale = {**created, "spec": daemonset("x", "nginx:3")["spec"]}
    status, out = await api.call("PUT", f"{DS}/x", stale)
    assert (status, out["reason"]) == (409, "Conflict")
    assert "the object has been modified" in out["message"]


async def test_status_subresource_split(api: Api) -> None:
    """PUT .../status changes only status; PUT on the object never changes status."""
    ds = await api.ok("POST", DS, daemonset("x"))
    body = {**ds, "spec": daemonset("x", "evil:1")["spec"], "status": {**ds["status"], "numberReady": 5}}
    out = await api.ok("PUT", f"{DS}/x/status", body)
    assert out["status"]["numberReady"] == 5
    assert out["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1"
    assert out["metadata"]["generation"] == 1
    body = {**out, "status": {"numberReady": 0}, "spec": daemonset("x", "nginx:2")["spec"]}
    out2 = await api.ok("PUT", f"{DS}/x", body)
    assert out2["status"]["numberReady"] == 5 and out2["metadata"]["generation"] == 2


async def test_merge_patch_updates_labels(api: Api) -> None:
    """A JSON merge patch on a pod changes what it names and keeps the rest."""
    await api.ok("POST", PODS, pod("a", labels={"x": "1"}))
    out = await api.ok("PATCH", f"{PODS}/a", {"metadata": {"labels": {"y": "2"}}},
                       headers={"Content-Type": "application/merge-patch+json"})
    assert out["metadata"]["labels"] == {"x": "1", "y": "2"}


async def test_binding_sets_node(api: Api) -> None:
    """POST pods/x/binding sets spec.nodeName and PodScheduled; a second binding conflicts."""
    await api.ok("POST", PODS, pod("a"))
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "a"},
               "target": {"apiVersion": "v1", "kind": "Node", "name": "node-1"}}
    await api.ok("POST", f"{PODS}/a/binding", binding)
    got = await api.ok("GET", f"{PODS}/a")
    assert got["spec"]["nodeName"] == "node-1"
    assert {"type": "PodScheduled", "status": "True"}.items() <= got["status"]["conditions"][0].items()
    status, _ = await api.call("POST", f"{PODS}/a/binding", binding)
    assert status == 409


async def test_graceful_delete_over_http(api: Api) -> None:
    """Deleting a scheduled pod marks it terminating; gracePeriodSeconds=0 removes it."""
    await api.ok("POST", PODS, pod("a", node="node-0"))
    marked = await api.ok("DELETE", f"{PODS}/a")
    assert marked["metadata"]["deletionTimestamp"] and marked["metadata"]["deletionGracePeriodSeconds"] == 30
    await api.ok("DELETE", f"{PODS}/a", {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0})
    status, _ = await api.call("GET", f"{PODS}/a")
    assert status == 404


async def test_delete_preconditions(api: Api) -> None:
    """A delete whose uid precondition does not match is 409 and deletes nothing."""
    await api.ok("POST", PODS, pod("a"))
    status, out = await api.call("DELETE", f"{PODS}/a", {"preconditions": {"uid": "not-it"}})
    assert (status, out["reason"]) == (409, "Conflict")
    await api.ok("GET", f"{PODS}/a")


async def test_deletecollection_with_selector(api: Api) -> None:
    """DELETE on a collection removes only the objects its selector matches."""
    for i in range(4):
        await api.ok("POST", PODS, pod(f"p{i}", labels={"even": str(i % 2 == 0).lower()}))
    await api.ok("DELETE", f"{PODS}?labelSelector=even%3Dtrue")
    left = await api.ok("GET", PODS)
    assert [p["metadata"]["name"] for p in left["items"]] == ["p1", "p3"]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        pytest.param("labelSelector=tier%3Dweb", ["a", "c"], id="label-equals"),
        pytest.param("labelSelector=tier%20notin%20(web)", ["b", "d"], id="label-notin"),
        pytest.param("labelSelector=!tier", ["d"], id="label-absent"),
        pytest.param("fieldSelector=spec.nodeName%3Dnode-1", ["b", "c"], id="node-name"),
        pytest.param("fieldSelector=metadata.name!%3Da", ["b", "c", "d"], id="name-not"),
        pytest.param("fieldSelector=status.phase%3DPending,spec.nodeName%3D", ["a", "d"], id="phase-and-unbound"),
    ],
)
async def test_list_selectors(api: Api, query: str, expected: list[str]) -> None:
    """Label selectors (all operators) and field selectors filter lists."""
    await api.ok("POST", PODS, pod("a", labels={"tier": "web"}))
    await api.ok("POST", PODS, pod("b", labels={"tier": "db"}, node="node-1"))
    await api.ok("POST", PODS, pod("c", labels={"tier": "web"}, node="node-1"))
    await api.ok("POST", PODS, pod("d"))
    out = await api.ok("GET", f"{PODS}?{query}")
    assert [p["metadata"]["name"] for p in out["items"]] == expected


async def test_all_namespaces_list(api: Api) -> None:
    """/api/v1/pods lists every namespace; a namespaced list only its own."""
    await api.ok("POST", "/api/v1/namespaces", {"metadata": {"name": "other"}})
    await api.ok("POST", PODS, pod("a"))
    await api.ok("POST", "/api/v1/namespaces/other/pods", pod("b"))
    everywhere = await api.ok("GET", "/api/v1/pods")
    assert [(p["metadata"]["namespace"], p["metadata"]["name"]) for p in everywhere["items"]] == [
        ("default", "a"), ("other", "b")]
    assert len((await api.ok("GET", "/api/v1/namespaces/other/pods"))["items"]) == 1


async def test_pagination_returns_each_object_once(api: Api) -> None:
    """limit/continue pages cover every object exactly once, even with writes between pages."""
    for i in range(25):
        await api.ok("POST", PODS, pod(f"p{i:02d}"))
    seen: list[str] = []
    page = await api.ok("GET", f"{PODS}?limit=7")
    first_rv = page["metadata"]["resourceVersion"]
    while True:
        seen += [p["metadata"]["name"] for p in page["items"]]
        token = page["metadata"].get("continue")
        if not token:
            break
        assert page["metadata"]["resourceVersion"] == first_rv
        await api.ok("POST", PODS, pod(f"new{len(seen)}"))
        page = await api.ok("GET", f"{PODS}?limit=7&continue={token}")
    assert sorted(seen) == [f"p{i:02d}" for i in range(25)]


async def test_bad_continue_token(api: Api) -> None:
    """A garbled continue token is a 400."""
    status, _ = await api.call("GET", f"{PODS}?limit=1&continue=garbage!")
    assert status == 400


async def test_watch_resume_loses_nothing(api: Api) -> None:
    """Watching from a list's resourceVersion delivers every later change, in order."""
    await api.ok("POST", PODS, pod("a"))
    rv = (await api.ok("GET", PODS))["metadata"]["resourceVersion"]
    await api.ok("POST", PODS, pod("b"))
    await api.ok("PATCH", f"{PODS}/a", {"metadata": {"labels": {"x": "y"}}},
                 headers={"Content-Type": "application/merge-patch+json"})
    await api.ok("DELETE", f"{PODS}/b")
    _, events = await read_watch(api.http, f"{api.url}{PODS}?watch=true&resourceVersion={rv}",
                                 stop=lambda evs: len(evs) >= 3)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("ADDED", "b"), ("MODIFIED", "a"), ("DELETED", "b")]
    rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert rvs == sorted(rvs) and rvs[0] > int(rv)


async def test_watch_without_rv_starts_with_state(api: Api) -> None:
    """A watch with no resourceVersion first sends ADDED for every existing object."""
    await api.ok("POST", PODS, pod("a"))
    await api.ok("POST", PODS, pod("b"))
    _, events = await read_watch(api.http, f"{api.url}{PODS}?watch=1", stop=lambda evs: len(evs) >= 2)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "a"), ("ADDED", "b")]


async def test_watch_gone_after_compaction(api: Api) -> None:
    """After compaction a watch from an older resourceVersion gets an in-stream 410 ERROR."""
    await api.ok("POST", PODS, pod("a"))
    old_rv = (await api.ok("GET", PODS))["metadata"]["resourceVersion"]
    await api.ok("POST", PODS, pod("b"))
    await api.ok("POST", "/sim/compact")
    status, events = await read_watch(api.http, f"{api.url}{PODS}?watch=1&resourceVersion={old_rv}")
    assert status == 200
    assert events[0]["type"] == "ERROR"
    assert events[0]["object"]["code"] == 410 and events[0]["object"]["reason"] == "Expired"


async def test_watch_gone_as_http(api: Api) -> None:
    """With the gone_as_http fault the same case is an HTTP 410 Status."""
    old_rv = (await api.ok("GET", PODS))["metadata"]["resourceVersion"]
    await api.ok("POST", PODS, pod("a"))
    await api.ok("POST", "/sim/compact")
    await api.ok("PUT", "/sim/faults", {"gone_as_http": True})
    status, body = await read_watch(api.http, f"{api.url}{PODS}?watch=1&resourceVersion={old_rv}")
    assert status == 410 and body[0]["reason"] == "Expired"


async def test_exact_list_of_old_rv_is_gone(api: Api) -> None:
    """A list asking for an exact, no longer current resourceVersion gets HTTP 410."""
    old_rv = (await api.ok("GET", PODS))["metadata"]["resourceVersion"]
    await api.ok("POST", PODS, pod("a"))
    status, body = await api.call("GET", f"{PODS}?resourceVersion={old_rv}&resourceVersionMatch=Exact")
    assert status == 410 and body["reason"] == "Expired"


async def test_watch_bookmarks(api: Api) -> None:
    """allowWatchBookmarks yields periodic BOOKMARKs carrying only a resourceVersion."""
    rv = (await api.ok("GET", PODS))["metadata"]["resourceVersion"]
    _, events = await read_watch(
        api.http, f"{api.url}{PODS}?watch=1&resourceVersion={rv}&allowWatchBookmarks=true",
        stop=lambda evs: any(e["type"] == "BOOKMARK" for e in evs))
    mark = events[-1]
    assert mark["object"]["kind"] == "Pod" and set(mark["object"]["metadata"]) == {"resourceVersion"}


async def test_watch_list_initial_events(api: Api) -> None:
    """sendInitialEvents streams current state, then the initial-events-end bookmark."""
    await api.ok("POST", PODS, pod("a"))
    url = (f"{api.url}{PODS}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
           "&allowWatchBookmarks=true&fieldSelector=metadata.name%3Da")
    _, events = await read_watch(api.http, url, stop=lambda evs: any(e["type"] == "BOOKMARK" for e in evs))
    assert [e["type"] for e in events] == ["ADDED", "BOOKMARK"]
    assert events[1]["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}


async def test_watch_list_requires_not_older_than(api: Api) -> None:
    """sendInitialEvents without resourceVersionMatch=NotOlderThan is refused with 422."""
    status, _ = await api.call("GET", f"{PODS}?watch=1&sendInitialEvents=true")
    assert status == 422


async def test_watch_timeout_ends_stream(api: Api) -> None:
    """timeoutSeconds closes the stream cleanly."""
    status, events = await read_watch(api.http, f"{api.url}{PODS}?watch=1&timeoutSeconds=1", timeout=10)
    assert status == 200 and events == []


async def test_watch_selectors_filter(api: Api) -> None:
    """Watches apply label and field selectors; leaving the selector shows as DELETED."""
    rv = (await api.ok("GET", PODS))["metadata"]["resourceVersion"]
    await api.ok("POST", PODS, pod("a", labels={"tier": "web"}))
    await api.ok("POST", PODS, pod("b", labels={"tier": "db"}))
    await api.ok("PATCH", f"{PODS}/a", {"metadata": {"labels": {"tier": "cache"}}},
                 headers={"Content-Type": "application/merge-patch+json"})
    _, events = await read_watch(
        api.http, f"{api.url}{PODS}?watch=1&resourceVersion={rv}&labelSelector=tier%3Dweb",
        stop=lambda evs: len(evs) >= 2)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "a"), ("DELETED", "a")]
    _, events = await read_watch(
        api.http, f"{api.url}{PODS}?watch=1&resourceVersion={rv}&fieldSelector=metadata.name%3Db",
        stop=lambda evs: len(evs) >= 1)
    assert [e["object"]["metadata"]["name"] for e in events] == ["b"]


async def test_health_and_version(api: Api) -> None:
    """/healthz, /readyz, /livez answer ok; /version reports a 1.36 server."""
    for path in ("/healthz", "/readyz", "/livez"):
        async with api.http.get(api.url + path) as resp:
            assert resp.status == 200 and await resp.text() == "ok"
    version = await api.ok("GET", "/version")
    assert version["major"] == "1" and version["minor"] == "36"


async def test_dry_run_stores_nothing(api: Api) -> None:
    """dryRun=All validates and answers like a write, but nothing is stored or changed."""
    out = await api.ok("POST", f"{DS}?dryRun=All", daemonset("x"))
    assert out["metadata"]["name"] == "x"
    status, _ = await api.call("GET", f"{DS}/x")
    assert status == 404
    await api.ok("POST", DS, daemonset("x"))
    await api.ok("PATCH", f"{DS}/x?dryRun=All", {"metadata": {"labels": {"a": "b"}}},
                 headers={"Content-Type": "application/merge-patch+json"})
    await api.ok("DELETE", f"{DS}/x?dryRun=All")
    stored = await api.ok("GET", f"{DS}/x")
    assert "labels" not in stored["metadata"]


async def test_large_list_streams_complete(api: Api) -> None:
    """A list above the streaming threshold arrives as one valid List with every object."""
    for i in range(2600):
        api.sim.storage.create("pods", pod(f"p{i:04d}"), namespace="default")
    out = await api.ok("GET", PODS)
    assert [p["metadata"]["name"] for p in out["items"]] == [f"p{i:04d}" for i in range(2600)]
    assert out["kind"] == "PodList" and out["metadata"]["resourceVersion"]


async def test_watch_single_object_path(api: Api) -> None:
    """GET .../pods/a?watch=true watches only that object."""
    await api.ok("POST", PODS, pod("a"))
    await api.ok("POST", PODS, pod("b"))
    _, events = await read_watch(api.http, f"{api.url}{PODS}/a?watch=true&timeoutSeconds=1", timeout=10)
    assert [e["object"]["metadata"]["name"] for e in events] == ["a"]


async def test_patch_preconditions_in_the_body(api: Api) -> None:
    """A strategic merge patch naming a stale resourceVersion gets 409 Conflict; one naming another UID is
    refused; nothing changes. dsctl's in-place image update relies on both."""
    content_type = "application/strategic-merge-patch+json"
    created = await api.ok("POST", PODS, pod("a", labels={"x": "1"}))
    meta = created["metadata"]
    headers = {"Content-Type": content_type}
    image = {"spec": {"containers": [{"name": "c", "image": "nginx:2"}]}}
    out = await api.ok("PATCH", f"{PODS}/a", {"metadata": {"resourceVersion": meta["resourceVersion"],
                                                           "uid": meta["uid"], "labels": {"y": "2"}}},
                       headers=headers)
    assert out["metadata"]["labels"] == {"x": "1", "y": "2"}
    status, body = await api.call("PATCH", f"{PODS}/a", {"metadata": {"resourceVersion": meta["resourceVersion"],
                                                                      "labels": {"z": "3"}}, **image},
                                  headers=headers)
    assert (status, body["reason"]) == (409, "Conflict")
    status, body = await api.call("PATCH", f"{PODS}/a", {"metadata": {"uid": "someone-else", "labels": {"z": "3"}}},
                                  headers=headers)
    assert status in (409, 422), body
    got = await api.ok("GET", f"{PODS}/a")
    assert "z" not in got["metadata"]["labels"] and got["metadata"]["uid"] == meta["uid"]
