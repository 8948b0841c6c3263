"""``dsctl sim`` (``make sim``) serves the live view beside the simulated cluster and prints its URL."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sys
from typing import Any

import aiohttp

from dsctl.app.childproc import die_with_parent
from tests.support.poll import eventually


async def _snapshot(url: str) -> dict[str, Any] | None:
    async with aiohttp.ClientSession() as session, session.get(url + "api/snapshot") as response:
        body: dict[str, Any] = await response.json()
    keys = [d["key"] for d in body["daemonsets"]]
    return body if body["synced"] and keys == ["default/nginx"] else None


async def test_main_job_serves_the_view() -> None:
    """The main job prints a 'view:' URL on loopback whose page shows the example DaemonSet."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "dsctl", "sim", "--nodes", "3", "--pod-startup-seconds", "0.2",
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "COLUMNS": "200"}, preexec_fn=die_with_parent,
    )
    assert proc.stdout is not None
    lines: list[str] = []
    try:
        url = ""
        async with asyncio.timeout(60):
            while not url:
                line = (await proc.stdout.readline()).decode()
                assert line, "dsctl sim ended early:\n" + "".join(lines)
                lines.append(line)
                found = re.match(r"^view:\s+(http://127\.0\.0\.1:\d+/)", line)
                url = found.group(1) if found else ""
        snap = await eventually(lambda: _snapshot(url), timeout=30, message="the view shows the example")
        assert len(snap["nodes"]) == 3
    except BaseException:
        proc.kill()
        await proc.wait()
        raise
    proc.send_signal(signal.SIGINT)
    try:
        async with asyncio.timeout(30):
            _, err = await proc.communicate()
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise
    assert proc.returncode == 0, err.decode()
    assert "Traceback" not in err.decode()
