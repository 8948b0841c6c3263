"""The simulated control plane that runs beside the sim's API server, in the same event loop.

Loops, one module each, all level-triggered workers over a shared storage change feed:

- ``scheduler``: binds pending pods (node affinity, nodeSelector, taints, cordon).
- ``kubelet``: Pending → Running → Ready after a delay; graceful termination; ``sim.dsctl.io/*``
  knobs (``podstatus`` builds the statuses); a node's kubelet can stop, and can shut its node
  down gracefully (``nodeshutdown``, ``nodestatus``).
- ``nodelifecycle``: a silent kubelet (``heartbeat``) turns its node Unknown, a node that is not
  Ready gets its pods marked not Ready, and node conditions and cordon become
  ``node.kubernetes.io/*`` taints.
- ``taintmanager``: evicts pods that do not tolerate a node's NoExecute taints.
- ``gc``: ownerReference cascading deletion (background, foreground, orphan).
- ``podgc``: removes pods of deleted nodes.

``controlplane.start_control_plane`` builds and starts them; ``clock`` lets tests drive time.
"""

from dsctl_sim.controllers.clock import Clock, FakeClock, RealClock
from dsctl_sim.controllers.controlplane import ControlPlane, start_control_plane
from dsctl_sim.controllers.podstatus import (
    ANN_FAIL_AFTER,
    ANN_NEVER_READY,
    ANN_NODE_STARTUP,
    ANN_STARTUP,
)

__all__ = [
    "ANN_FAIL_AFTER",
    "ANN_NEVER_READY",
    "ANN_NODE_STARTUP",
    "ANN_STARTUP",
    "Clock",
    "ControlPlane",
    "FakeClock",
    "RealClock",
    "start_control_plane",
]
