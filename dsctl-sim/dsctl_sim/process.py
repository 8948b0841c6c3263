"""A simulated cluster in a child process, with a small synchronous handle for tests.

``SimServer`` runs ``python -m dsctl_sim serve`` (the same server ``dsctl-sim serve`` runs),
waits for its ``READY url=... kubeconfig=...`` line and stops it on exit: SIGTERM, then
SIGKILL after a grace period. A child process keeps the server's event loop, garbage
collector and signal handling apart from the code under test, whatever framework that code
uses (kopf, kubernetes_asyncio, a plain thread).

``SimAdmin`` speaks to the server over loopback HTTP with the standard library only, so it
works the same from synchronous tests, from async tests and from another thread:

- ``faults()``, ``set_faults(**knobs)`` (replace), ``patch_faults(**knobs)`` (merge);
- ``compact(expire_watches=False)``, ``drop_watches()``;
- ``requests(since=0)``, ``stats()``;
- ``add_node(name, labels=..., taints=..., finalizers=...)``, ``delete_node(name)``, ``get(path)``,
  ``request``;
- node lifecycle: ``kubelet(name)``, ``set_kubelet(name, running=False)``,
  ``shutdown_node(name, grace_seconds=3, critical_grace_seconds=1)``, ``add_taint(name, taint)``,
  ``remove_taint(name, key)`` (a JSON patch guarded by a ``test`` of the taints it read),
  ``remove_finalizers(name)``.

The server only ever listens on a loopback address: ``SimServerOptions.host`` refuses others.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

import orjson

__all__ = ["SimAdmin", "SimServer", "SimServerOptions"]


@dataclass(frozen=True, kw_only=True)
class SimServerOptions:
    """How to start the simulated cluster; every field maps to a ``dsctl-sim serve`` flag."""

    nodes: int = 3
    """Ready nodes ``node-0`` … ``node-{N-1}`` created at start."""
    pod_startup_seconds: float = 0.2
    """Delay from a pod being bound to it running and Ready (the CLI default is 1 s)."""
    control_plane: bool = True
    """Run the scheduler, kubelet, node lifecycle, garbage collectors and namespace controller."""
    seed: int | None = None
    """Seed for generated names, UIDs and fault dice."""
    token: str | None = None
    """Accept only this bearer token on the API; the written kubeconfig carries it."""
    host: str = "127.0.0.1"
    """Loopback address to listen on (127.0.0.0/8 or ::1)."""
    node_monitor_grace_seconds: float | None = None
    """Seconds before a stopped kubelet's node is marked Unknown (None: the server's default)."""
    args: Sequence[str] = ()
    """Further ``dsctl-sim serve`` flags, e.g. ``("--fault-error-rate", "create:pods:500:0.1")``."""
    startup_timeout: float = 60.0
    """Seconds to wait for the READY line."""
    stop_timeout: float = 10.0
    """Seconds between SIGTERM and SIGKILL."""

    def command(self, kubeconfig: Path) -> list[str]:
        """The command line that starts this server."""
        if not ipaddress.ip_address(self.host).is_loopback:
            raise ValueError(f"the simulated cluster listens on loopback only, not {self.host!r}")
        cmd = [sys.executable, "-m", "dsctl_sim", "serve", "--host", self.host, "--port", "0",
               "--kubeconfig", str(kubeconfig), "--nodes", str(self.nodes),
               "--pod-startup-seconds", str(self.pod_startup_seconds)]
        if not self.control_plane:
            cmd.append("--no-control-plane")
        if self.seed is not None:
            cmd += ["--seed", str(self.seed)]
        if self.token:
            cmd += ["--token", self.token]
        if self.node_monitor_grace_seconds is not None:
            cmd += ["--node-monitor-grace-seconds", str(self.node_monitor_grace_seconds)]
        return [*cmd, *self.args]


@dataclass
class SimAdmin:
    """Synchronous client for the simulator's admin API and a few API shortcuts."""

    url: str
    token: str | None = None
    timeout: float = 30.0
    user_agent: str = field(default="dsctl-sim-admin")

    def request(self, method: str, path: str, body: Any = None, *,
                content_type: str | None = None) -> tuple[int, Any]:
        """One request to the server; returns ``(status, decoded JSON body or text)``.

        A PATCH of an API path is a JSON merge patch unless ``content_type`` says otherwise."""
        data = None if body is None else orjson.dumps(body)
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("User-Agent", self.user_agent)
        req.add_header("Accept", "application/json")
        if data is not None:
            ctype = content_type or ("application/merge-patch+json" if method == "PATCH"
                                     and not path.startswith("/sim/") else "application/json")
            req.add_header("Content-Type", ctype)
        if self.token:
            req.add_header("Authorization", f"Bearer {self.token}")
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never a proxy
        try:
            with opener.open(req, timeout=self.timeout) as resp:
                status, raw = resp.status, resp.read()
        except urllib.error.HTTPError as err:
            status, raw = err.code, err.read()
        try:
            return status, orjson.loads(raw)
        except orjson.JSONDecodeError:
            return status, raw.decode(errors="replace")

    def _ok(self, method: str, path: str, body: Any = None, *, content_type: str | None = None) -> Any:
        status, out = self.request(method, path, body, content_type=content_type)
        if status >= 300:
            raise RuntimeError(f"{method} {path} answered {status}: {out}")
        return out

    def get(self, path: str) -> Any:
        """GET an API path (``/api/v1/nodes``); raises on a non-2xx answer."""
        return self._ok("GET", path)

    def faults(self) -> dict[str, Any]:
        """The fault settings in force."""
        out: dict[str, Any] = self._ok("GET", "/sim/faults")
        return out

    def set_faults(self, **knobs: Any) -> dict[str, Any]:
        """Replace the fault settings; knobs left out reset (``errors``, ``latency_ms`` …)."""
        out: dict[str, Any] = self._ok("PUT", "/sim/faults", knobs)
        return out

    def patch_faults(self, **knobs: Any) -> dict[str, Any]:
        """Change only the knobs given."""
        out: dict[str, Any] = self._ok("PATCH", "/sim/faults", knobs)
        return out

    def compact(self, *, expire_watches: bool = False) -> int:
        """Forget watch history (the next watch from an older resourceVersion gets 410)."""
        suffix = "?expire_watches=true" if expire_watches else ""
        return int(self._ok("POST", "/sim/compact" + suffix)["resourceVersion"])

    def drop_watches(self) -> int:
        """Close every open watch stream; returns how many."""
        return int(self._ok("POST", "/sim/drop-watches")["closed"])

    def requests(self, *, since: int = 0, limit: int = 10_000) -> dict[str, Any]:
        """Request log records after cursor ``since``: ``{"items", "next", "dropped"}``."""
        out: dict[str, Any] = self._ok("GET", f"/sim/requests?since={since}&limit={limit}")
        return out

    def stats(self) -> dict[str, Any]:
        """resourceVersion, object counts, open watches, faults injected."""
        out: dict[str, Any] = self._ok("GET", "/sim/stats")
        return out

    def add_node(self, name: str, *, labels: dict[str, str] | None = None,
                 taints: Sequence[dict[str, str]] = (), finalizers: Sequence[str] = ()) -> dict[str, Any]:
        """Create a node; the simulated kubelet reports it Ready. With ``finalizers`` (Karpenter's
        ``karpenter.sh/termination``) a delete leaves it in place, marked, until they are removed."""
        meta: dict[str, Any] = {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}}
        if finalizers:
            meta["finalizers"] = list(finalizers)
        node = {"apiVersion": "v1", "kind": "Node", "metadata": meta,
                "spec": {"taints": list(taints)} if taints else {}}
        out: dict[str, Any] = self._ok("POST", "/api/v1/nodes", node)
        return out

    def delete_node(self, name: str) -> None:
        """Delete a node; pod GC removes the pods bound to it once it is gone."""
        self._ok("DELETE", f"/api/v1/nodes/{name}")

    def remove_finalizers(self, name: str) -> dict[str, Any]:
        """Empty the node's finalizers, as Karpenter does once it has drained a deleted node."""
        out: dict[str, Any] = self._ok("PATCH", f"/api/v1/nodes/{name}", {"metadata": {"finalizers": None}})
        return out

    # -- node lifecycle ---------------------------------------------------------------------

    def kubelet(self, name: str) -> dict[str, Any]:
        """The node's kubelet: ``{"node", "running", "stoppedAt", "shuttingDown"}``."""
        out: dict[str, Any] = self._ok("GET", f"/sim/nodes/{name}/kubelet")
        return out

    def set_kubelet(self, name: str, *, running: bool) -> dict[str, Any]:
        """Stop (``running=False``) or start the node's kubelet. Stopped, it renews nothing: the
        node turns Unknown after the node-monitor grace period, its pods keep their status and
        deleted pods stay Terminating; started again, everything resumes."""
        out: dict[str, Any] = self._ok("PUT", f"/sim/nodes/{name}/kubelet", {"running": running})
        return out

    def shutdown_node(self, name: str, *, grace_seconds: float | None = None,
                      critical_grace_seconds: float | None = None) -> dict[str, Any]:
        """Begin the kubelet's graceful node shutdown (``shutdownGracePeriod`` and
        ``shutdownGracePeriodCriticalPods``, the server's defaults when None); at its end the
        kubelet stops."""
        body: dict[str, float] = {}
        if grace_seconds is not None:
            body["shutdownGracePeriodSeconds"] = grace_seconds
        if critical_grace_seconds is not None:
            body["shutdownGracePeriodCriticalPodsSeconds"] = critical_grace_seconds
        out: dict[str, Any] = self._ok("POST", f"/sim/nodes/{name}/shutdown", body)
        return out

    def add_taint(self, name: str, taint: dict[str, Any]) -> dict[str, Any]:
        """Add ``taint`` (replacing one with the same key and effect) with a read-modify-write
        update, as cluster-autoscaler does; a concurrent change answers 409, and is retried."""
        for _ in range(10):
            node = self.get(f"/api/v1/nodes/{name}")
            spec = node.setdefault("spec", {})
            same = (taint.get("key"), taint.get("effect"))
            spec["taints"] = [t for t in spec.get("taints") or [] if (t.get("key"), t.get("effect")) != same]
            spec["taints"].append(dict(taint))
            status, out = self.request("PUT", f"/api/v1/nodes/{name}", node)
            if status != 409:
                if status >= 300:
                    raise RuntimeError(f"PUT /api/v1/nodes/{name} answered {status}: {out}")
                return dict(out)
        raise RuntimeError(f"node {name} kept changing; taint not added")

    def remove_taint(self, name: str, key: str) -> dict[str, Any]:
        """Remove every taint with ``key``: a JSON patch whose ``test`` of the taints it read makes
        a concurrent change fail it (422) instead of being lost; it is then read and tried again."""
        for _ in range(10):
            node = self.get(f"/api/v1/nodes/{name}")
            taints = (node.get("spec") or {}).get("taints") or []
            kept = [t for t in taints if t.get("key") != key]
            if len(kept) == len(taints):
                return dict(node)
            ops = [{"op": "test", "path": "/spec/taints", "value": taints},
                   {"op": "replace", "path": "/spec/taints", "value": kept}]
            status, out = self.request("PATCH", f"/api/v1/nodes/{name}", ops,
                                       content_type="application/json-patch+json")
            if status != 422:
                if status >= 300:
                    raise RuntimeError(f"PATCH /api/v1/nodes/{name} answered {status}: {out}")
                return dict(out)
        raise RuntimeError(f"node {name} kept changing; taint {key} not removed")


class SimServer:
    """A context manager owning one simulated cluster in a child process.

    Attributes once entered: ``url``, ``kubeconfig`` (a ``Path``, context ``dsctl-sim``),
    ``admin`` (``SimAdmin``), ``log_path`` (the server's stderr).
    """

    def __init__(self, options: SimServerOptions | None = None, *, workdir: Path | None = None) -> None:
        self.options = options or SimServerOptions()
        self._own_workdir = workdir is None
        self.workdir = workdir or Path(tempfile.mkdtemp(prefix="dsctl-sim-"))
        self.log_path = self.workdir / "sim.log"
        self.url = ""
        self.kubeconfig = self.workdir / "kubeconfig"
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def admin(self) -> SimAdmin:
        """The admin handle for this server."""
        return SimAdmin(self.url, token=self.options.token)

    def __enter__(self) -> SimServer:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def start(self) -> None:
        """Spawn the server and wait for its READY line."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("wb") as log:
            self._proc = subprocess.Popen(
                self.options.command(self.kubeconfig), stdout=subprocess.PIPE, stderr=log,
                stdin=subprocess.DEVNULL, start_new_session=True, env=dict(os.environ),
            )
        assert self._proc.stdout is not None
        deadline = time.monotonic() + self.options.startup_timeout
        os.set_blocking(self._proc.stdout.fileno(), False)
        buffer = b""
        while time.monotonic() < deadline:
            chunk = self._proc.stdout.read()
            if chunk:
                buffer += chunk
            for line in buffer.decode(errors="replace").splitlines():
                if line.startswith("READY "):
                    fields = dict(part.split("=", 1) for part in line.split()[1:])
                    self.url, self.kubeconfig = fields["url"], Path(fields["kubeconfig"])
                    return
            if self._proc.poll() is not None:
                raise RuntimeError(f"the simulated cluster exited with {self._proc.returncode}:\n{self.log_tail()}")
            time.sleep(0.02)
        raise RuntimeError(f"the simulated cluster was not ready in {self.options.startup_timeout} s:\n"
                           f"{self.log_tail()}")

    def log_tail(self, lines: int = 40) -> str:
        """The last lines the server logged."""
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self) -> None:
        """SIGTERM, wait, SIGKILL if needed; remove the work dir if this object made it."""
        proc = self._proc
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(self.options.stop_timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if proc is not None and proc.stdout is not None:
            proc.stdout.close()
        if self._own_workdir:
            import shutil

            shutil.rmtree(self.workdir, ignore_errors=True)
