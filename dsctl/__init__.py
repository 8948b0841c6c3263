"""dsctl: a Kubernetes DaemonSet controller in Python asyncio.

Packages, outermost first:

- ``dsctl.cli`` and ``dsctl.app``: the command line, settings, leader election, HTTP endpoints.
- ``dsctl.daemonset``: the domain. Pure planners plus the one controller module that wires them.
- ``dsctl.workqueue`` and ``dsctl.informer``: client-go style runtime building blocks.
- ``dsctl.kube``: the only code that speaks HTTP to an API server.

Beside it, in their own distributions: ``dsctl_api`` (``dsctl-api``), pure helpers over
Kubernetes objects shared with the simulator, and ``dsctl_sim`` (``dsctl-sim``), the simulated
cluster, which this package never imports (``dsctl sim serve`` runs it in a new process).
"""

__version__ = "0.1.0"
__all__ = ["__version__"]
