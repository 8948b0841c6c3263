"""Run the real controller (``python -m dsctl run``) as a child process for integration tests.

The process logs JSON to stderr; every line is kept in ``logs`` so tests can assert on what the
controller said (no unhandled exception, no token in any line). The metrics and probe ports are
taken from its ``http_listening`` log lines, so parallel runs never collide.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import Sequence
from types import TracebackType
from typing import Any

import aiohttp

from dsctl.app.childproc import die_with_parent


class ControllerProcess:
    """``async with ControllerProcess(kubeconfig, args=[...]) as ctl:`` starts and always stops it."""

    def __init__(self, kubeconfig: str, *, args: Sequence[str] = (), env: dict[str, str] | None = None,
                 launcher: Sequence[str] = ()) -> None:
        """``launcher`` goes between the interpreter and ``-m dsctl``: a script that runs the
        module under a profiler, for instance (see ``benchmarks/cprofiled.py``)."""
        self.kubeconfig = kubeconfig
        self.args = list(args)
        self.launcher = list(launcher)
        self.env = env
        self.proc: asyncio.subprocess.Process | None = None
        self.logs: list[dict[str, Any]] = []
        self.raw: list[str] = []
        self.metrics_port = 0
        self.probe_port = 0
        self._reader: asyncio.Task[None] | None = None
        self._listening = asyncio.Event()

    async def start(self) -> ControllerProcess:
        """Start the process and wait until its HTTP endpoints listen."""
        argv = [sys.executable, *self.launcher, "-m", "dsctl", "run", "--kubeconfig", self.kubeconfig,
                "--metrics-bind-address", "127.0.0.1:0", "--health-probe-bind-address", "127.0.0.1:0",
                "--log-format", "json", "--log-level", "debug", *self.args]
        env = {**os.environ, **(self.env or {})}
        self.proc = await asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE, env=env, preexec_fn=die_with_parent,
        )
        self._reader = asyncio.create_task(self._read(), name="controller-log-reader")
        try:
            async with asyncio.timeout(30):
                while not (self.metrics_port and self.probe_port):
                    if self.proc.returncode is not None:
                        raise RuntimeError(f"controller exited early: {self.raw[-20:]}")
                    waiter = asyncio.ensure_future(self._listening.wait())
                    await asyncio.wait({waiter}, timeout=0.5)
                    waiter.cancel()
                    self._listening.clear()
        except TimeoutError:
            await self.stop()
            raise RuntimeError(f"controller did not start listening: {self.raw[-20:]}") from None
        return self

    async def _read(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        while line := await self.proc.stderr.readline():
            text = line.decode(errors="replace").rstrip("\n")
            self.raw.append(text)
            try:
                entry = json.loads(text)
            except ValueError:
                continue
            self.logs.append(entry)
            if entry.get("event") == "http_listening":
                for role in entry.get("roles", []):
                    if role == "metrics":
                        self.metrics_port = int(entry["port"])
                    if role == "probes":
                        self.probe_port = int(entry["port"])
                self._listening.set()

    async def get(self, path: str, *, port: int | None = None) -> tuple[int, str]:
        """GET one of the controller's HTTP endpoints; returns (status, body)."""
        target = port or (self.metrics_port if path == "/metrics" else self.probe_port)
        async with aiohttp.ClientSession() as session, session.get(f"http://127.0.0.1:{target}{path}") as resp:
            return resp.status, await resp.text()

    async def daemonset_gauge(self, metric: str, daemonset: str = "agent") -> float | None:
        """The value of a per-DaemonSet series ``metric`` for ``daemonset``, or None when not exported."""
        _, body = await self.get("/metrics")
        for line in body.splitlines():
            if line.startswith(metric + "{") and f'name="{daemonset}"' in line:
                return float(line.rsplit(" ", 1)[1])
        return None

    def errors(self) -> list[dict[str, Any]]:
        """Log entries at error level or carrying a traceback."""
        return [e for e in self.logs if e.get("level") in ("error", "critical") or "exception" in e]

    async def stop(self, *, sig: int = signal.SIGTERM, timeout: float = 30.0) -> int | None:
        """Signal the process and wait for it; kill it if it does not exit in time."""
        if self.proc is None:
            return None
        if self.proc.returncode is None:
            self.proc.send_signal(sig)
            try:
                async with asyncio.timeout(timeout):
                    await self.proc.wait()
            except TimeoutError:
                self.proc.kill()
                await self.proc.wait()
        if self._reader is not None:
            await asyncio.gather(self._reader, return_exceptions=True)
        return self.proc.returncode

    async def kill(self) -> None:
        """SIGKILL, as a crash would."""
        await self.stop(sig=signal.SIGKILL, timeout=10)

    async def __aenter__(self) -> ControllerProcess:
        return await self.start()

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.stop()
