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
``args``); anything else fails the test with one line naming the argument and the valid ones.
The server runs in a child process and is stopped when the test ends, whatever the test did.
The fixture is synchronous, so it serves plain and async tests alike (an ``async def`` test
needs a plugin that runs it, such as pytest-asyncio).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest

from dsctl_sim.process import SimServer, SimServerOptions

__all__ = ["kube_sim", "options_from_marker"]


def pytest_configure(config: pytest.Config) -> None:
    """Declare the ``kube_sim`` marker."""
    config.addinivalue_line(
        "markers", "kube_sim(**options): options of the kube_sim fixture's simulated cluster (SimServerOptions)",
    )


def options_from_marker(marker: pytest.Mark | None) -> SimServerOptions:
    """The options a ``kube_sim`` marker asks for; a mistake fails the test in one line."""
    if marker is None:
        return SimServerOptions()
    valid = [f.name for f in dataclasses.fields(SimServerOptions)]
    if marker.args:
        pytest.fail(f"@pytest.mark.kube_sim takes keyword arguments only ({', '.join(valid)}), "
                    f"not {', '.join(map(repr, marker.args))}", pytrace=False)
    unknown = sorted(set(marker.kwargs) - set(valid))
    if unknown:
        pytest.fail(f"@pytest.mark.kube_sim: unknown argument {unknown[0]!r}; valid ones: {', '.join(valid)}",
                    pytrace=False)
    options = SimServerOptions(**marker.kwargs)
    problem = ""
    try:
        options.command(Path("kubeconfig"))
    except ValueError as exc:
        problem = str(exc)
    if problem:  # failed outside the handler, so the report shows no chained traceback
        pytest.fail(f"@pytest.mark.kube_sim: {problem}", pytrace=False)
    return options


@pytest.fixture
def kube_sim(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SimServer]:
    """A running simulated cluster; configured by ``@pytest.mark.kube_sim(...)``."""
    options = options_from_marker(request.node.get_closest_marker("kube_sim"))
    with SimServer(options, workdir=tmp_path / "kube-sim") as server:
        yield server
