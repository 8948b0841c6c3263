"""``dsctl view`` in a real browser: headless Chromium, driven by selenium, against a 200-node
simulated cluster with the real controller rolling real (simulated) pods.

The screenshot of the page mid-test is kept as an artefact: in the test's pytest tmp dir
(``view.png``) and at ``.artifacts/view-browser.png`` in the repository (ignored by git).

Skips, saying why, where Chromium, chromedriver or selenium are missing (``.ci/ensure-chromium``
installs the first two where it may).
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from dsctl.kube.client import KubeClient
from dsctl.kube.resources import DAEMONSETS, EVENTS, NODES, PODS
from tests.support.browser import chromium, requested_urls, unavailable
from tests.support.builders import daemonset
from tests.support.controllerproc import ControllerProcess
from tests.support.poll import eventually
from tests.support.requestaudit import read_all_requests
from tests.support.simproc import SimProcess
from tests.support.viewproc import VIEW_AGENT, ViewProcess

NODE_COUNT = 200
ARTEFACT = Path(__file__).resolve().parents[2] / ".artifacts" / "view-browser.png"
SLOW_START = {"sim.dsctl.io/startup-seconds": "1"}
"""Each wave of the rollout takes a second, so the page is seen mid-rollout."""

_REASON = unavailable()
pytestmark = [
    pytest.mark.skipif(_REASON is not None, reason=f"no browser: {_REASON}"),
    pytest.mark.parametrize("sim", [{"nodes": NODE_COUNT, "args": ["--pod-startup-seconds", "0.2"]}], indirect=True),
    pytest.mark.timeout(180),
]


def _daemonset(name: str, *, image: str, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    body = daemonset(name, image=image, annotations=SLOW_START,
                     strategy={"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%"}})
    if annotations:
        body["metadata"]["annotations"] = annotations
    return body


async def _rolled_out(kube: KubeClient, name: str) -> bool:
    ds = await kube.get(DAEMONSETS, name, namespace="default")
    status = ds.get("status") or {}
    return bool(status.get("observedGeneration") == ds["metadata"]["generation"]
                and status.get("updatedNumberScheduled") == NODE_COUNT
                and status.get("numberAvailable") == NODE_COUNT)


def _rgb(hex_color: str) -> list[int]:
    return [int(hex_color[i:i + 2], 16) for i in (1, 3, 5)]


class Page:
    """The page through selenium, each blocking call run off the event loop."""

    def __init__(self, driver: Any) -> None:
        self.driver = driver

    async def js(self, script: str, *args: Any) -> Any:
        return await asyncio.to_thread(self.driver.execute_script, script, *args)

    async def counts(self, key: str) -> dict[str, int]:
        counts: dict[str, int] = await self.js("return window.dsctlView.counts(arguments[0])", key)
        return counts


async def test_view_in_a_browser(sim: SimProcess, kube: KubeClient, controller: ControllerProcess,
                                 tmp_path: Path) -> None:
    """One cell per node and DaemonSet; cells turn new as pods roll; a paused rollout shows held cells;
    the page stays on its own origin and the view never writes."""
    await kube.create(DAEMONSETS, _daemonset("agent", image="agent:1"), namespace="default")
    await kube.create(DAEMONSETS, _daemonset("held", image="agent:1", annotations={"dsctl.io/paused": "true"}),
                      namespace="default")
    await eventually(lambda: _rolled_out(kube, "agent"), timeout=60, message="agent rolled out")
    await eventually(lambda: _rolled_out(kube, "held"), timeout=60, message="held rolled out")
    for node in ("node-0", "node-1"):  # a zone, to see the per-zone layout
        await kube.patch(NODES, node, {"metadata": {"labels": {"topology.kubernetes.io/zone": "zone-b"}}})

    async with ViewProcess(str(sim.kubeconfig)) as view:
        origin = "{0.scheme}://{0.netloc}".format(urlsplit(view.url))
        with chromium() as driver:
            page = Page(driver)
            await asyncio.to_thread(driver.get, view.url)
            await eventually(lambda: page.js("return !!(window.dsctlView && window.dsctlView.ready() "
                                             "&& window.dsctlView.synced())"), timeout=30, message="page ready")

            # The grid: one cell per node and DaemonSet, exposed as data and painted on a canvas.
            assert await page.js("return window.dsctlView.daemonsets()") == ["default/agent", "default/held"]
            assert len(await page.js("return window.dsctlView.nodes()")) == NODE_COUNT
            cells = await page.js("return document.getElementById('grid').dataset.cells")
            assert cells == str(2 * NODE_COUNT)
            assert await page.counts("default/agent") == {"READY_NEW": NODE_COUNT}
            geometry = await page.js("return window.dsctlView.geometry()")
            assert geometry["canvasWidth"] >= 300 and geometry["blocks"] == 2
            rows = -(-NODE_COUNT // ((geometry["width"] - 24) // geometry["pitch"]))
            assert geometry["canvasHeight"] >= 2 * rows * geometry["pitch"]
            pixel = await page.js("return window.dsctlView.pixelAt('default/agent', 'node-7')")
            assert pixel["rgb"] == _rgb(pixel["expected"]), pixel
            await page.js("document.getElementById('byZone').click()")
            assert (await page.js("return window.dsctlView.geometry()"))["blocks"] == 4  # 2 DaemonSets x 2 zones
            await page.js("document.getElementById('byZone').click()")

            # An image update: cells turn to the new revision as pods roll.
            await kube.patch(DAEMONSETS, "agent", {"spec": {"template": {"spec": {"containers": [
                {"name": "agent", "image": "agent:2"}]}}}}, namespace="default", patch_type="strategic")
            seen: list[dict[str, int]] = []

            async def mixed() -> bool:
                seen.append(await page.counts("default/agent"))
                last = seen[-1]
                return any(k.endswith("_NEW") for k in last) and any(k.endswith("_OLD") for k in last)

            await eventually(mixed, timeout=30, message="old and new revisions side by side")
            screenshot = tmp_path / "view.png"
            await asyncio.to_thread(driver.save_screenshot, str(screenshot))
            await eventually(lambda: _rolled_out(kube, "agent"), timeout=60, message="agent rolled out again")
            final = await eventually(
                lambda: _page_equals(page, "default/agent", {"READY_NEW": NODE_COUNT}), timeout=15,
                message="every agent cell new and Ready")
            assert final

            # A paused rollout: every old pod held.
            await kube.patch(DAEMONSETS, "held", {"spec": {"template": {"spec": {"containers": [
                {"name": "agent", "image": "agent:2"}]}}}}, namespace="default", patch_type="strategic")
            await eventually(lambda: _page_equals(page, "default/held", {"HELD_PAUSED": NODE_COUNT}), timeout=15,
                             message="every held cell paused")
            assert (await page.js("return window.dsctlView.header('default/held')"))["paused"] is True

            # Details: the pod, the node, the pod's events (the simulator drops events over its
            # budget, so the test writes one of its own).
            pod = (await kube.list(PODS, namespace="default", label_selector="app=agent",
                                   field_selector="spec.nodeName=node-5"))["items"][0]
            await kube.create(EVENTS, _event_about(pod), namespace="default")
            await page.js("window.dsctlView.clickCell('default/agent', 'node-5')")
            details = await eventually(
                lambda: page.js("const t = document.getElementById('detailsBody').innerText; "
                                "return t.includes('ViewProbe') ? t : null"), timeout=10, message="details shown")
            assert pod["metadata"]["name"] in details and "zone-b" not in details and "Ready" in details

            urls = await asyncio.to_thread(requested_urls, driver, document=origin)
            assert {f"{origin}/", f"{origin}/static/view.js", f"{origin}/api/snapshot"} <= set(urls)
            assert [u for u in urls if not (u.startswith(origin + "/") or u.startswith("data:"))] == []
            errors = [e for e in await asyncio.to_thread(driver.get_log, "browser") if e["level"] == "SEVERE"]
            assert errors == []

    ARTEFACT.parent.mkdir(exist_ok=True)
    shutil.copyfile(screenshot, ARTEFACT)
    records, _ = await read_all_requests(sim)
    mine = [r for r in records if VIEW_AGENT.match(str(r.get("user_agent") or ""))]
    assert {r["verb"] for r in mine} >= {"list", "watch"}
    assert [r for r in mine if r["verb"] not in ("get", "list", "watch")] == []


def _event_about(pod: dict[str, Any]) -> dict[str, Any]:
    meta = pod["metadata"]
    return {"apiVersion": "v1", "kind": "Event", "metadata": {"generateName": "view-probe-", "namespace": "default"},
            "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": meta["name"], "namespace": "default",
                               "uid": meta["uid"]},
            "reason": "ViewProbe", "message": "written by the test", "type": "Normal", "count": 1,
            "firstTimestamp": "2026-12-07T10:00:00Z", "lastTimestamp": "2026-12-07T10:00:00Z",
            "source": {"component": "test"}}


async def _page_equals(page: Page, key: str, expected: dict[str, int]) -> bool:
    return await page.counts(key) == expected
