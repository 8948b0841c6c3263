"""A fake of ``KubeClient`` at the client boundary, serving one Lease with scripted faults.

It keeps optimistic concurrency (resourceVersion, 409 on a stale update) like kube-apiserver,
so the elector meets the same answers a real server gives. A fault is chosen per request by
``fault(verb)``: an ``ApiError`` to raise, a number of seconds to hang first (a server or a
transport waiting out ``Retry-After``), or None.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from dsctl.kube import errors
from dsctl.kube.client import KubeClient
from dsctl.kube.resources import LEASES, Resource

__all__ = ["FakeLeases", "Fault"]

Fault = errors.KubeError | float | None


@dataclass
class FakeLeases:
    """One namespace's Leases, by name; ``calls`` logs (loop time, verb) of every request."""

    leases: dict[str, dict[str, Any]] = field(default_factory=dict)
    fault: Callable[[str], Fault] = lambda verb: None
    calls: list[tuple[float, str]] = field(default_factory=list)
    _rv: int = 0

    def as_client(self) -> KubeClient:
        """This fake, typed as the client the elector expects."""
        return cast(KubeClient, self)

    def holder(self, name: str = "dsctl") -> str:
        """The Lease's holderIdentity ('' when absent)."""
        return str((self.leases.get(name) or {}).get("spec", {}).get("holderIdentity") or "")

    def put(self, name: str, spec: Mapping[str, Any]) -> None:
        """Store a Lease as another writer would (a competing replica, kubectl)."""
        self._rv += 1
        self.leases[name] = {"metadata": {"name": name, "namespace": "default",
                                          "resourceVersion": str(self._rv)}, "spec": dict(spec)}

    async def _enter(self, verb: str, res: Resource) -> None:
        assert res is LEASES, f"the elector asked for {res.label}"
        self.calls.append((asyncio.get_running_loop().time(), verb))
        fault = self.fault(verb)
        if isinstance(fault, errors.KubeError):
            raise fault
        if fault is not None:
            await asyncio.sleep(fault)

    async def get(self, res: Resource, name: str, *, namespace: str | None = None) -> dict[str, Any]:
        await self._enter("get", res)
        if name not in self.leases:
            raise errors.NotFound(404, "NotFound", f'leases "{name}" not found')
        return copy.deepcopy(self.leases[name])

    async def create(self, res: Resource, body: Mapping[str, Any], *, namespace: str | None = None,
                     field_manager: str | None = None) -> dict[str, Any]:
        await self._enter("create", res)
        name = body["metadata"]["name"]
        if name in self.leases:
            raise errors.AlreadyExists(409, "AlreadyExists", f'leases "{name}" already exists')
        self.put(name, body["spec"])
        return copy.deepcopy(self.leases[name])

    async def update(self, res: Resource, body: Mapping[str, Any], *,
                     namespace: str | None = None) -> dict[str, Any]:
        await self._enter("update", res)
        name = body["metadata"]["name"]
        stored = self.leases.get(name)
        if stored is None:
            raise errors.NotFound(404, "NotFound", f'leases "{name}" not found')
        if body["metadata"].get("resourceVersion") != stored["metadata"]["resourceVersion"]:
            raise errors.Conflict(409, "Conflict", "the object has been modified")
        self.put(name, body["spec"])
        return copy.deepcopy(self.leases[name])
