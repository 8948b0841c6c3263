"""Shared plumbing of the informer benchmarks: the fixture server process, child runs, RSS.

Every measured case runs in a fresh child process, so RSS figures of one case are not
inflated by another; the API server runs in yet another process.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

__all__ = ["HERE", "ROOT", "fixture_server", "rss_mib", "run_child", "write_kubeconfig"]


def rss_mib() -> tuple[float, float]:
    """(current RSS, peak RSS) of this process in MiB, from /proc/self/status."""
    values: dict[str, float] = {}
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(("VmRSS:", "VmHWM:")):
                key, value, _unit = line.split()
                values[key] = int(value) / 1024
    return values.get("VmRSS:", 0.0), values.get("VmHWM:", 0.0)


@contextmanager
def fixture_server(*, nodes: int, pods: int, watch_events: int = 0) -> Iterator[str]:
    """Run benchmarks/informer_fixture_server.py; yield its base URL."""
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "informer_fixture_server.py"), "--nodes", str(nodes),
         "--pods", str(pods), "--watch-events", str(watch_events)],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        if not line.startswith("READY "):
            raise RuntimeError(f"fixture server failed to start: {line!r}")
        yield f"http://127.0.0.1:{line.split()[1]}"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def write_kubeconfig(path: Path, server: str) -> Path:
    """A kubeconfig pointing at ``server`` with a dummy token."""
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "bench",
        "clusters": [{"name": "bench", "cluster": {"server": server}}],
        "users": [{"name": "bench", "user": {"token": "bench"}}],
        "contexts": [{"name": "bench", "context": {"cluster": "bench", "user": "bench"}}],
    }))
    return path


def run_child(script: str, *args: str) -> dict[str, Any]:
    """Run ``script --child ...`` in a fresh interpreter and return the JSON it prints last."""
    out = subprocess.run(
        [sys.executable, str(HERE / script), *args], check=True, capture_output=True, text=True,
        cwd=ROOT,
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))
