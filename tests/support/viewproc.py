"""Run ``dsctl view`` (``python -m dsctl view``) as a child process, for integration tests.

``async with ViewProcess(kubeconfig, args=[...]) as view:`` starts it on a free port, waits
for the line that gives its URL (``view.url``), and always stops it with SIGTERM on exit,
checking that it exits 0. Its stderr (logs) is kept in ``view.stderr_lines``.
"""

from __future__ import annotations

import asyncio
import re
import signal
import sys
from collections.abc import Sequence
from types import TracebackType

from dsctl.app.childproc import die_with_parent

__all__ = ["VIEW_AGENT", "ViewProcess"]

VIEW_AGENT = re.compile(r"^dsctl-view/")
"""The User-Agent prefix of the view's requests (``dsctl.view.app.USER_AGENT``)."""

_URL = re.compile(r"(http://\S+/)")


class ViewProcess:
    """``dsctl view`` against ``kubeconfig`` on 127.0.0.1 and a free port."""

    def __init__(self, kubeconfig: str, *, args: Sequence[str] = ()) -> None:
        self.kubeconfig = kubeconfig
        self.args = list(args)
        self.proc: asyncio.subprocess.Process | None = None
        self.url = ""
        self.stderr_lines: list[str] = []
        self._reader: asyncio.Task[None] | None = None

    async def __aenter__(self) -> ViewProcess:
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "dsctl", "view", "--kubeconfig", self.kubeconfig, "--port", "0",
            "--log-level", "info", *self.args,
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            preexec_fn=die_with_parent,
        )
        self._reader = asyncio.create_task(self._read_stderr(), name="view-stderr")
        assert self.proc.stdout is not None
        try:
            async with asyncio.timeout(30):
                while not self.url:
                    line = (await self.proc.stdout.readline()).decode()
                    if not line:
                        await self.proc.wait()
                        raise RuntimeError(f"dsctl view exited {self.proc.returncode}: {self.stderr_lines[-20:]}")
                    found = _URL.search(line)
                    if found:
                        self.url = found.group(1)
        except BaseException:
            await self._stop()
            raise
        return self

    async def _read_stderr(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        while line := await self.proc.stderr.readline():
            self.stderr_lines.append(line.decode(errors="replace").rstrip("\n"))

    async def _stop(self) -> int | None:
        proc = self.proc
        if proc is None:
            return None
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
            try:
                async with asyncio.timeout(15):
                    await proc.wait()
            except TimeoutError:
                proc.kill()
                await proc.wait()
        if self._reader is not None:
            await self._reader
        return proc.returncode

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        code = await self._stop()
        if exc_type is None:
            assert code == 0, f"dsctl view exited {code}: {self.stderr_lines[-20:]}"
