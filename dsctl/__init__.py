"""dsctl: a Kubernetes DaemonSet controller in Python asyncio, with an embedded simulated cluster.

Packages, outermost first:

- ``dsctl.cli`` and ``dsctl.app``: the command line, settings, leader election, HTTP endpoints.
- ``dsctl.daemonset``: the domain. Pure planners plus the one controller module that wires them.
- ``dsctl.workqueue`` and ``dsctl.informer``: client-go style runtime building blocks.
- ``dsctl.kube``: the only code that speaks HTTP to an API server.
- ``dsctl_api``: pure helpers over Kubernetes objects, shared by the controller and the simulator.
- ``dsctl_sim``: the simulated cluster (``dsctl sim``); it shares nothing with the controller but ``dsctl_api``.
"""

__version__ = "0.1.0"
__all__ = ["__version__"]
