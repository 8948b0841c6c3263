"""``dsctl set image`` and ``kubectl dsctl set image`` against the simulator, in both modes."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dsctl.kube.client import KubeClient
from dsctl.kube.resources import DAEMONSETS, Resource, crd_daemonsets
from tests.support.builders import daemonset
from tests.support.crdfiles import CRD_FILE
from tests.support.poll import eventually
from tests.support.simproc import SimProcess, kubectl_path

V1, V2, V3 = (f"registry.example/agent:{v}.0" for v in (1, 2, 3))


async def _run(sim: SimProcess, *argv: str) -> subprocess.CompletedProcess[str]:
    """A command with the simulator's kubeconfig in ``$KUBECONFIG`` and the plugin on ``PATH``."""
    env = {**os.environ, "KUBECONFIG": sim.kubeconfig,
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    proc = await asyncio.create_subprocess_exec(*argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                                                stdin=asyncio.subprocess.DEVNULL, env=env)
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    return subprocess.CompletedProcess(list(argv), proc.returncode or 0, out.decode(), err.decode())


async def _image(kube: KubeClient, resource: Resource) -> str:
    ds = await kube.get(resource, "agent", namespace="default")
    return str(ds["spec"]["template"]["spec"]["containers"][0]["image"])


async def _crd_served(sim: SimProcess) -> bool:
    return (await sim.kubectl("get", "daemonsets.dsctl.io", "-A", check=False)).returncode == 0


@pytest.mark.parametrize(
    ("kind", "api_version"),
    [pytest.param("ds", "apps/v1", id="apps-v1"), pytest.param("dds", "dsctl.io/v1", id="crd")],
)
@pytest.mark.parametrize("sim", [{"nodes": 1}], indirect=True)
async def test_set_image_in_both_modes_and_as_a_plugin(sim: SimProcess, kube: KubeClient, kind: str,
                                                       api_version: str) -> None:
    """`dsctl set image KIND/agent agent=IMG` and the kubectl plugin change the template, kubectl-style."""
    resource = DAEMONSETS
    if kind == "dds":
        await sim.kubectl("apply", "-f", str(CRD_FILE))
        await eventually(lambda: _crd_served(sim), message="CRD served")
        resource = crd_daemonsets()
    await kube.create(resource, daemonset("agent", image=V1, api_version=api_version), namespace="default")

    first = await _run(sim, sys.executable, "-m", "dsctl", "set", "image", f"{kind}/agent", f"agent={V2}")
    assert (first.returncode, first.stdout, first.stderr) == (0, f"daemonset.{resource.group}/agent image updated\n",
                                                              "")
    assert await _image(kube, resource) == V2

    plugin = await _run(sim, kubectl_path(), "dsctl", "set", "image", kind, "agent", f"*={V3}")
    assert plugin.returncode == 0, plugin.stderr
    assert await _image(kube, resource) == V3

    again = await _run(sim, sys.executable, "-m", "dsctl", "set", "image", f"{kind}/agent", f"agent={V3}")
    assert (again.returncode, again.stdout) == (0, ""), "nothing to change, nothing said"

    typo = await _run(sim, sys.executable, "-m", "dsctl", "set", "image", f"{kind}/agent", "web=nginx")
    assert (typo.returncode, typo.stderr) == (1, 'error: unable to find container named "web"\n')
    assert await _image(kube, resource) == V3
