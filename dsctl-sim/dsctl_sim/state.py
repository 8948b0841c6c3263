"""What every request handler of the simulated API server shares.

One ``ApiState`` per server: the storage, the fault injector, the request log, the list
snapshots for continue tokens, and the watch settings. Handlers receive it from the aiohttp
application instead of reaching for globals, so tests can run several servers side by side.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from dsctl_sim.faults import Faults
from dsctl_sim.listing import Paginator
from dsctl_sim.metrics import SimMetrics
from dsctl_sim.requestlog import RequestLog
from dsctl_sim.storage import Storage

__all__ = ["ApiState", "NodeAgents", "Restarter"]


class Restarter(Protocol):
    """Schedules an apiserver restart (``SimServer.schedule_restart``); False if one is under way."""

    def __call__(self, *, seconds: float) -> bool: ...


class NodeAgents(Protocol):
    """The simulated kubelets, as the admin API drives them (``controllers.kubelet.Kubelet``).

    Each method returns the node's kubelet state for the response, or raises a ``StorageError``
    (``NotFound`` for an unknown node, ``Conflict`` for a state that forbids it)."""

    def agent_status(self, node: str) -> dict[str, Any]: ...

    def set_running(self, node: str, *, running: bool) -> dict[str, Any]: ...

    def shutdown(self, node: str, *, grace_seconds: float, critical_seconds: float) -> dict[str, Any]: ...


@dataclass(slots=True)
class ApiState:
    """Shared server state. ``bookmark_seconds`` is the interval between watch bookmarks;
    ``min_watch_timeout``/``max_watch_timeout`` bound the random server-side timeout of
    watches that do not ask for one (kube-apiserver picks 30–60 minutes). ``token``, when
    set, is the bearer token the API accepts (others get 401); ``retired_tokens`` maps tokens
    replaced by a rotation (``dsctl_sim.tokens``) to when they stop being accepted."""

    storage: Storage
    faults: Faults = field(default_factory=Faults)
    requests: RequestLog = field(default_factory=RequestLog)
    paginator: Paginator = field(default_factory=Paginator)
    bookmark_seconds: float = 15.0
    min_watch_timeout: float = 1800.0
    max_watch_timeout: float = 3600.0
    now: Callable[[], float] = time.time
    version: dict[str, str] = field(default_factory=dict)
    stopping: bool = False
    token: str | None = None
    retired_tokens: dict[str, float] = field(default_factory=dict)
    token_rotations: int = 0
    metrics: SimMetrics | None = None
    restart: Restarter | None = None
    """Set by the server that serves this state: ``POST /sim/restart`` calls it."""
    outages: list[dict[str, float]] = field(default_factory=list)
    """One ``{"down", "up", "seconds"}`` (epoch seconds; ``up`` 0 while down) per restart."""
    kubelets: NodeAgents | None = None
    """Set while a simulated kubelet runs: ``/sim/nodes/{name}/...`` drives it."""
