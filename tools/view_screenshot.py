"""Take the screenshot of ``dsctl view`` that the guide shows (``docs/guide/img/view.png``).

A 300-node simulated cluster in three zones, the real controller, and five DaemonSets caught in
different states: one rolling an image update, one paused, one on a node pool with a partition,
one canaried by zone, and one gating nodes that joined under the readiness taint, its agent still
starting there (every daemon pod tolerates the taint; the gate waits for the gating agent). The view runs in
this process; headless Chromium (see ``tests/support/browser.py``) takes the picture with the
details of one held cell open.

Run: ``.venv/bin/python tools/view_screenshot.py [--out docs/guide/img/view.png]`` (about a minute).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dsctl.kube import errors  # noqa: E402
from dsctl.kube.client import KubeClient  # noqa: E402
from dsctl.kube.resources import DAEMONSETS, NAMESPACES, NODES  # noqa: E402
from dsctl.view.app import running_view  # noqa: E402
from dsctl.view.cells import READINESS_TAINT  # noqa: E402
from tests.support.browser import chromium, unavailable  # noqa: E402
from tests.support.builders import daemonset  # noqa: E402
from tests.support.controllerproc import ControllerProcess  # noqa: E402
from tests.support.simproc import SimProcess  # noqa: E402

NODES_COUNT = 300
JOINING = (17, 18, 19, 120, 121, 250)
"""Nodes that join under the readiness taint, where the gating agent takes long to start."""
STARTUP = {"sim.dsctl.io/startup-seconds": "3"}


def _ds(name: str, *, annotations: dict[str, str] | None = None, pod_annotations: dict[str, str] | None = None,
        **kwargs: Any) -> dict[str, Any]:
    body = daemonset(name, namespace="kube-system", image=f"registry.example/{name}:1.0",
                     annotations=STARTUP if pod_annotations is None else pod_annotations,
                     strategy={"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "10%"}}, **kwargs)
    body["metadata"]["annotations"] = annotations or {}
    return body


async def _rolled_out(kube: KubeClient, names: list[str]) -> bool:
    for name in names:
        status = (await kube.get(DAEMONSETS, name, namespace="kube-system")).get("status") or {}
        desired = status.get("desiredNumberScheduled", -1)
        if desired <= 0 or status.get("numberReady") != desired:
            return False
    return True


async def main(out: Path) -> None:
    reason = unavailable()
    if reason is not None:
        raise SystemExit(f"no browser: {reason}")
    async with SimProcess(nodes=NODES_COUNT, args=["--pod-startup-seconds", "0.3"]) as sim, \
            ControllerProcess(str(sim.kubeconfig)):
        kube = await KubeClient.from_config(kubeconfig=str(sim.kubeconfig), qps=500, burst=1000)
        with contextlib.suppress(errors.AlreadyExists):
            await kube.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace",
                                           "metadata": {"name": "kube-system"}})
        try:
            for i in range(NODES_COUNT):
                labels = {"topology.kubernetes.io/zone": f"zone-{'abc'[i * 3 // NODES_COUNT]}"}
                if i % 7 == 0:
                    labels["pool"] = "gpu"
                patch: dict[str, Any] = {"metadata": {"labels": labels}}
                if i in JOINING:
                    # The gating agent's pods there (which take the node's start-up) stay starting.
                    patch["metadata"]["annotations"] = {"sim.dsctl.io/pod-startup-seconds": "600"}
                await kube.patch(NODES, f"node-{i}", patch)
            daemonsets = [
                _ds("node-agent"),
                _ds("log-shipper", annotations={"dsctl.io/paused": "true"}),
                _ds("gpu-plugin", node_selector={"pool": "gpu"}, annotations={"dsctl.io/partition": "15"}),
                _ds("net-policy", annotations={"dsctl.io/selector": "topology.kubernetes.io/zone=zone-a"}),
                _ds("cni", annotations={"dsctl.io/node-readiness-gate": "true"}, pod_annotations={}),
            ]
            for body in daemonsets:
                await kube.create(DAEMONSETS, body, namespace="kube-system")
            # The readiness taint as the joining nodes register with it. Tainted before a gating
            # DaemonSet wants them, the gate would lift it at once (no gating agent holds them).
            for i in JOINING:
                await kube.patch(NODES, f"node-{i}", {"spec": {"taints": [{"key": READINESS_TAINT,
                                                                           "effect": "NoSchedule"}]}})
            names = [d["metadata"]["name"] for d in daemonsets][:4]  # cni stays starting on the joining nodes
            deadline = time.monotonic() + 120
            while not await _rolled_out(kube, names):
                if time.monotonic() > deadline:
                    raise SystemExit("the DaemonSets did not roll out within 120 s")
                await asyncio.sleep(0.5)
            for name in names[:4]:
                await kube.patch(DAEMONSETS, name, {"spec": {"template": {"spec": {"containers": [
                    {"name": "agent", "image": f"registry.example/{name}:1.1"}]}}}},
                    namespace="kube-system", patch_type="strategic")
            async with running_view(resource=DAEMONSETS, kubeconfig=str(sim.kubeconfig)) as view:
                await asyncio.sleep(9)  # a few waves into the rollouts
                await asyncio.to_thread(_shoot, view.url + "?group=zone", out)
        finally:
            await kube.close()


def _shoot(url: str, out: Path) -> None:
    with chromium(width=1600, height=1000) as driver:
        driver.get(url)
        deadline = time.monotonic() + 30
        while not driver.execute_script("return !!(window.dsctlView && window.dsctlView.ready())"):
            if time.monotonic() > deadline:
                raise SystemExit("the page did not paint")
            time.sleep(0.1)
        driver.execute_script("window.dsctlView.clickCell('kube-system/log-shipper', 'node-42')")
        time.sleep(1.5)
        out.parent.mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(out))
    print(f"wrote {out}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "guide" / "img" / "view.png")
    asyncio.run(main(parser.parse_args().out))
