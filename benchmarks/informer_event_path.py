"""The informer's per-event cost without HTTP: a watch replayed from memory.

A pod store as the controller builds it (projection; the controller's indexes by target node,
owner UID and orphan namespace) is filled with ``--pods`` pods; then ``--events`` MODIFIED
events, encoded as kube-apiserver sends them (~4 KB each), are cut into chunks of 64 whole
lines, as the watch reads them off a busy stream, and timed three ways, each the best of
``--reps``:

- decode: the watch's line splitting and the reflector's decoders on each chunk (for this
  pod projection the lean decoders of ``dsctl.informer.watchdecode``: msgspec against the
  projection's fields, so the projection is done here);
- apply: the reflector's step on each chunk's events (store and index update, handler
  fan-out to one counting handler, metrics);
- replay: both together as the watch runs them, ``iter_event_batches`` over a response whose
  body is the chunks, each batch applied: everything between the socket and the handlers.

The cyclic GC is frozen after set-up, as the controller freezes its caches after the initial
list. ``benchmarks/informer_sync.py``'s ``watch`` case measures the same path end to end over
HTTP, with a fixture server on the other core.

Usage: ``python -m benchmarks informer-event-path [--pods 150000 --events 20000 --reps 5]``

``--trees before=DIR,after=DIR --rounds 3`` measures the dsctl of each source tree in turn, each
in a fresh process, alternating, and prints every run's JSON. Trees from the lean decoder on
(``6406072``) are supported: one that decodes line by line is driven that way.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from benchmarks.harness.children import run_child
from benchmarks.informer_objects import daemon_pod

CHUNK_EVENTS = 64


def measure(*, pods: int, events: int, reps: int, nodes: int, lines_only: bool = False) -> dict[str, Any]:
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
    # The stream as the watch receives it: chunks of whole lines, as many events per read as
    # a busy watch over HTTP delivers (``CHUNK_EVENTS``).
    chunks = [b"\n".join(lines[at:at + CHUNK_EVENTS]) + b"\n" for at in range(0, len(lines), CHUNK_EVENTS)]
    decoders: Any = reflector._decode
    line_decoder: Callable[[Any], Any]
    if callable(decoders):  # the lean decoder, one line at a time
        line_decoder, run_decoder, generation = decoders, None, "lean-lines"
    elif lines_only:  # this tree's lean line decoder, without its run decoder
        line_decoder, run_decoder, generation = decoders.line, None, "lean-lines"
    else:  # the lean decoder with a run decoder for a chunk's whole lines
        line_decoder, run_decoder, generation = decoders.line, decoders.run, "lean-runs"
    from dsctl.kube import watch

    def decode(chunk: bytes) -> list[Any]:
        out: list[Any] = []
        if run_decoder is None:
            watch._decode_lines(chunk, 0, line_decoder, out)
        else:
            watch._decode_lines(chunk, 0, line_decoder, out, run_decoder)
        return out

    async def replay() -> None:
        """The watch's own loop on the chunks: ``iter_event_batches``, then the reflector's step."""
        options: dict[str, Any] = {"decode": line_decoder, "inactivity_timeout": None}
        if run_decoder is not None:
            options["decode_run"] = run_decoder
        response: Any = _Response(chunks)
        async for batch in watch.iter_event_batches(response, **options):
            reflector._apply(batch)

    gc.collect()
    gc.freeze()
    decode_best = apply_best = replay_best = replay_wall_best = float("inf")
    for _ in range(reps):
        started = time.process_time()
        for chunk in chunks:
            decode(chunk)
        decode_best = min(decode_best, time.process_time() - started)
        batches = [decode(chunk) for chunk in chunks]
        started = time.process_time()
        for batch in batches:
            reflector._apply(batch)
        apply_best = min(apply_best, time.process_time() - started)
        del batches
        started, wall = time.process_time(), time.perf_counter()
        asyncio.run(replay())
        replay_best = min(replay_best, time.process_time() - started)
        replay_wall_best = min(replay_wall_best, time.perf_counter() - wall)
    assert applied[0] == events * reps * 2
    decode_us = decode_best / events * 1e6
    apply_us = apply_best / events * 1e6
    return {"decoder": generation, "pods": pods, "events": events, "reps": reps,
            "chunk_events": CHUNK_EVENTS,
            "decode_us_per_event": round(decode_us, 2), "apply_us_per_event": round(apply_us, 2),
            "events_per_cpu_second": round(1e6 / (decode_us + apply_us)),
            "apply_only_events_per_cpu_second": round(1e6 / apply_us),
            "replay_events_per_second": round(events / replay_wall_best),
            "replay_events_per_cpu_second": round(events / replay_best)}


class _Content:
    """The part of aiohttp's stream reader the watch reads: ``readany``, one chunk a call."""

    def __init__(self, chunks: list[bytes]) -> None:
        self._chunks = iter(chunks)

    async def readany(self) -> bytes:
        return next(self._chunks, b"")


class _Response:
    """A watch response whose body is ``chunks`` (the end of the stream after the last)."""

    def __init__(self, chunks: list[bytes]) -> None:
        self.content = _Content(chunks)

    def release(self) -> None:
        pass

    def close(self) -> None:
        pass


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks informer-event-path", description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=150000)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--events", type=int, default=20000)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--trees", help="NAME=DIR,...: measure each source tree in turn")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--tree", help=argparse.SUPPRESS)
    parser.add_argument("--lines-only", action="store_true",
                        help="decode line by line even where the tree has a run decoder")
    parser.add_argument("--lines-only-trees", default="",
                        help="NAME,...: with --trees, the trees to run with --lines-only")
    args = parser.parse_args(argv)
    if args.tree:
        sys.path[:0] = [args.tree, str(Path(args.tree) / "dsctl-api")]
    if not args.trees:
        print(json.dumps(measure(pods=args.pods, events=args.events, reps=args.reps, nodes=args.nodes,
                                 lines_only=args.lines_only)))
        return
    lines_only = set(filter(None, args.lines_only_trees.split(",")))
    for _ in range(args.rounds):
        for name, tree in (item.split("=", 1) for item in args.trees.split(",")):
            extra = ["--lines-only"] if name in lines_only else []
            result = run_child("informer_event_path", "--tree", tree, "--pods", str(args.pods),
                               "--nodes", str(args.nodes), "--events", str(args.events),
                               "--reps", str(args.reps), *extra)
            print(json.dumps({"tree": name, **result}), flush=True)


if __name__ == "__main__":
    main()
