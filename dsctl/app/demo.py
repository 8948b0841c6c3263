"""``dsctl sim``: the main job on a fresh machine.

It starts a simulated cluster (``dsctl sim serve``, as a child process: the controller never
imports the simulator), runs the real controller against it over HTTP, applies an example
DaemonSet, and prints progress until Ctrl-C: one line per DaemonSet whenever its counts change,
and one line per node event (join, leave, readiness). ``--until-converged`` exits 0 as soon as
every DaemonSet is fully rolled out, which makes the same command usable from scripts and CI.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from dsctl.app.childproc import die_with_parent
from dsctl.app.config import RESOURCE_APPS, RESOURCE_CRD, Settings
from dsctl.app.logging import configure_logging
from dsctl.app.nodelines import natural_key, node_lines
from dsctl.kube import errors
from dsctl.kube.client import KubeClient
from dsctl.kube.resources import (
    CONTROLLER_REVISIONS,
    DAEMONSETS,
    NAMESPACES,
    NODES,
    PODS,
    Resource,
    crd_daemonsets,
)
from dsctl_api.argtypes import int_range, non_negative

__all__ = ["add_arguments", "example_mode", "main", "rolled_out"]

DEFAULT_EXAMPLE = Path(__file__).resolve().parents[2] / "manifests" / "examples" / "nginx-ds.yaml"
CRD_FILE = Path(__file__).resolve().parents[2] / "manifests" / "crd" / "daemonsets.dsctl.io.yaml"
CRDS = Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition",
                namespaced=False)


_KNOWN: dict[tuple[str, str], Resource] = {
    (r.api_version, r.kind): r for r in (DAEMONSETS, CONTROLLER_REVISIONS, NAMESPACES, NODES, PODS, crd_daemonsets())
}


def resource_for(api_version: str, kind: str) -> Resource:
    """The resource of a manifest document; only the kinds the examples use are known."""
    try:
        return _KNOWN[(api_version, kind)]
    except KeyError:
        raise ValueError(f"cannot apply {api_version} {kind} (only DaemonSets, ControllerRevisions, namespaces, "
                         "nodes and pods); apply it with kubectl") from None


def check_example(path: Path) -> list[str]:
    """``kind/name`` of each document of the example manifest; raises ``ValueError`` with one
    line naming the file and the problem unless it holds at least one DaemonSet and only
    kinds ``dsctl sim`` can apply. Run before the cluster starts."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise ValueError(f"--example {path}: cannot read it: {exc.strerror or exc}") from None
    try:
        docs = [d for d in yaml.safe_load_all(text) if d]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise ValueError(f"--example {path}: not valid YAML{where}") from None
    names: list[str] = []
    for index, doc in enumerate(docs):
        if not isinstance(doc, dict) or not isinstance(doc.get("metadata"), dict) or not doc["metadata"].get("name"):
            raise ValueError(f"--example {path}: document {index + 1} is not a Kubernetes object "
                             "(apiVersion, kind, metadata.name)")
        try:
            resource_for(str(doc.get("apiVersion")), str(doc.get("kind")))
        except ValueError as exc:
            raise ValueError(f"--example {path}: document {index + 1}: {exc}") from None
        names.append(f"{doc['kind']}/{doc['metadata']['name']}")
    if not any(n.startswith("DaemonSet/") for n in names):
        raise ValueError(f"--example {path}: holds no DaemonSet (found: {', '.join(names) or 'nothing'}); "
                         "give a DaemonSet manifest such as manifests/examples/nginx-ds.yaml")
    return names


def example_mode(path: Path) -> str:
    """The DaemonSet kind the example holds, which the controller then reconciles: apps/v1, or
    dsctl.io/v1 (CRD mode). One process reconciles one kind, so a file with both is refused."""
    docs = [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict)]
    kinds = {str(d.get("apiVersion")) for d in docs if d.get("kind") == "DaemonSet"}
    if len(kinds) > 1:
        raise ValueError(f"--example {path}: holds both apps/v1 and dsctl.io/v1 DaemonSets; dsctl reconciles "
                         "one kind per process: give one file of each kind to its own 'dsctl sim'")
    return RESOURCE_CRD if kinds == {RESOURCE_CRD} else RESOURCE_APPS


async def install_crd(client: KubeClient) -> None:
    """Create the dsctl.io/v1 CRD from the repository's manifest and wait until it is served."""
    if not CRD_FILE.is_file():
        raise errors.ConfigError(f"CRD mode needs the CRD manifest {CRD_FILE.name} of a dsctl checkout "
                                 f"(not found at {CRD_FILE}); give an apps/v1 example instead")
    crd = yaml.safe_load(await asyncio.to_thread(CRD_FILE.read_text))
    with contextlib.suppress(errors.AlreadyExists):
        await client.create(CRDS, crd)
    deadline = time.monotonic() + 30
    while True:
        with contextlib.suppress(errors.NotFound):
            await client.list(crd_daemonsets(), limit=1)
            return
        if time.monotonic() > deadline:
            raise errors.ConfigError("the simulated cluster did not serve dsctl.io/v1 DaemonSets within 30 s "
                                     "of their CRD's creation")
        await asyncio.sleep(0.1)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``dsctl sim`` (the main job); ``dsctl sim serve`` has its own."""
    parser.add_argument("--nodes", type=int_range(0), default=20, help="nodes in the simulated cluster")
    parser.add_argument("--example", type=Path, default=DEFAULT_EXAMPLE,
                        help="manifest to apply once the controller runs (default: manifests/examples/nginx-ds.yaml)")
    parser.add_argument("--until-converged", action="store_true",
                        help="exit 0 once every DaemonSet is fully rolled out")
    parser.add_argument("--timeout", type=non_negative, default=0.0,
                        help="with --until-converged: give up (exit 1) after this many seconds; 0 = never")
    parser.add_argument("--pod-startup-seconds", type=non_negative, default=1.0,
                        help="simulated delay from pod creation to Ready")
    parser.add_argument("--workers", type=int_range(1), default=Settings.workers,
                        help="controller workers")
    parser.add_argument("--log-level", default="warning", choices=("debug", "info", "warning", "error"),
                        help="controller log level")
    parser.add_argument("--view-port", type=int_range(0, 65535), default=0,
                        help="port of the live web view on 127.0.0.1 (dsctl view; 0: any free port)")
    parser.add_argument("--view", default=True, action=argparse.BooleanOptionalAction,
                        help="serve the live web view beside the cluster")


def rolled_out(ds: Mapping[str, Any]) -> bool:
    """True when the DaemonSet's status says its current template runs everywhere, available."""
    meta, status = ds.get("metadata") or {}, ds.get("status") or {}
    desired = status.get("desiredNumberScheduled", -1)
    return bool(
        status.get("observedGeneration", 0) >= meta.get("generation", 1)
        and desired >= 0
        and status.get("currentNumberScheduled") == desired
        and status.get("updatedNumberScheduled", 0) == desired
        and status.get("numberAvailable", 0) == desired
        and status.get("numberMisscheduled", 0) == 0
    )


@contextlib.asynccontextmanager
async def simulated_cluster(*, nodes: int, pod_startup: float, workdir: Path) -> AsyncIterator[tuple[str, Path]]:
    """Run ``dsctl sim serve`` as a child process; yields (url, kubeconfig path)."""
    kubeconfig = workdir / "kubeconfig"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "dsctl_sim", "serve", "--port", "0", "--nodes", str(nodes),
        "--kubeconfig", str(kubeconfig), "--pod-startup-seconds", str(pod_startup),
        stdout=asyncio.subprocess.PIPE, stderr=open(workdir / "sim.log", "wb"),  # noqa: SIM115, ASYNC230
        preexec_fn=die_with_parent,
    )
    try:
        assert proc.stdout is not None
        url = ""
        async with asyncio.timeout(60):
            while not url:
                line = (await proc.stdout.readline()).decode()
                if not line:
                    raise RuntimeError(f"simulator exited early; see {workdir / 'sim.log'}")
                if line.startswith("READY "):
                    fields = dict(part.split("=", 1) for part in line.split()[1:])
                    url = fields["url"]
        yield url, kubeconfig
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
            try:
                async with asyncio.timeout(10):
                    await proc.wait()
            except TimeoutError:
                proc.kill()
                await proc.wait()


async def apply_manifest(client: KubeClient, path: Path) -> list[str]:
    """Create (or replace) every object in a YAML file; returns ``kind/name`` of each."""
    applied: list[str] = []
    text = await asyncio.to_thread(path.read_text)
    for doc in yaml.safe_load_all(text):
        if not doc:
            continue
        resource = resource_for(doc["apiVersion"], doc["kind"])
        namespace = doc["metadata"].get("namespace", "default") if resource.namespaced else None
        try:
            await client.create(resource, doc, namespace=namespace)
        except errors.AlreadyExists:
            live = await client.get(resource, doc["metadata"]["name"], namespace=namespace)
            doc["metadata"]["resourceVersion"] = live["metadata"]["resourceVersion"]
            await client.update(resource, doc, namespace=namespace)
        applied.append(f"{doc['kind']}/{doc['metadata']['name']}")
    return applied


def _node_state(node: Mapping[str, Any]) -> str:
    for condition in (node.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return "Ready" if condition.get("status") == "True" else "NotReady"
    return "Unknown"


async def progress(controller: Any, *, until_converged: bool, timeout: float) -> int:
    """Print DaemonSet and node changes once a second; returns the exit code."""
    shown: dict[str, tuple[Any, ...]] = {}
    nodes: dict[str, str] = {}
    started = time.monotonic()
    while True:
        current = {n["metadata"]["name"]: _node_state(n) for n in controller.caches.nodes.store.list()}
        for line in node_lines(nodes, current):
            print(line)
        nodes = current
        daemonsets = sorted(controller.caches.daemonsets.store.list(),
                            key=lambda d: (d["metadata"]["namespace"], natural_key(d["metadata"]["name"])))
        for ds in daemonsets:
            s = ds.get("status") or {}
            key = f"{ds['metadata']['namespace']}/{ds['metadata']['name']}"
            row = (s.get("desiredNumberScheduled", 0), s.get("currentNumberScheduled", 0),
                   s.get("numberReady", 0), s.get("updatedNumberScheduled", 0), s.get("numberAvailable", 0))
            if shown.get(key) != row:
                shown[key] = row
                flag = "  rolled out" if rolled_out(ds) else ""
                print(f"daemonset {key:<21} desired={row[0]} current={row[1]} ready={row[2]} "
                      f"updated={row[3]} available={row[4]}{flag}", flush=True)
        if until_converged and daemonsets and all(rolled_out(ds) for ds in daemonsets):
            print("all DaemonSets rolled out")
            return 0
        if timeout and time.monotonic() - started > timeout:
            print(f"not converged after {timeout:.0f}s", file=sys.stderr)
            return 1
        await asyncio.sleep(1.0)


async def run_demo(args: argparse.Namespace) -> int:
    """The body of ``dsctl sim``."""
    try:
        await asyncio.to_thread(check_example, args.example)
        mode = await asyncio.to_thread(example_mode, args.example)
    except ValueError as exc:
        print(f"dsctl sim: {exc}", file=sys.stderr)
        return 2
    workdir = Path(tempfile.mkdtemp(prefix="dsctl-sim-"))
    code = 1
    try:
        code = await _run_in(workdir, args, mode=mode)
    except errors.KubeError as exc:
        print(f"dsctl sim: {exc}", file=sys.stderr)
    finally:
        if code == 0:  # the cluster is gone, so is the kubeconfig's use
            await asyncio.to_thread(shutil.rmtree, workdir, ignore_errors=True)
        else:  # a failure keeps the simulator's log to read, and says where
            print(f"dsctl sim: kept {workdir} (the simulator's log is sim.log there)", file=sys.stderr)
    return code


async def _run_in(workdir: Path, args: argparse.Namespace, *, mode: str) -> int:
    """The main job, with its files in ``workdir``; returns the exit code."""
    from dsctl.app import runner

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with simulated_cluster(nodes=args.nodes, pod_startup=args.pod_startup_seconds,
                                 workdir=workdir) as (url, kubeconfig), contextlib.AsyncExitStack() as views:
        print(f"simulated cluster: {url} with {args.nodes} nodes")
        print(f"kubeconfig:        {kubeconfig}")
        listed = "dds" if mode == RESOURCE_CRD else "ds"
        print(f"try:               KUBECONFIG={kubeconfig} {_kubectl()} get {listed},pods -o wide")
        if mode == RESOURCE_CRD:
            client = await KubeClient.from_config(kubeconfig=str(kubeconfig))
            try:
                await install_crd(client)
            finally:
                await client.close()
            print(f"mode:              CRD (dsctl.io/v1 DaemonSets; installed {CRD_FILE.name})")
        settings = Settings(kubeconfig=str(kubeconfig), workers=args.workers, metrics_bind_address="127.0.0.1:0",
                            health_probe_bind_address="127.0.0.1:0", log_format="console",
                            log_level=args.log_level, resource=mode).validate()
        ready: asyncio.Future[Any] = loop.create_future()
        controller_task = asyncio.create_task(
            runner.run(settings, stop=stop, on_ready=lambda http, ctl: ready.set_result((http, ctl))),
            name="controller",
        )
        http, controller = await ready
        print(f"metrics:           http://127.0.0.1:{http.bound['metrics'][1]}/metrics")
        if args.view:
            from dsctl.view.app import running_view

            try:
                view = await views.enter_async_context(running_view(
                    resource=crd_daemonsets() if mode == RESOURCE_CRD else DAEMONSETS, kubeconfig=str(kubeconfig),
                    port=args.view_port, readiness_taint=gate.taint if (gate := settings.readiness_gate) else None))
                print(f"view:              {view.url}  (live, read-only)")
            except OSError as exc:  # a busy --view-port: the demo goes on without the page
                print(f"view:              not started: port {args.view_port}: {exc.strerror or exc}")
        client = await KubeClient.from_config(kubeconfig=str(kubeconfig), qps=50, burst=100)
        try:
            applied = await apply_manifest(client, args.example)
        finally:
            await client.close()
        print(f"applied:           {', '.join(applied)}  (Ctrl-C to stop)")
        progress_task = asyncio.create_task(
            progress(controller, until_converged=args.until_converged, timeout=args.timeout), name="progress")
        stopper = asyncio.create_task(stop.wait(), name="wait-stop")
        done, _ = await asyncio.wait({progress_task, stopper, controller_task},
                                     return_when=asyncio.FIRST_COMPLETED)
        code = progress_task.result() if progress_task in done else 0
        stop.set()
        for task in (progress_task, stopper):
            task.cancel()
        results = await asyncio.gather(controller_task, progress_task, stopper, return_exceptions=True)
        if isinstance(results[0], int) and results[0] != 0:
            code = results[0]
    return code


def _kubectl() -> str:
    local = Path(sys.executable).with_name("kubectl")
    return str(local) if local.exists() else "kubectl"


def main(args: argparse.Namespace) -> int:
    """Blocking entry point for ``dsctl sim``."""
    configure_logging(fmt="console", level=args.log_level)
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    try:
        return asyncio.run(run_demo(args))
    except errors.KubeError as exc:
        print(f"dsctl sim: {exc}", file=sys.stderr)
        return 1
