"""The controller image, built for real and run: its entrypoint, its user, what it leaves out,
and ``dsctl run`` from inside it reconciling a DaemonSet on a simulated cluster on the host.

Built with ``make image``'s own code (tools/image_build.py): docker when an engine answers,
else buildah. Skipped, with the reason, when neither exists. The image is cached in the
builder's storage under a hash of its inputs, so only a change to the image's inputs pays
for a cold build (ADR 0035).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import signal
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from dsctl import __version__
from tests.image.containers import BuiltImage, Container, ensure_image
from tests.support.builders import daemonset
from tests.support.poll import eventually
from tests.support.simproc import SimProcess
from tools import image_build

# A cold build (the first test of a changed tree, or a worker waiting on another's build)
# takes 2 to 3.5 minutes here, more under load: past the suite's default 300 s per test.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

_BUILDER = image_build.find_builder()
_SKIP_REASON = image_build.no_builder_reason(docker=shutil.which("docker"), buildah=shutil.which("buildah"))

# Files that would let the image compile or install code.
_COMPILERS = re.compile(
    r"/s?bin/((gcc|g\+\+|cc|c\+\+|clang|tcc)(-\d+)?|x86_64-linux-gnu-(gcc|g\+\+)[-\d]*)$"  # drivers
    r"|/cc1(plus)?$"  # the compiler proper, under /usr/lib/gcc
)
_INSTALLERS = re.compile(r"^pip(3(\.\d+)?)?$|^pip-[\d.]+(\.dist-info|-py3-none-any\.whl)$|^setuptools$")


@pytest.fixture(scope="session")
def image(tmp_path_factory: pytest.TempPathFactory) -> BuiltImage:
    """The controller image of the current tree (built at most once per change to its inputs)."""
    if _BUILDER is None:
        pytest.skip(_SKIP_REASON)
    try:
        return ensure_image(_BUILDER, lock_dir=Path(tempfile.gettempdir()))
    except SystemExit as exc:  # make image's one-line errors
        if "mmdebstrap is not installed" in str(exc):
            pytest.skip(str(exc))
        pytest.fail(str(exc))


@pytest.fixture(scope="module")
def container(image: BuiltImage) -> Iterator[Container]:
    """One working container of the image, shared by this module's checks."""
    with Container(image) as ctr:
        yield ctr


def test_entrypoint_is_the_controller_and_prints_its_version(image: BuiltImage, container: Container) -> None:
    """ENTRYPOINT is `dsctl run`; its executable answers --version with the package version."""
    entrypoint = image.entrypoint()
    assert entrypoint == ["dsctl", "run"]
    assert container.run([entrypoint[0], "--version"]).strip() == f"dsctl {__version__}"


def test_runs_as_uid_and_gid_65532(image: BuiltImage, container: Container) -> None:
    """The image's USER is 65532:65532 and a process in it gets exactly those ids."""
    assert image.config().get("User") == "65532:65532"
    out = container.run(["python", "-c", "import os; print(os.getuid(), os.getgid(), os.getgroups())"])
    assert out.split()[:2] == ["65532", "65532"]


def test_holds_no_compiler_no_pip_and_no_simulator(container: Container) -> None:
    """No compiler, no pip or setuptools (module, script or wheel), no dsctl/sim, no jsonpatch."""
    paths = container.paths()
    assert any(p.endswith("/site-packages/dsctl/cli.py") for p in paths), "the controller is missing"
    found = [p for p in paths if _COMPILERS.search(p) or _INSTALLERS.match(p.rsplit("/", 1)[-1])]
    assert found == []
    assert [p for p in paths if "/dsctl_sim" in p or "/dsctl/sim" in p or "/jsonpatch" in p.lower()] == []
    out = container.run(["python", "-c", "import importlib.util as u; "
                         "print([m for m in ('pip', 'setuptools', 'jsonpatch', 'dsctl_sim') if u.find_spec(m)])"])
    assert out.strip() == "[]"


@contextlib.asynccontextmanager
async def _controller_in(container: Container, *, kubeconfig: Path) -> AsyncIterator[asyncio.subprocess.Process]:
    """The image's entrypoint running against ``kubeconfig``; SIGTERM, then SIGKILL, on exit."""
    # The kubeconfig goes in through a world-readable directory: the user in the image is not root.
    shared = Path(tempfile.mkdtemp(prefix="dsctl-image-kube-"))
    os.chmod(shared, 0o755)
    shutil.copyfile(kubeconfig, shared / "config")
    os.chmod(shared / "config", 0o644)
    argv = [*container.image.entrypoint(), "--kubeconfig=/kube/config", "--metrics-bind-address=0",
            "--health-probe-bind-address=0", "--log-format=json"]
    log = (shared / "controller.log").open("wb")
    proc = await asyncio.create_subprocess_exec(
        *container.command(argv, volumes=[(shared, "/kube")]), stdin=asyncio.subprocess.DEVNULL,
        stdout=log, stderr=log, start_new_session=True,
    )
    try:
        yield proc
    finally:
        # The builder, its runtime helper and dsctl share the session this started.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            await asyncio.wait_for(proc.wait(), 30)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()
        log.close()
        shutil.rmtree(shared, ignore_errors=True)


async def test_dsctl_run_in_the_image_reconciles_a_daemonset(container: Container) -> None:
    """`dsctl run` from the image, on the host network, gives every node of the simulator a Ready pod."""
    async with SimProcess(nodes=3, args=["--pod-startup-seconds", "0.2"]) as sim:
        status, body = await sim.request("POST", "/apis/apps/v1/namespaces/default/daemonsets",
                                         json=daemonset("agent"))
        assert status == 201, body
        async with _controller_in(container, kubeconfig=Path(sim.kubeconfig)) as proc:

            async def converged() -> dict[str, Any] | None:
                assert proc.returncode is None, f"the controller in the image exited with {proc.returncode}"
                code, ds = await sim.request("GET", "/apis/apps/v1/namespaces/default/daemonsets/agent")
                st = ds.get("status", {}) if code == 200 else {}
                want = {"desiredNumberScheduled": 3, "currentNumberScheduled": 3, "numberReady": 3,
                        "updatedNumberScheduled": 3, "numberAvailable": 3}
                return st if all(st.get(k) == v for k, v in want.items()) else None

            await eventually(converged, timeout=120, interval=0.5, message="the DaemonSet to be reconciled")
        _, pods = await sim.request("GET", "/api/v1/namespaces/default/pods")
        nodes = sorted(p["spec"].get("nodeName", "") for p in pods["items"])
        assert len(nodes) == 3 and len(set(nodes)) == 3, nodes
        # Every write came from the process in the image: nothing else here talks to the API.
        log = await sim.requests(since=0)
        writers = {r["user_agent"] for r in log["items"] if r["verb"] == "create" and r["resource"] == "pods"}
        assert writers and all(agent.startswith("dsctl") for agent in writers), writers
