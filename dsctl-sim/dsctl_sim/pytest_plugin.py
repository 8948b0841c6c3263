"""pytest plugin: the ``kube_sim`` fixture, a simulated Kubernetes cluster per test.

Installed with ``dsctl-sim`` (entry point ``pytest11``), so any project that has the
distribution gets the fixture without configuration::

    import pytest

    @pytest.mark.kube_sim(nodes=5, pod_startup_seconds=0.1)
    def test_my_operator(kube_sim):
        kube_sim.url           # "http://127.0.0.1:PORT"
        kube_sim.kubeconfig    # Path of a kubeconfig whose current context is the cluster
        kube_sim.admin.set_faults(errors=[{"verb": "create", "resource": "pods", "code": 500, "rate": 0.5}])
        kube_sim.admin.add_node("node-extra", labels={"pool": "gpu"})

The marker's keyword arguments are the fields of ``SimServerOptions`` (``nodes``,
``pod_startup_seconds``, ``control_plane``, ``seed``, ``token``, ``node_monitor_grace_seconds``,
``args``). The server runs in a child process and is stopped when the test ends, whatever the
test did. The fixture is synchronous, so it serves plain and async tests alike.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from dsctl_sim.process import SimServer, SimServerOptions

__all__ = ["kube_sim"]


def pytest_configure(config: pytest.Config) -> None:
    """Declare the ``kube_sim`` marker."""
    config.addinivalue_line(
        "markers", "kube_sim(**options): options of the kube_sim fixture's simulated cluster (SimServerOptions)",
    )


@pytest.fixture
def kube_sim(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SimServer]:
    """A running simulated cluster; configured by ``@pytest.mark.kube_sim(...)``."""
    marker = request.node.get_closest_marker("kube_sim")
    options = SimServerOptions(**marker.kwargs) if marker is not None else SimServerOptions()
    with SimServer(options, workdir=tmp_path / "kube-sim") as server:
        yield server
