"""The informer's per-event cost, split into decode and apply, without HTTP.

A pod store as the controller builds it (projection; the controller's indexes by target node,
owner UID and orphan namespace) is filled with ``--pods`` pods; then ``--events`` MODIFIED events, encoded as
kube-apiserver sends them (~4 KB each), are timed in two parts, each the best of ``--reps``:

- decode: the reflector's line decoder on each line (for this pod projection, the lean
  decoder of ``dsctl.informer.watchdecode``: msgspec against the projection's fields, so the
  projection is done here);
- apply: the reflector's step on the decoded events, in batches of 50 as a chunk of the
  stream brings them (store and index update, handler fan-out to one counting handler,
  metrics).

The cyclic GC is frozen after set-up, as the controller freezes its caches after the initial
list. ``benchmarks/informer_sync.py``'s ``watch`` case measures the same path end to end over
HTTP; this one says where its time goes.

Usage: ``python benchmarks/informer_event_path.py [--pods 150000 --events 20000 --reps 5]``

``--trees before=DIR,after=DIR --rounds 3`` measures the dsctl of each source tree in turn, each
in a fresh process, alternating, and prints every run's JSON. A tree from before the lean
decoder (no ``Reflector._decode``) is driven through its own per-event path: orjson's
``decode_event`` then the projection in ``_apply``.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import orjson
from informer_common import run_child
from informer_objects import daemon_pod


def measure(*, pods: int, events: int, reps: int, nodes: int) -> dict[str, Any]:
    from prometheus_client import CollectorRegistry

    from dsctl.controller.cacheview import BY_TARGET_NODE, ORPHANS_BY_NAMESPACE, by_target_node, orphans_by_namespace
    from dsctl.daemonset.inplace import IN_PLACE_ANNOTATION
    from dsctl.informer import BY_OWNER_UID, Store, by_owner_uid, make_pod_projection
    from dsctl.informer.informer import Informer
    from dsctl.kube import PODS

    informer = Informer(None, PODS, transform=make_pod_projection(keep_annotations=(IN_PLACE_ANNOTATION,)),  # type: ignore[arg-type]
                        registry=CollectorRegistry(),
                        indexers={BY_TARGET_NODE: by_target_node, BY_OWNER_UID: by_owner_uid,
                                  ORPHANS_BY_NAMESPACE: orphans_by_namespace})
    applied = [0]

    def on_update(_old: dict[str, Any], _new: dict[str, Any]) -> None:
        applied[0] += 1

    informer.add_handler(on_update=on_update)
    reflector = informer.reflector
    store: Store = reflector.store
    for i in range(pods):
        pod = daemon_pod(i, nodes=nodes)
        pod["apiVersion"], pod["kind"] = "v1", "Pod"
        store.upsert(pod)
    lines = []
    for i in range(events):
        pod = daemon_pod(i % pods, nodes=nodes)
        pod["apiVersion"], pod["kind"] = "v1", "Pod"
        pod["metadata"]["resourceVersion"] = str(10_000_000 + i)
        pod["status"]["conditions"][2]["status"] = "False" if i % 2 else "True"
        lines.append(orjson.dumps({"type": "MODIFIED", "object": pod}))
    lean = hasattr(reflector, "_decode")
    decode_event: Callable[[bytes], Any]
    if lean:
        decode_event = reflector._decode

        def apply(decoded: list[Any]) -> None:
            for at in range(0, len(decoded), 50):  # about one chunk of the stream
                reflector._apply(decoded[at:at + 50])
    else:  # a tree from before: orjson's decode_event, then one event at a time
        from dsctl.kube.watch import decode_event as full_decode

        decode_event = full_decode

        def apply(decoded: list[Any]) -> None:
            for event in decoded:
                reflector._apply(event)

    gc.collect()
    gc.freeze()
    decode_best = apply_best = float("inf")
    for _ in range(reps):
        started = time.process_time()
        for line in lines:
            decode_event(line)
        decode_best = min(decode_best, time.process_time() - started)
        decoded = [decode_event(line) for line in lines]
        started = time.process_time()
        apply(decoded)
        apply_best = min(apply_best, time.process_time() - started)
        del decoded
    assert applied[0] == events * reps
    decode_us = decode_best / events * 1e6
    apply_us = apply_best / events * 1e6
    return {"lean_decoder": lean, "pods": pods, "events": events, "reps": reps,
            "decode_us_per_event": round(decode_us, 2), "apply_us_per_event": round(apply_us, 2),
            "events_per_cpu_second": round(1e6 / (decode_us + apply_us)),
            "apply_only_events_per_cpu_second": round(1e6 / apply_us)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=150000)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--events", type=int, default=20000)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--trees", help="NAME=DIR,...: measure each source tree in turn")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--tree", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.tree:
        sys.path[:0] = [args.tree, str(Path(args.tree) / "dsctl-api")]
    if not args.trees:
        print(json.dumps(measure(pods=args.pods, events=args.events, reps=args.reps, nodes=args.nodes)))
        return
    for _ in range(args.rounds):
        for name, tree in (item.split("=", 1) for item in args.trees.split(",")):
            result = run_child("informer_event_path.py", "--tree", tree, "--pods", str(args.pods),
                               "--nodes", str(args.nodes), "--events", str(args.events),
                               "--reps", str(args.reps))
            print(json.dumps({"tree": name, **result}), flush=True)


if __name__ == "__main__":
    main()
