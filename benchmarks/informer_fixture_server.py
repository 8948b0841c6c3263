"""A static API server for informer benchmarks, run as a separate process.

It pre-serializes N nodes and M DaemonSet pods (benchmarks/informer_objects.py) and answers:

- ``GET /api/v1/{nodes,pods}`` with ``limit``/``continue`` pagination (one snapshot RV);
- ``?watch=true``: for pods watched with ``labelSelector=bench=watch``, ``--watch-events``
  MODIFIED events as fast as the socket takes them, then a quiet stream; otherwise a quiet
  stream. Quiet streams carry a bookmark every 10 s.
- ``POST /admin/compact`` (a forced relist): 1 % of the pods are deleted and 10 % modified
  (new resourceVersions), the list RV moves on, open watches end with an in-stream 410 and
  watches from an older RV get one; the first pod continue request after it is refused with 410
  Expired (the token outlived a compaction), as kube-apiserver refuses a compacted continue.
  ``GET /admin/stats`` counts lists, unpaginated lists and expired continues.

Serving pre-encoded bytes keeps the server's own cost out of the client measurements; the
simulator (``dsctl sim``) is used by the integration tests instead. Prints ``READY <port>``.

Usage: ``python -m benchmarks.informer_fixture_server --nodes 5000 --pods 150000`` (the informer benchmarks start it).
"""

from __future__ import annotations

import argparse
import asyncio

import orjson
from aiohttp import web

from benchmarks.informer_objects import daemon_pod, node

LIST_RV = "5000000"
_EXPIRED = orjson.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 410,
                         "reason": "Expired", "message": "The provided continue parameter is too old"})


_BLOCK_EVENTS = 200


class Fixture:
    """Pre-encoded items per resource and the watch script."""

    def __init__(self, *, nodes: int, pods: int, watch_events: int) -> None:
        self.items: dict[str, list[bytes]] = {
            "nodes": [orjson.dumps(node(i)) for i in range(nodes)],
            "pods": [orjson.dumps(daemon_pod(i, nodes=max(nodes, 1))) for i in range(pods)],
        }
        self.kinds = {"nodes": "NodeList", "pods": "PodList"}
        self.list_rv = LIST_RV
        self.compacted = asyncio.Event()
        self.expire_next_continue = False
        self.stats = {"expired_continues": 0, "unpaginated_lists": 0, "lists": 0}
        self.nodes = max(nodes, 1)
        self.watch_events = watch_events
        self.event_lines: list[bytes] = []
        for i in range(min(watch_events, 2000)):
            pod = daemon_pod(i, nodes=max(nodes, 1))
            pod["metadata"]["resourceVersion"] = str(int(LIST_RV) + 1 + i)
            pod["status"]["conditions"][2]["status"] = "False" if i % 2 else "True"
            self.event_lines.append(orjson.dumps({"type": "MODIFIED", "object": pod}) + b"\n")
        lines = self.event_lines
        self.event_blocks = [(b"".join(lines[at:at + _BLOCK_EVENTS]), len(lines[at:at + _BLOCK_EVENTS]))
                             for at in range(0, len(lines), _BLOCK_EVENTS)]

    def compact(self) -> None:
        """Change the pods (1 % deleted, 10 % modified), move the RV on, expire tokens."""
        pods = self.items["pods"]
        rv = int(self.list_rv) + len(pods)
        for i in range(0, len(pods), 10):
            pod = daemon_pod(i, nodes=self.nodes)
            pod["metadata"]["resourceVersion"] = str(rv + i)
            pod["metadata"]["labels"]["touched"] = "yes"
            pods[i] = orjson.dumps(pod)
        del pods[1::100]
        self.list_rv = str(rv + len(pods))
        self.expire_next_continue = True
        self.compacted.set()  # ends the watches open now; later ones wait on a fresh event
        self.compacted = asyncio.Event()

    def page(self, resource: str, limit: int, start: int) -> bytes:
        items = self.items[resource]
        end = len(items) if limit <= 0 else min(len(items), start + limit)
        meta: dict[str, str] = {"resourceVersion": self.list_rv}
        if end < len(items):
            meta["continue"] = str(end)
        head = orjson.dumps({"kind": self.kinds[resource], "apiVersion": "v1", "metadata": meta})
        return head[:-1] + b',"items":[' + b",".join(items[start:end]) + b"]}"


async def handle(request: web.Request) -> web.StreamResponse:
    fixture: Fixture = request.app["fixture"]
    resource = request.match_info["resource"]
    if resource not in fixture.items:
        raise web.HTTPNotFound()
    if request.query.get("watch") in ("true", "1"):
        return await watch(request, fixture, resource)
    limit = int(request.query.get("limit") or 0)
    start = int(request.query.get("continue") or 0)
    fixture.stats["lists"] += 1
    fixture.stats["unpaginated_lists"] += limit <= 0
    if resource == "pods" and start and fixture.expire_next_continue:
        fixture.expire_next_continue = False
        fixture.stats["expired_continues"] += 1
        return web.Response(body=_EXPIRED, status=410, content_type="application/json")
    return web.Response(body=fixture.page(resource, limit, start),
                        content_type="application/json")


async def watch(request: web.Request, fixture: Fixture, resource: str) -> web.StreamResponse:
    response = web.StreamResponse()
    response.content_type = "application/json"
    response.enable_chunked_encoding()
    await response.prepare(request)
    gone = orjson.dumps({"type": "ERROR", "object": orjson.loads(_EXPIRED)}) + b"\n"
    asked = request.query.get("resourceVersion") or ""
    if asked and int(asked) < int(fixture.list_rv):
        await response.write(gone)
        return response
    # Only the throughput case asks for events (by this selector); sync cases get a quiet watch.
    if resource == "pods" and fixture.watch_events and request.query.get("labelSelector") == (
        "bench=watch"
    ):
        # Writes of 200 events, joined once up front: the server's CPU and memory traffic
        # share the machine with the client being measured, so it does as little as it can.
        blocks = fixture.event_blocks
        sent = 0
        while sent < fixture.watch_events:
            at = (sent // _BLOCK_EVENTS) % len(blocks)
            block, count = blocks[at]
            if sent + count > fixture.watch_events:  # the last write: part of a block
                count = fixture.watch_events - sent
                block = b"".join(fixture.event_lines[at * _BLOCK_EVENTS:at * _BLOCK_EVENTS + count])
            await response.write(block)
            sent += count
    bookmark = orjson.dumps({"type": "BOOKMARK", "object": {
        "kind": "Pod", "apiVersion": "v1", "metadata": {"resourceVersion": LIST_RV}}}) + b"\n"
    compacted = fixture.compacted
    try:
        while True:
            try:
                await asyncio.wait_for(compacted.wait(), 10)
            except TimeoutError:
                await response.write(bookmark)
                continue
            await response.write(gone)
            return response
    except (ConnectionResetError, asyncio.CancelledError):
        pass
    return response


async def handle_compact(request: web.Request) -> web.Response:
    fixture: Fixture = request.app["fixture"]
    fixture.compact()
    return web.Response(text=fixture.list_rv)


async def handle_stats(request: web.Request) -> web.Response:
    fixture: Fixture = request.app["fixture"]
    return web.Response(body=orjson.dumps(fixture.stats), content_type="application/json")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=150000)
    parser.add_argument("--watch-events", type=int, default=0)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    app = web.Application()
    app["fixture"] = Fixture(nodes=args.nodes, pods=args.pods, watch_events=args.watch_events)
    app.router.add_get("/api/v1/{resource}", handle)
    app.router.add_post("/admin/compact", handle_compact)
    app.router.add_get("/admin/stats", handle_stats)

    async def serve() -> None:
        runner = web.AppRunner(app, handle_signals=True)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", args.port)
        await site.start()
        port = runner.addresses[0][1]
        print(f"READY {port}", flush=True)
        await asyncio.Event().wait()

    asyncio.run(serve())


if __name__ == "__main__":
    main()
