"""The patches real kubectl sends, captured on the wire, and what the simulator makes of them.

A recording proxy sits between kubectl and an in-process simulator: every write's method,
path, query, content type and body is kept, so each test asserts both the shape kubectl
produced (``$setElementOrder``, ``$patch: replace``...) and the stored result.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
import yaml
from aiohttp import web

from dsctl_sim.cluster import SimCluster, SimOptions
from tests.support.poll import eventually
from tests.support.simproc import kubectl_path

SMP = "application/strategic-merge-patch+json"
MERGE = "application/merge-patch+json"


@dataclass
class Write:
    """One captured write request."""

    method: str
    path: str
    query: dict[str, str]
    content_type: str
    body: Any


@dataclass
class Kube:
    """kubectl wired through the recording proxy to a running simulator."""

    sim: SimCluster
    kubeconfig: Path
    home: Path
    http: aiohttp.ClientSession
    writes: list[Write] = field(default_factory=list)

    async def kubectl(self, *args: str, stdin: str | None = None) -> str:
        """Run kubectl; fail the test with its stderr on a non-zero exit."""
        proc = await asyncio.create_subprocess_exec(
            kubectl_path(), "--kubeconfig", str(self.kubeconfig), *args,
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, "HOME": str(self.home)},
        )
        out, err = await asyncio.wait_for(proc.communicate(stdin.encode() if stdin is not None else None), 60)
        assert proc.returncode == 0, f"kubectl {' '.join(args)}: {err.decode()}"
        return out.decode()

    def patches(self) -> list[Write]:
        """Captured PATCH requests, oldest first."""
        return [w for w in self.writes if w.method == "PATCH"]

    async def get(self, path: str) -> Any:
        """GET an object straight from the simulator."""
        async with self.http.get(self.sim.url + path) as resp:
            assert resp.status == 200, await resp.text()
            return orjson.loads(await resp.read())

    async def post(self, path: str, body: Any) -> Any:
        """Create an object straight in the simulator."""
        async with self.http.post(self.sim.url + path, data=orjson.dumps(body),
                                  headers={"Content-Type": "application/json"}) as resp:
            assert resp.status == 201, await resp.text()
            return orjson.loads(await resp.read())


def _recording_proxy(kube: Kube) -> web.Application:
    async def forward(request: web.Request) -> web.Response:
        raw = await request.read()
        if request.method in ("POST", "PUT", "PATCH"):
            kube.writes.append(Write(request.method, request.path, dict(request.query),
                                     request.headers.get("Content-Type", ""), orjson.loads(raw) if raw else None))
        headers = {k: v for k, v in request.headers.items() if k.lower() not in ("host", "content-length")}
        async with kube.http.request(request.method, kube.sim.url + request.path_qs, headers=headers,
                                     data=raw or None) as resp:
            payload = await resp.read()
            keep = {k: v for k, v in resp.headers.items() if k.lower() in ("content-type", "cache-control", "etag")}
            return web.Response(status=resp.status, body=payload, headers=keep)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", forward)
    return app


@pytest.fixture
async def kube(tmp_path: Path) -> AsyncIterator[Kube]:
    """A 2-node simulator without control loops (objects change only by kubectl), behind the recorder."""
    sim = SimCluster(SimOptions(nodes=2, control_plane=False, seed=3))
    await sim.start()
    runner: web.AppRunner | None = None
    try:
        async with aiohttp.ClientSession(auto_decompress=True) as http:
            kube = Kube(sim, tmp_path / "kubeconfig", tmp_path, http)
            runner = web.AppRunner(_recording_proxy(kube))
            await runner.setup()
            site = web.TCPSite(runner, "127.0.0.1", 0)
            await site.start()
            port = runner.addresses[0][1]
            kube.kubeconfig.write_text(yaml.safe_dump({
                "apiVersion": "v1", "kind": "Config", "current-context": "rec",
                "clusters": [{"name": "rec", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
                "users": [{"name": "rec", "user": {"token": "test"}}],
                "contexts": [{"name": "rec", "context": {"cluster": "rec", "user": "rec", "namespace": "default"}}],
            }))
            yield kube
    finally:
        if runner is not None:
            await runner.cleanup()
        await sim.stop()


def daemonset_yaml(*containers: dict[str, Any]) -> str:
    """A DaemonSet manifest named agent with these containers."""
    return yaml.safe_dump({
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "agent", "namespace": "default"},
        "spec": {
            "selector": {"matchLabels": {"app": "agent"}},
            "template": {"metadata": {"labels": {"app": "agent"}}, "spec": {"containers": list(containers)}},
        },
    })


DS_PATH = "/apis/apps/v1/namespaces/default/daemonsets/agent"
APP = {"name": "app", "image": "nginx:1.25", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]}
SIDE = {"name": "side", "image": "busybox:1.36"}


def _template_spec(obj: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = obj["spec"]["template"]["spec"]
    return spec


async def test_apply_update_sends_set_element_order_and_changes_only_the_image(kube: Kube) -> None:
    """Second `kubectl apply` (strict validation): a strategic patch with $setElementOrder; generation 2."""
    await kube.kubectl("apply", "-f", "-", stdin=daemonset_yaml(APP, SIDE))
    created = next(w for w in kube.writes if w.method == "POST")
    assert created.query.get("fieldValidation") == "Strict"
    await kube.kubectl("apply", "-f", "-", stdin=daemonset_yaml({**APP, "image": "nginx:1.27"}, SIDE))
    [patch] = kube.patches()
    assert patch.content_type.startswith(SMP)
    assert patch.query.get("fieldValidation") == "Strict"
    assert "kubectl.kubernetes.io/last-applied-configuration" in patch.body["metadata"]["annotations"]
    assert _template_spec(patch.body) == {
        "$setElementOrder/containers": [{"name": "app"}, {"name": "side"}],
        "containers": [{"image": "nginx:1.27", "name": "app"}],
    }
    stored = await kube.get(DS_PATH)
    assert stored["metadata"]["generation"] == 2
    containers = _template_spec(stored)["containers"]
    assert [(c["name"], c["image"]) for c in containers] == [("app", "nginx:1.27"), ("side", "busybox:1.36")]
    assert containers[0]["env"] == APP["env"]
    assert containers[0]["imagePullPolicy"] == "IfNotPresent"


async def test_apply_removing_items_sends_delete_directives(kube: Kube) -> None:
    """Dropping a container and an env var from the manifest deletes them; a new var lands in manifest order."""
    await kube.kubectl("apply", "-f", "-", stdin=daemonset_yaml(APP, SIDE))
    changed = {**APP, "env": [{"name": "A", "value": "1"}, {"name": "C", "value": "3"}]}
    await kube.kubectl("apply", "-f", "-", stdin=daemonset_yaml(changed))
    [patch] = kube.patches()
    body = _template_spec(patch.body)
    assert {"$patch": "delete", "name": "side"} in body["containers"]
    app_patch = next(c for c in body["containers"] if c.get("name") == "app")
    assert {"$patch": "delete", "name": "B"} in app_patch["env"]
    assert app_patch["$setElementOrder/env"] == [{"name": "A"}, {"name": "C"}]
    stored = _template_spec(await kube.get(DS_PATH))
    assert [c["name"] for c in stored["containers"]] == ["app"]
    assert stored["containers"][0]["env"] == changed["env"]


async def test_rollout_restart_then_undo_restores_the_revision_template(kube: Kube) -> None:
    """`rollout restart` adds restartedAt to the template; `rollout undo` replaces the template wholesale."""
    await kube.kubectl("apply", "-f", "-", stdin=daemonset_yaml({**APP, "image": "nginx:1.27"}))
    ds = await kube.get(DS_PATH)
    old_template = {"metadata": {"labels": {"app": "agent"}}, "spec": {**_template_spec(ds), "containers": [
        {**_template_spec(ds)["containers"][0], "image": "nginx:1.24"}]}}
    await kube.post("/apis/apps/v1/namespaces/default/controllerrevisions", {
        "apiVersion": "apps/v1", "kind": "ControllerRevision",
        "metadata": {"name": "agent-1", "labels": {"app": "agent"}, "ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "uid": ds["metadata"]["uid"],
             "controller": True, "blockOwnerDeletion": True}]},
        "data": {"spec": {"template": {**old_template, "$patch": "replace"}}},
        "revision": 1,
    })
    await kube.kubectl("rollout", "restart", "daemonset/agent")
    restart = kube.patches()[-1]
    assert restart.content_type.startswith(SMP)
    restarted = (await kube.get(DS_PATH))["spec"]["template"]["metadata"]["annotations"]
    assert set(restarted) == {"kubectl.kubernetes.io/restartedAt"}
    assert restart.body["spec"]["template"]["metadata"]["annotations"] == restarted

    await kube.kubectl("rollout", "undo", "daemonset/agent", "--to-revision=1")
    undo = kube.patches()[-1]
    assert undo.content_type.startswith(SMP)
    assert undo.body["spec"]["template"]["$patch"] == "replace"
    stored = await kube.get(DS_PATH)
    assert stored["spec"]["template"] == old_template
    assert stored["metadata"]["generation"] == 3


async def _node(kube: Kube) -> dict[str, Any]:
    node: dict[str, Any] = await kube.get("/api/v1/nodes/node-1")
    return node


async def test_node_label_taint_and_cordon_patches(kube: Kube) -> None:
    """label sends a JSON merge patch; taint and cordon send strategic patches; removals null the field."""
    await kube.kubectl("label", "node", "node-1", "disk=ssd")
    assert kube.patches()[-1].content_type.startswith(MERGE)
    assert kube.patches()[-1].body == {"metadata": {"labels": {"disk": "ssd"}}}
    assert (await _node(kube))["metadata"]["labels"]["disk"] == "ssd"
    await kube.kubectl("label", "node", "node-1", "disk-")
    assert "disk" not in (await _node(kube))["metadata"]["labels"]

    await kube.kubectl("taint", "node", "node-1", "dedicated=gpu:NoSchedule")
    await kube.kubectl("taint", "node", "node-1", "evict=now:NoExecute")
    taint_patch = kube.patches()[-1]
    assert taint_patch.content_type.startswith(SMP)
    # Taints are an atomic list: kubectl sends all of them (the new one first) and they replace the old list.
    assert [t["key"] for t in taint_patch.body["spec"]["taints"]] == ["evict", "dedicated"]
    taints = (await _node(kube))["spec"]["taints"]
    assert [(t["key"], t.get("value"), t["effect"]) for t in taints] == [
        ("evict", "now", "NoExecute"), ("dedicated", "gpu", "NoSchedule")]
    await kube.kubectl("taint", "node", "node-1", "dedicated:NoSchedule-")
    assert [t["key"] for t in (await _node(kube))["spec"]["taints"]] == ["evict"]
    await kube.kubectl("taint", "node", "node-1", "evict-")
    assert not (await _node(kube))["spec"].get("taints")

    await kube.kubectl("cordon", "node-1")
    assert kube.patches()[-1].content_type.startswith(SMP)
    assert kube.patches()[-1].body == {"spec": {"unschedulable": True}}
    assert (await _node(kube))["spec"]["unschedulable"] is True
    await kube.kubectl("uncordon", "node-1")
    assert not (await _node(kube))["spec"].get("unschedulable")


CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {
        "group": "example.com",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
        "scope": "Namespaced",
        "versions": [{"name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
                      "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}],
    },
}


async def test_custom_resource_apply_uses_json_merge_patch(kube: Kube) -> None:
    """For a custom resource, strict `kubectl apply` passes and updates with a JSON merge patch."""
    await kube.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(CRD))

    async def served() -> bool:
        async with kube.http.get(kube.sim.url + "/apis/example.com/v1") as resp:
            return resp.status == 200

    await eventually(served, timeout=10, message="widgets served")
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "default"},
              "spec": {"size": 1, "tags": ["a", "b"]}}
    await kube.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(widget))
    widget["spec"] = {"size": 2, "tags": ["b"]}
    await kube.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(widget))
    patch = kube.patches()[-1]
    assert patch.content_type.startswith(MERGE)
    assert patch.query.get("fieldValidation") == "Strict"
    stored = await kube.get("/apis/example.com/v1/namespaces/default/widgets/w")
    assert stored["spec"] == {"size": 2, "tags": ["b"]}


async def test_apply_changing_volume_source_sends_retain_keys(kube: Kube) -> None:
    """Switching a volume from hostPath to emptyDir: kubectl sends $retainKeys and the old source goes."""
    mounted = {**SIDE, "volumeMounts": [{"name": "data", "mountPath": "/data"}]}

    def manifest(volume: dict[str, Any]) -> str:
        doc = yaml.safe_load(daemonset_yaml(mounted))
        doc["spec"]["template"]["spec"]["volumes"] = [{"name": "data", **volume}]
        return yaml.safe_dump(doc)

    await kube.kubectl("apply", "-f", "-", stdin=manifest({"hostPath": {"path": "/var/data"}}))
    await kube.kubectl("apply", "-f", "-", stdin=manifest({"emptyDir": {}}))
    [patch] = kube.patches()
    [volume] = _template_spec(patch.body)["volumes"]
    assert sorted(volume["$retainKeys"]) == ["emptyDir", "name"]
    stored = _template_spec(await kube.get(DS_PATH))
    assert stored["volumes"] == [{"name": "data", "emptyDir": {}}]
