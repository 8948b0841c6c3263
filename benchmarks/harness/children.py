"""Benchmarks that measure a process from the inside: each case in a fresh child interpreter.

RSS figures of one case must not be inflated by another, so the informer benchmarks run every
case as ``python -m benchmarks.<module> --child ...`` and read the JSON it prints last; the API
server they talk to (``informer_fixture_server``) runs in yet another process.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from benchmarks.harness.results import ROOT

__all__ = ["fixture_server", "run_child", "write_kubeconfig"]


@contextmanager
def fixture_server(*, nodes: int, pods: int, watch_events: int = 0) -> Iterator[str]:
    """Run ``benchmarks.informer_fixture_server``; yield its base URL."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.informer_fixture_server", "--nodes", str(nodes),
         "--pods", str(pods), "--watch-events", str(watch_events)],
        stdout=subprocess.PIPE, text=True, cwd=ROOT,
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


def run_child(module: str, *args: str) -> dict[str, Any]:
    """Run ``python -m benchmarks.<module> ARGS`` in a fresh interpreter; the JSON it prints last."""
    out = subprocess.run([sys.executable, "-m", f"benchmarks.{module}", *args], check=True,
                         capture_output=True, text=True, cwd=ROOT)
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))
