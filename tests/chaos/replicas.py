"""The controller replicas of a chaos scenario: start, ``kill -9``, restart, and judge (invariant e).

One replica runs without leader election; two run with a short lease (3 s), so a killed
leader is replaced by the standby within a few seconds. Every process ever started is kept,
killed ones included, so that at the end each one's whole log can be checked:

- no process died unless the schedule killed it, or, after the schedule faulted the Lease, it
  lost its leadership and exited 1 saying so (``leader_lost``): the designed response, which a
  Deployment answers with a restart;
- no log line at level error or carrying an exception (``sync_crashed`` among them), except
  the two lines of such a designed exit.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from tests.support.controllerproc import ControllerProcess

__all__ = ["LEADER_ARGS", "Replicas"]

LEADER_ARGS = [
    "--leader-elect", "--leader-elect-namespace", "default", "--leader-elect-lease-duration", "3",
    "--leader-elect-renew-deadline", "2", "--leader-elect-retry-period", "0.5",
]
_MAX_LOGGED = 8
_LOST_LEASE_LINES = frozenset({"leader_lost", "shutting_down_after_lost_leadership"})


@dataclass
class Replicas:
    """``async with Replicas(kubeconfig, count=1|2) as ctl:``; everything is stopped on exit."""

    kubeconfig: str
    count: int = 1
    args: list[str] = field(default_factory=list)
    processes: list[ControllerProcess] = field(default_factory=list)
    killed: set[int] = field(default_factory=set)
    kills: int = 0
    lease_faults: int = 0
    """Lease fault steps the schedule ran; with none, losing the Lease is itself a failure."""
    replaced: set[int] = field(default_factory=set)

    @property
    def _argv(self) -> list[str]:
        return [*(LEADER_ARGS if self.count > 1 else []), *self.args]

    async def __aenter__(self) -> Replicas:
        try:
            await asyncio.gather(*(self._spawn() for _ in range(self.count)))
        except BaseException:
            await self.close()
            raise
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def _spawn(self) -> ControllerProcess:
        proc = ControllerProcess(self.kubeconfig, args=self._argv)
        self.processes.append(proc)
        await proc.start()
        return proc

    def alive(self) -> list[ControllerProcess]:
        """Processes not killed by the schedule."""
        return [p for p in self.processes if id(p) not in self.killed]

    def leader(self) -> ControllerProcess | None:
        """The live replica that logged ``leader_acquired`` last (the only one without election)."""
        live = self.alive()
        if self.count == 1:
            return live[0] if live else None
        leading = [p for p in live if any(e.get("event") == "leader_acquired" for e in p.logs)]
        return leading[-1] if leading else None

    async def kill(self, *, pause: float, leader_only: bool = False) -> str:
        """``kill -9`` the leader (or the single replica), wait ``pause``, start a replacement."""
        victim = self.leader() if leader_only or self.count > 1 else next(iter(self.alive()), None)
        if victim is None:
            return "no leader to kill yet"
        self.killed.add(id(victim))
        self.kills += 1
        await victim.kill()
        if pause > 0:
            await asyncio.sleep(pause)  # the scenario's downtime, not a wait for a result
        await self._spawn()
        return f"killed pid {victim.proc.pid if victim.proc else '?'}"

    async def ensure_running(self) -> None:
        """Replace replicas that died unexpectedly, so convergence can still be judged."""
        missing = self.count - sum(1 for p in self.alive() if p.proc is not None and p.proc.returncode is None)
        for _ in range(max(0, missing)):
            await self._spawn()

    async def restart_lost(self) -> list[str]:
        """Start a replacement for each replica that exited after losing the Lease, as a
        Deployment would; returns a note per restart."""
        notes = []
        for proc in list(self.processes):
            if id(proc) not in self.replaced and self._lost_lease(proc):
                self.replaced.add(id(proc))
                await self._spawn()
                notes.append(f"restarted a replica that lost the Lease (pid {proc.proc.pid if proc.proc else '?'})")
        return notes

    def running_identities(self) -> set[str]:
        """Leader-election identities of the replicas running now."""
        found = set()
        for proc in self.processes:
            if proc.proc is None or proc.proc.returncode is not None:
                continue
            found |= {str(e["identity"]) for e in proc.logs if e.get("event") == "leader_election_started"}
        return found

    def _lost_lease(self, proc: ControllerProcess) -> bool:
        """Whether ``proc`` exited 1 after losing a Lease the schedule faulted."""
        code = proc.proc.returncode if proc.proc is not None else None
        return bool(self.lease_faults) and code == 1 and any(e.get("event") == "leader_lost" for e in proc.logs)

    def lost_leases(self) -> int:
        """Replicas that exited after losing the Lease under Lease faults."""
        return sum(1 for p in self.processes if self._lost_lease(p))

    def problems(self) -> list[str]:
        """Unexpected deaths and logged errors, over every process this scenario started."""
        found: list[str] = []
        for index, proc in enumerate(self.processes):
            code = proc.proc.returncode if proc.proc is not None else None
            expected = self._lost_lease(proc)
            if id(proc) not in self.killed and code is not None and not expected:
                found.append(f"replica #{index} exited with {code} without being killed: {proc.raw[-5:]}")
            errors = [e for e in proc.errors() if not (expected and e.get("event") in _LOST_LEASE_LINES)]
            for entry in errors[:_MAX_LOGGED]:
                found.append(f"replica #{index} logged: {entry}")
        return found

    async def close(self) -> None:
        """Stop every process still running (SIGTERM, then SIGKILL)."""
        await asyncio.gather(*(p.stop(timeout=10) for p in self.processes), return_exceptions=True)
