"""CRD mode: ``dsctl run --resource dsctl.io/v1`` reconciles dsctl's own DaemonSet kind, installed
with plain ``kubectl apply`` of the shipped CRD and example, exactly as it does apps/v1.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dsctl.kube.client import KubeClient
from dsctl.kube.resources import CONTROLLER_REVISIONS, DAEMONSETS, crd_daemonsets
from tests.support.builders import daemonset
from tests.support.clusterview import daemon_pods, node_names, pods_per_node
from tests.support.controllerproc import ControllerProcess
from tests.support.poll import eventually
from tests.support.simproc import SimProcess

MANIFESTS = Path(__file__).resolve().parents[2] / "manifests"
CRD_FILE = MANIFESTS / "crd" / "daemonsets.dsctl.io.yaml"
EXAMPLE = MANIFESTS / "examples" / "nginx-dsctl-crd.yaml"
CUSTOM = crd_daemonsets()
NEW_IMAGE = "nginx:1.28"

pytestmark = pytest.mark.parametrize("sim", [{"nodes": 3}], indirect=True)


async def _served(sim: SimProcess) -> bool:
    return (await sim.kubectl("get", "daemonsets.dsctl.io", "-A", check=False)).returncode == 0


async def _settled(kube: KubeClient, *, image: str, available: bool = True) -> dict[str, Any] | None:
    """The custom DaemonSet once every node runs one ready pod with ``image`` and status says so.

    ``available=False`` skips ``numberAvailable``, which the example holds back for its
    ``minReadySeconds`` of 5.
    """
    ds = await kube.get(CUSTOM, "nginx", namespace="default")
    status = ds.get("status") or {}
    if status.get("observedGeneration") != ds["metadata"]["generation"]:
        return None
    counters = ["desiredNumberScheduled", "currentNumberScheduled", "numberReady", "updatedNumberScheduled"]
    if not all(status.get(k) == 3 for k in [*counters, *(["numberAvailable"] if available else [])]):
        return None
    pods = await daemon_pods(kube, "nginx", include_terminating=True)
    if len(pods) != 3 or any(p["spec"]["containers"][0]["image"] != image for p in pods):
        return None
    return ds


def _controller_ref(obj: dict[str, Any]) -> dict[str, Any]:
    refs = [r for r in obj["metadata"].get("ownerReferences") or [] if r.get("controller")]
    assert len(refs) == 1, obj["metadata"]
    ref: dict[str, Any] = refs[0]
    return ref


async def test_custom_daemonset_reconciles_and_rolls_out_like_apps_v1(sim: SimProcess, kube: KubeClient) -> None:
    """kubectl apply of the CRD and the example gives one pod per node owned by dsctl.io/v1, then a rolling update."""
    await sim.kubectl("apply", "-f", str(CRD_FILE))
    await eventually(lambda: _served(sim), message="CRD served")
    # An apps/v1 DaemonSet is not this mode's business: it must stay untouched throughout.
    await kube.create(DAEMONSETS, daemonset("builtin"), namespace="default")
    async with ControllerProcess(sim.kubeconfig, args=["--resource", "dsctl.io/v1"]) as ctl:
        await sim.kubectl("apply", "-f", str(EXAMPLE))
        ds = await eventually(lambda: _settled(kube, image="nginx:1.27", available=False),
                              message="example reconciled")
        assert dict(await pods_per_node(kube, "nginx")) == dict.fromkeys(await node_names(kube), 1)
        uid = ds["metadata"]["uid"]
        for pod in await daemon_pods(kube, "nginx"):
            ref = _controller_ref(pod)
            assert (ref["apiVersion"], ref["kind"], ref["name"], ref["uid"]) == ("dsctl.io/v1", "DaemonSet", "nginx",
                                                                                 uid)
            assert ref["blockOwnerDeletion"] is True
        table = (await sim.kubectl("get", "dds", "nginx")).stdout
        assert table.split()[:2] == ["NAME", "DESIRED"] and "nginx" in table, table

        # Rolling update of the image (and minReadySeconds 0, so the test need not wait 5 s per node).
        patch = ('[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"' + NEW_IMAGE + '"},'
                 '{"op":"replace","path":"/spec/minReadySeconds","value":0}]')
        await sim.kubectl("patch", "dds", "nginx", "--type", "json", "-p", patch)
        ds = await eventually(lambda: _settled(kube, image=NEW_IMAGE), message="rolling update complete")
        assert ds["metadata"]["generation"] == 2

        revisions = (await kube.list(CONTROLLER_REVISIONS, namespace="default"))["items"]
        ours = [r for r in revisions if any(o.get("uid") == uid for o in r["metadata"].get("ownerReferences") or [])]
        assert len(ours) == 2, [r["metadata"]["name"] for r in revisions]
        for rev in ours:
            ref = _controller_ref(rev)
            assert (ref["apiVersion"], ref["kind"]) == ("dsctl.io/v1", "DaemonSet")

        builtin = await kube.get(DAEMONSETS, "builtin", namespace="default")
        assert not builtin.get("status", {}).get("observedGeneration"), builtin.get("status")
        assert not await daemon_pods(kube, "builtin")
        assert not ctl.errors(), ctl.errors()[:3]
