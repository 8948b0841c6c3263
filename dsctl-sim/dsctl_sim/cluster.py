"""A whole simulated cluster in this process: storage, nodes, API server, control plane.

``dsctl sim serve`` is a thin CLI around ``SimCluster``; other in-process users (the
``dsctl sim`` demo, tests that want no subprocess) can use it directly::

    async with SimCluster(SimOptions(nodes=3, kubeconfig="kc.yaml")) as sim:
        print(sim.url)

Start order is storage → CRD controller → nodes → control plane → HTTP listener, and stop
runs in reverse, so no request is served before the nodes exist and no loop outlives the
storage it writes to.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

import structlog

from dsctl_sim.controllers import ControlPlane, start_control_plane
from dsctl_sim.controllers.nodelifecycle import DEFAULT_GRACE_SECONDS
from dsctl_sim.crds import install_crd_controller
from dsctl_sim.faults import FaultConfig, Faults
from dsctl_sim.kubeconfig import DEFAULT_TOKEN, write_kubeconfig
from dsctl_sim.nodes import make_node
from dsctl_sim.requestlog import RequestLog
from dsctl_sim.server import SimServer
from dsctl_sim.state import ApiState
from dsctl_sim.storage import Storage

__all__ = ["SimCluster", "SimOptions"]

log = structlog.get_logger(__name__)


@dataclass(slots=True)
class SimOptions:
    """Everything ``dsctl sim serve`` can set."""

    host: str = "127.0.0.1"
    """Listen address."""
    port: int = 0
    """Listen port; 0 picks a free one."""
    nodes: int = 0
    """Nodes ``node-0`` … ``node-{N-1}`` created Ready at start."""
    kubeconfig: str | None = None
    """Where to write a kubeconfig (context ``dsctl-sim``) once listening."""
    pod_startup_seconds: float = 1.0
    """Default delay from a pod being bound to it running and Ready."""
    seed: int | None = None
    """Seed for generated names, UIDs and fault dice (None: random)."""
    faults: FaultConfig = field(default_factory=FaultConfig)
    """Initial fault injection settings."""
    history_size: int = 50_000
    """Watch events kept per resource type for resuming watches."""
    bookmark_seconds: float = 15.0
    """Interval between watch bookmarks for watches that allow them."""
    request_log_size: int = 200_000
    """Request records kept for ``GET /sim/requests``."""
    control_plane: bool = True
    """Run the scheduler, kubelet, node lifecycle and garbage collectors."""
    token: str | None = None
    """The only bearer token the API accepts (401 otherwise); None accepts any credentials."""
    node_monitor_grace_seconds: float = DEFAULT_GRACE_SECONDS
    """Seconds a stopped kubelet's node keeps its status before it is marked Unknown."""
    max_termination_seconds: float = 1.0
    """Cap on every pod's graceful termination by a running kubelet."""


class SimCluster:
    """One running simulated cluster. ``url`` and ``kubeconfig`` are set by ``start``."""

    def __init__(self, options: SimOptions | None = None) -> None:
        self.options = options or SimOptions()
        rng = random.Random(self.options.seed)
        self.storage = Storage(history_size=self.options.history_size, rng=random.Random(rng.getrandbits(64)))
        self.state = ApiState(
            storage=self.storage,
            faults=Faults(self.options.faults, rng=random.Random(rng.getrandbits(64))),
            requests=RequestLog(capacity=self.options.request_log_size),
            bookmark_seconds=self.options.bookmark_seconds,
            token=self.options.token,
        )
        self.server = SimServer(self.state)
        self.control_plane: ControlPlane | None = None
        self.url = ""
        self.kubeconfig: Path | None = None
        self._uninstall_crds = install_crd_controller(self.storage)

    async def start(self) -> str:
        """Create the nodes, start the loops and the listener; returns the URL."""
        opts = self.options
        now = self.storage.now()
        for i in range(opts.nodes):
            self.storage.create("nodes", make_node(f"node-{i}", index=i, now=now))
        if opts.control_plane:
            self.control_plane = start_control_plane(
                self.storage, pod_startup_seconds=opts.pod_startup_seconds,
                node_monitor_grace_seconds=opts.node_monitor_grace_seconds,
                max_termination_seconds=opts.max_termination_seconds,
            )
            self.state.kubelets = self.control_plane.kubelet
        self.url = await self.server.start(host=opts.host, port=opts.port)
        if opts.kubeconfig:
            self.kubeconfig = write_kubeconfig(opts.kubeconfig, self.url, token=opts.token or DEFAULT_TOKEN)
        log.info("sim_started", url=self.url, nodes=opts.nodes, kubeconfig=str(self.kubeconfig or ""))
        return self.url

    async def stop(self) -> None:
        """Stop serving (ending watches), then stop the loops."""
        await self.server.stop()
        plane = self.control_plane
        if plane is not None:
            self.state.kubelets = None
            await plane.stop()
            self.control_plane = None
        self._uninstall_crds()
        log.info("sim_stopped")

    async def __aenter__(self) -> SimCluster:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()
