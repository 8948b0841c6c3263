"""CPU per pod create spent in dsctl's own code, without the network or the server.

The cold start's create path is ``new_pod`` (or a ``pod_factory``), ``KubeClient.create``
down to the point where aiohttp takes the request, and the ``SuccessfulCreate`` event. This
script times each part on its own, in one process: the client sends through a session that
answers every request at once with a canned pod, so what is timed is the client's own work
(pacing, headers, metrics, encoding, decoding, retry bookkeeping), not aiohttp's nor the
server's. CPU time (``time.process_time``), best of ``--rounds``.

Usage: ``python -m benchmarks request-path [--creates 20000] [--rounds 5]``.
Prints the JSON summary and writes ``benchmarks/results/request_path.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

import orjson
import structlog
from prometheus_client import CollectorRegistry

from benchmarks.harness.cluster import daemonset
from benchmarks.harness.results import environment, write_result
from dsctl.controller.recorder import EventRecorder
from dsctl.daemonset import template
from dsctl.kube.client import KubeClient
from dsctl.kube.credentials import CachedCredentials, StaticTokenSource, Token
from dsctl.kube.metrics import ClientMetrics
from dsctl.kube.ratelimit import TokenBucket
from dsctl.kube.resources import PODS
from dsctl.kube.transport import RetryPolicy, Transport

NAME = "request_path"

_ANSWER = orjson.dumps({
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "agent-x7k2p", "generateName": "agent-", "namespace": "default",
                 "uid": "6c8f3a52-0d4e-4f4b-9a57-3f1f1c7b2a10", "resourceVersion": "123456",
                 "labels": {"app": "agent", "controller-revision-hash": "5d8f7b9c4"}},
    "spec": {"containers": [{"name": "agent", "image": "registry.example/agent:1.0"}]},
    "status": {"phase": "Pending", "qosClass": "Burstable"},
})


class _Answer:
    status = 201
    headers: dict[str, str] = {}

    async def read(self) -> bytes:
        return _ANSWER

    def release(self) -> None:
        pass


class _Session:
    _trust_env = False

    async def request(self, *args: Any, **kwargs: Any) -> _Answer:
        return _Answer()


class _Configuration:
    host = "http://127.0.0.1:6443"
    username = password = None

    async def auth_settings(self) -> dict[str, Any]:
        return {}


class _Rest:
    pool_manager = _Session()
    proxy = proxy_headers = server_hostname = None


class _ApiClient:
    configuration = _Configuration()
    rest_client = _Rest()

    async def close(self) -> None:
        pass


def _client() -> KubeClient:
    """A client as the controller builds it (static token, limit lifted) over the instant session."""
    credentials = CachedCredentials(StaticTokenSource("token"), initial=Token("token", time.time()))
    transport = Transport(api_client=_ApiClient(), limiter=TokenBucket(qps=1e9, burst=1_000_000_000),
                          metrics=ClientMetrics(CollectorRegistry()), retry=RetryPolicy(),
                          user_agent="dsctl/bench", credentials=credentials, environ={})
    return KubeClient(transport, host=_Configuration.host)


def _best_us(rounds: int, count: int, run: Callable[[], float]) -> float:
    return round(min(run() for _ in range(rounds)) / count * 1e6, 2)


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    ds = daemonset("agent")
    ds["metadata"].update(uid="6c8f3a52-0d4e-4f4b-9a57-3f1f1c7b2a10", namespace="default")
    client = _client()
    body = template.new_pod(ds, "node-1", hash="5d8f7b9c4")
    recorder = EventRecorder(client=client, registry=CollectorRegistry())
    n = args.creates

    async def creates() -> float:
        start = time.process_time()
        for _ in range(n):
            await client.create(PODS, body, namespace="default")
        return time.process_time() - start

    def timed(fn: Callable[[], object]) -> Callable[[], float]:
        def run() -> float:
            start = time.process_time()
            for _ in range(n):
                fn()
            return time.process_time() - start
        return run

    create_times = [await creates() for _ in range(args.rounds)]
    out: dict[str, Any] = {
        "client_create_us": round(min(create_times) / n * 1e6, 2),
        "new_pod_us": _best_us(args.rounds, n, timed(lambda: template.new_pod(ds, "node-1", hash="5d8f7b9c4"))),
        "record_normal_event_us": _best_us(args.rounds, n, timed(
            lambda: recorder.record(ds, "Normal", "SuccessfulCreate", "Created pod: agent-x7k2p"))),
    }
    factory = getattr(template, "pod_factory", None)  # absent before issue 12: the script also runs there
    if factory is not None:
        make = factory(ds, hash="5d8f7b9c4")
        out["pod_factory_us_per_pod"] = _best_us(args.rounds, n, timed(lambda: make("node-1")))
    await client.close()
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks request-path", description=__doc__.splitlines()[0])
    parser.add_argument("--creates", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    # The controller's production logging: level info, so Normal events are not logged.
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.INFO))
    logging.getLogger().setLevel(logging.INFO)
    result = {"benchmark": NAME, "creates": args.creates, "rounds": args.rounds, "environment": environment(),
              **asyncio.run(measure(args))}
    write_result(NAME, result)


if __name__ == "__main__":
    main()
