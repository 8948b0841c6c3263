"""``dsctl view`` at 5,000 nodes x 20 DaemonSets: page load and the cost of live updates.

Everything the view does after the informers decoded an event runs here, in process, on
synthetic but realistic objects (projected pods, as the view's informer caches them): the
stores, the handlers, ``GridModel.flush``, the snapshot and its encoding, the server-sent
events, and the page itself in headless Chromium. The API server and the watch decoding are
not measured (the informer benchmarks cover them).

Figures:

- **server, page load**: first full computation of every cell; snapshot build, JSON encoding,
  raw and gzip bytes;
- **server, updates**: CPU seconds per 1,000 pod changes (the store update the informer does,
  and the view's own handlers plus flush, separately), bytes pushed; the same 1,000 changes
  spread over one second of flushes, as a rollout delivers them; one DaemonSet's template
  change (a whole row); 1,000 changes in a paused DaemonSet (holds recomputed);
- **browser**: time from navigation to the first full paint of the grid, snapshot bytes on the
  wire, the time of one full draw; then, while the server applies 1,000 pod changes a second,
  the page's JavaScript time per 1,000 changed cells and its frame intervals.

Run: ``.venv/bin/python -m benchmarks view-grid [--nodes 5000 --daemonsets 20] [--no-browser]``
(about a minute). Writes ``benchmarks/results/view_grid.json``. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import itertools
import random
import statistics
import time
from typing import Any

import orjson

from benchmarks.harness.results import environment, log, write_result
from dsctl.app.collector import freeze_caches, tune_collector
from dsctl.daemonset.history import plan_history
from dsctl.informer import BY_OWNER_UID, Store, by_owner_uid, make_pod_projection, object_key, project_node
from dsctl.view.model import BY_OWNER_NODE, ZONE_LABEL, GridModel, by_owner_node
from dsctl.view.server import ViewServer

_TS = "2026-12-07T10:00:00Z"


def make_node(i: int) -> dict[str, Any]:
    name = f"node-{i:05d}"
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "uid": f"node-uid-{i}", "resourceVersion": "1", "creationTimestamp": _TS,
                         "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                    ZONE_LABEL: f"eu-west-1{'abc'[i % 3]}", "pool": f"pool-{i % 7}"}},
            "spec": {},
            "status": {"conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": _TS}]}}


def make_ds(d: int, *, image: str = "agent:1.0", annotations: dict[str, str] | None = None) -> dict[str, Any]:
    name = f"agent-{d:02d}"
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": name, "namespace": "kube-system", "uid": f"ds-uid-{d}", "generation": 1,
                         "annotations": annotations or {}},
            "spec": {"selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "agent", "image": image}]}},
                     "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "10%"}}},
            "status": {"desiredNumberScheduled": 0, "updatedNumberScheduled": 0, "numberAvailable": 0}}


def make_pod(ds: dict[str, Any], node: str, serial: int, *, hash: str, ready: bool = True) -> dict[str, Any]:
    name = ds["metadata"]["name"]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"{name}-{serial:06x}", "namespace": "kube-system", "uid": f"pod-uid-{serial}",
                         "resourceVersion": str(serial), "creationTimestamp": _TS,
                         "labels": {"app": name, "controller-revision-hash": hash},
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": name,
                                              "uid": ds["metadata"]["uid"], "controller": True,
                                              "blockOwnerDeletion": True}]},
            "spec": {"nodeName": node, "containers": [{"name": "agent", "image": "agent:1.0"}],
                     "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                         "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In",
                                                                 "values": [node]}]}]}}}},
            "status": {"phase": "Running",
                       "conditions": [{"type": "Ready", "status": "True" if ready else "False",
                                       "lastTransitionTime": _TS}],
                       "containerStatuses": [{"name": "agent", "restartCount": 0, "ready": ready}]}}


class Fleet:
    """Stores and a model, fed as the view's informers feed them (store first, then handler)."""

    def __init__(self, nodes: int, daemonsets: int) -> None:
        self.project = make_pod_projection()
        self.daemonsets = Store()
        self.nodes = Store(transform=project_node)
        self.pods = Store(indexers={BY_OWNER_NODE: by_owner_node, BY_OWNER_UID: by_owner_uid}, transform=self.project)
        self.revisions = Store(indexers={BY_OWNER_UID: by_owner_uid})
        self.model = GridModel(daemonsets=self.daemonsets, nodes=self.nodes, pods=self.pods, revisions=self.revisions)
        self.node_names = [f"node-{i:05d}" for i in range(nodes)]
        self.ds = [make_ds(d) for d in range(daemonsets)]
        self.hashes = [plan_history(ds=ds, revisions=[]).hash for ds in self.ds]
        self.serial = 0
        self.pod_at: dict[tuple[int, str], dict[str, Any]] = {}
        for i in range(nodes):
            self.nodes.upsert(make_node(i))
            self.model.on_node(self.nodes.get(self.node_names[i]) or {})
        for ds in self.ds:
            self.put_ds(ds)
        for d, ds in enumerate(self.ds):
            for node in self.node_names:
                self.put_pod(d, make_pod(ds, node, self.next(), hash=self.hashes[d]))

    def next(self) -> int:
        self.serial += 1
        return self.serial

    def put_ds(self, ds: dict[str, Any]) -> None:
        old, new = self.daemonsets.upsert(ds)
        if old is None:
            self.model.on_ds(new)
        else:
            self.model.on_ds_update(old, new)

    def put_pod(self, d: int, pod: dict[str, Any]) -> float:
        """Store the pod (the informer's part) and call the handler; returns the handler's CPU seconds."""
        old, new = self.pods.upsert(pod)
        self.pod_at[(d, pod["spec"]["nodeName"])] = pod
        started = time.process_time()
        if old is None:
            self.model.on_pod(new)
        else:
            self.model.on_pod_update(old, new)
        return time.process_time() - started

    def change(self, rng: random.Random, *, ds_index: int | None = None) -> float:
        """One pod change: a readiness flip, or (one in four) a new revision replacing it."""
        d = rng.randrange(len(self.ds)) if ds_index is None else ds_index
        node = rng.choice(self.node_names)
        pod = self.pod_at[(d, node)]
        if rng.random() < 0.25:
            hash_ = "newhash" if pod["metadata"]["labels"]["controller-revision-hash"] != "newhash" else self.hashes[d]
            fresh = make_pod(self.ds[d], node, self.next(), hash=hash_)
            gone = self.pods.delete(object_key(pod))
            cpu = 0.0
            if gone is not None:
                started = time.process_time()
                self.model.on_pod(gone)
                cpu += time.process_time() - started
            return cpu + self.put_pod(d, fresh)
        ready = pod["status"]["conditions"][0]["status"] != "True"
        changed = {**pod, "metadata": {**pod["metadata"], "resourceVersion": str(self.next())},
                   "status": {**pod["status"], "conditions": [{"type": "Ready", "status": str(ready),
                                                               "lastTransitionTime": _TS}]}}
        return self.put_pod(d, changed)


def timed(func: Any) -> tuple[Any, float]:
    started = time.process_time()
    result = func()
    return result, time.process_time() - started


def server_figures(fleet: Fleet, rounds: int, changes: int) -> dict[str, Any]:
    rng = random.Random(7)
    out: dict[str, Any] = {}
    update, first = timed(fleet.model.flush)
    out["first_flush_cpu_s"] = round(first, 3)
    snapshot, build = timed(fleet.model.snapshot)
    body, encode = timed(lambda: orjson.dumps(snapshot))
    packed, compress = timed(lambda: gzip.compress(body, 6))
    out["snapshot"] = {"build_cpu_s": round(build, 3), "encode_cpu_s": round(encode, 3),
                       "gzip_cpu_s": round(compress, 3), "bytes": len(body), "gzip_bytes": len(packed),
                       "cells": sum(len(r) for r in snapshot["cells"])}
    fleet.model.flush()

    per_round = []
    for _ in range(rounds):
        informer = time.process_time()
        handlers = sum(fleet.change(rng) for _ in range(changes))
        informer = time.process_time() - informer - handlers
        update, flush = timed(fleet.model.flush)
        message = orjson.dumps(update.wire()) if update is not None else b""
        per_round.append({"handlers_cpu_s": handlers, "flush_cpu_s": flush, "store_cpu_s": informer,
                          "bytes": len(message), "cells": len(update.cells) // 3 if update else 0})
    out["updates_1000_in_one_flush"] = _summary(per_round)

    spread = []
    for _ in range(rounds):
        cpu = 0.0
        total_bytes = 0
        for _flush in range(7):  # one second of 150 ms flushes
            cpu += sum(fleet.change(rng) for _ in range(changes // 7))
            update, flush = timed(fleet.model.flush)
            cpu += flush
            total_bytes += len(orjson.dumps(update.wire())) if update is not None else 0
        spread.append({"view_cpu_s": cpu, "bytes": total_bytes})
    out["updates_1000_over_7_flushes"] = {
        "view_cpu_s_median": round(statistics.median(r["view_cpu_s"] for r in spread), 4),
        "bytes_median": int(statistics.median(r["bytes"] for r in spread)),
    }

    ds = make_ds(0, image="agent:2.0")
    ds["metadata"]["generation"] = 2
    fleet.put_ds(ds)
    update, flush = timed(fleet.model.flush)
    out["template_change_one_row"] = {"flush_cpu_s": round(flush, 4),
                                      "cells": len(update.cells) // 3 if update else 0,
                                      "bytes": len(orjson.dumps(update.wire())) if update else 0}
    paused = make_ds(1, annotations={"dsctl.io/paused": "true"})
    paused["spec"]["template"]["spec"]["containers"][0]["image"] = "agent:2.0"
    paused["metadata"]["generation"] = 2
    fleet.put_ds(paused)
    update, flush = timed(fleet.model.flush)
    out["pause_row"] = {"flush_cpu_s": round(flush, 4), "cells": len(update.cells) // 3 if update else 0}
    held = []
    for _ in range(rounds):
        handlers = sum(fleet.change(rng, ds_index=1) for _ in range(changes))
        update, cost = timed(fleet.model.flush)
        held.append({"handlers_cpu_s": handlers, "flush_cpu_s": cost, "store_cpu_s": 0.0,
                     "bytes": len(orjson.dumps(update.wire())) if update else 0,
                     "cells": len(update.cells) // 3 if update else 0})
    out["updates_1000_in_paused_ds"] = _summary(held)
    return out


def _summary(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    def med(key: str) -> float:
        return round(float(statistics.median(r[key] for r in rounds)), 4)

    return {"handlers_cpu_s_median": med("handlers_cpu_s"), "flush_cpu_s_median": med("flush_cpu_s"),
            "view_cpu_s_median": round(statistics.median(r["handlers_cpu_s"] + r["flush_cpu_s"] for r in rounds), 4),
            "store_cpu_s_median": med("store_cpu_s"), "bytes_median": int(med("bytes")),
            "changed_cells_median": int(med("cells")), "rounds": len(rounds)}


async def browser_figures(fleet: Fleet, *, seconds: float, rate: int) -> dict[str, Any]:
    from tests.support.browser import chromium, unavailable

    reason = unavailable()
    if reason is not None:
        return {"skipped": reason}
    server = ViewServer(fleet.model)
    fleet.model.mark_synced()
    url = await server.start(host="127.0.0.1", port=0)
    rng = random.Random(11)
    try:
        with chromium(width=1600, height=1000) as driver:
            load = await asyncio.to_thread(_load_page, driver, url)
            log("page loaded", **{k: v for k, v in load.items() if not isinstance(v, dict)})
            await asyncio.to_thread(driver.execute_script, _FRAME_PROBE)
            before = await asyncio.to_thread(driver.execute_script, "return window.dsctlView.stats()")
            started = time.monotonic()
            cpu = time.process_time()
            applied = 0
            while time.monotonic() - started < seconds:
                tick = time.monotonic()
                for _ in range(rate // 10):
                    fleet.change(rng)
                applied += rate // 10
                await asyncio.sleep(max(0.0, 0.1 - (time.monotonic() - tick)))
            await asyncio.sleep(0.5)
            server_cpu = time.process_time() - cpu
            after = await asyncio.to_thread(driver.execute_script, "return window.dsctlView.stats()")
            frames = await asyncio.to_thread(driver.execute_script, "return window.__frames")
    finally:
        await server.stop()
    gaps = [b - a for a, b in itertools.pairwise(frames)]
    cells = after["cellsApplied"] - before["cellsApplied"]
    js_ms = (after["applyMs"] - before["applyMs"]) + (after["drawMs"] - before["drawMs"])
    return {
        **load,
        "live": {"pod_changes": applied, "seconds": seconds, "deltas": after["deltas"] - before["deltas"],
                 "cells_applied": cells, "js_ms_per_1000_cells": round(js_ms / max(cells, 1) * 1000, 2),
                 "apply_ms_total": round(after["applyMs"] - before["applyMs"], 1),
                 "draw_ms_total": round(after["drawMs"] - before["drawMs"], 1),
                 "frame_interval_ms_p50": round(statistics.median(gaps), 1) if gaps else None,
                 "frame_interval_ms_max": round(max(gaps), 1) if gaps else None,
                 "frames_over_50ms": sum(1 for g in gaps if g > 50),
                 "server_process_cpu_s": round(server_cpu, 3),
                 "bytes_pushed": server.stats["bytes_pushed"]},
    }


_FRAME_PROBE = """
window.__frames = [];
(function tick(t) { window.__frames.push(t); if (window.__frames.length < 100000) requestAnimationFrame(tick); })
(performance.now());
"""


def _load_page(driver: Any, url: str) -> dict[str, Any]:
    driver.get(url)
    deadline = time.monotonic() + 60
    while not driver.execute_script("return !!(window.dsctlView && window.dsctlView.ready())"):
        if time.monotonic() > deadline:
            raise TimeoutError("the page did not paint within 60 s")
        time.sleep(0.05)
    stats = driver.execute_script("return window.dsctlView.stats()")
    timing = driver.execute_script("""
        const r = performance.getEntriesByType('resource').find(e => e.name.endsWith('/api/snapshot'));
        const n = performance.getEntriesByType('navigation')[0];
        return {transfer: r ? r.transferSize : null, encoded: r ? r.encodedBodySize : null,
                decoded: r ? r.decodedBodySize : null, fetch_ms: r ? r.duration : null,
                dom_content_loaded_ms: n ? n.domContentLoadedEventEnd : null};""")
    geometry = driver.execute_script("return window.dsctlView.geometry()")
    return {"first_paint_ms": round(stats["firstPaintMs"], 1), "full_draw_ms": round(stats["lastFullDrawMs"], 1),
            "snapshot_fetch_ms": round(timing["fetch_ms"] or 0, 1), "snapshot_transfer_bytes": timing["transfer"],
            "snapshot_encoded_bytes": timing["encoded"], "snapshot_decoded_bytes": timing["decoded"],
            "cells": driver.execute_script("return window.dsctlView.cellCount()"), "canvas": geometry}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks view-grid", description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--daemonsets", type=int, default=20)
    parser.add_argument("--changes", type=int, default=1000, help="pod changes per measured round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--live-seconds", type=float, default=10.0, help="seconds of live updates in the browser")
    parser.add_argument("--no-browser", action="store_true")
    args = parser.parse_args(argv)
    tune_collector()  # as 'dsctl view' runs: the caches are frozen once synced
    started = time.process_time()
    fleet = Fleet(args.nodes, args.daemonsets)
    setup = time.process_time() - started
    freeze_caches()
    log("fleet built", nodes=args.nodes, daemonsets=args.daemonsets, pods=len(fleet.pods), cpu_s=round(setup, 2))
    result: dict[str, Any] = {"nodes": args.nodes, "daemonsets": args.daemonsets, "pods": len(fleet.pods),
                              "changes_per_round": args.changes, "setup_cpu_s": round(setup, 2)}
    result["server"] = server_figures(fleet, args.rounds, args.changes)
    log("server figures", **{k: v for k, v in result["server"].items() if not isinstance(v, dict)})
    if not args.no_browser:
        result["browser"] = asyncio.run(browser_figures(fleet, seconds=args.live_seconds, rate=args.changes))
    result["environment"] = environment()
    write_result("view_grid", result)


if __name__ == "__main__":
    main()
