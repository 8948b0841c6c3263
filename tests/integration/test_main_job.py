"""The main job, ``dsctl sim`` (README command (a)): a simulated cluster, the real controller and an
example DaemonSet, in one command, ending cleanly either by convergence or by Ctrl-C.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import signal
import sys
from pathlib import Path

import pytest

from dsctl.app.childproc import die_with_parent
from dsctl.kube.client import KubeClient
from dsctl.kube.resources import DAEMONSETS, NODES, PODS
from tests.support.poll import eventually

EXAMPLES = Path(__file__).resolve().parents[2] / "manifests" / "examples"


async def _start(*args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "dsctl", "sim", "--pod-startup-seconds", "0.2", *args,
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "COLUMNS": "200"}, preexec_fn=die_with_parent,
    )


async def _finish(proc: asyncio.subprocess.Process, *, within: float) -> tuple[int, str, str]:
    try:
        out, err = await asyncio.wait_for(proc.communicate(), within)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise AssertionError(f"dsctl sim did not exit within {within:.0f}s") from None
    return proc.returncode or 0, out.decode(), err.decode()


def _kubeconfig_of(out: str) -> Path:
    found = re.search(r"^kubeconfig:\s+(\S+)$", out, re.MULTILINE)
    assert found, out
    return Path(found.group(1))


@pytest.mark.parametrize(("example", "name"), [
    pytest.param(None, "nginx", id="default-nginx"),
    pytest.param(EXAMPLES / "node-exporter-ds.yaml", "node-exporter", id="node-exporter"),
    pytest.param(EXAMPLES / "nginx-dsctl-crd.yaml", "nginx", id="crd-mode-nginx"),
])
async def test_until_converged_exits_0_once_every_daemonset_is_rolled_out(example: Path | None, name: str) -> None:
    """``dsctl sim --nodes 4 --until-converged`` prints where the cluster is, then 4/4 rolled out, and exits 0."""
    args = ["--nodes", "4", "--until-converged", "--timeout", "120"]
    if example is not None:
        args += ["--example", str(example)]
    code, out, err = await _finish(await _start(*args), within=150)
    assert code == 0, f"exit {code}\n{out}\n{err}"
    assert re.search(r"^simulated cluster: http://127\.0\.0\.1:\d+ with 4 nodes$", out, re.MULTILINE), out
    assert re.search(r"^try:\s+KUBECONFIG=\S+ \S*kubectl get d?ds,pods", out, re.MULTILINE), out
    assert re.search(rf"^daemonset \S+/{name}\s+desired=4 current=4 ready=4 updated=4 available=4\s+rolled out$",
                     out, re.MULTILINE), out
    assert out.rstrip().endswith("all DaemonSets rolled out"), out
    assert "Traceback" not in err, err
    assert not _kubeconfig_of(out).exists(), "the temporary kubeconfig outlived the main job"
    crd_mode = example is not None and example.name.endswith("-crd.yaml")
    assert (re.search(r"^mode:\s+CRD \(dsctl\.io/v1 DaemonSets", out, re.MULTILINE) is not None) == crd_mode, out


async def test_a_failed_main_job_says_where_its_files_are() -> None:
    """A run that fails (here: not converged in time) prints the kept folder in one line; it holds sim.log."""
    args = ["--nodes", "2", "--until-converged", "--timeout", "0.5", "--pod-startup-seconds", "60"]
    code, out, err = await _finish(await _start(*args), within=60)
    kept = re.findall(r"^dsctl sim: kept (\S+) \(the simulator's log is sim\.log there\)$", err, re.MULTILINE)
    try:
        assert code == 1, f"exit {code}\n{out}\n{err}"
        assert len(kept) == 1, err
        assert (Path(kept[0]) / "sim.log").is_file()
        assert _kubeconfig_of(out).parent == Path(kept[0])
    finally:
        for folder in kept:
            shutil.rmtree(folder, ignore_errors=True)


async def test_an_example_with_both_kinds_is_one_line(tmp_path: Path) -> None:
    """apps/v1 and dsctl.io/v1 DaemonSets in one file: refused before any cluster starts, naming both kinds."""
    mixed = tmp_path / "mixed.yaml"
    kinds = [(EXAMPLES / name).read_text() for name in ("nginx-ds.yaml", "nginx-dsctl-crd.yaml")]
    mixed.write_text("\n---\n".join(kinds))
    code, out, err = await _finish(await _start("--example", str(mixed)), within=30)
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and "holds both apps/v1 and dsctl.io/v1 DaemonSets" in err, err


async def test_ctrl_c_stops_the_main_job_and_its_cluster() -> None:
    """Without --until-converged the job runs until SIGINT; the cluster is live meanwhile, and gone after."""
    proc = await _start("--nodes", "3")
    stdout = proc.stdout
    assert stdout is not None
    lines: list[str] = []

    async def reached_rolled_out() -> bool:
        line = (await asyncio.wait_for(stdout.readline(), 60)).decode()
        assert line, "dsctl sim ended early:\n" + "".join(lines)
        lines.append(line)
        return "rolled out" in line

    try:
        await eventually(reached_rolled_out, timeout=90, interval=0, message="the example to roll out")
        kubeconfig = _kubeconfig_of("".join(lines))
        client = await KubeClient.from_config(kubeconfig=str(kubeconfig))
        try:
            assert len((await client.list(NODES))["items"]) == 3
            assert [d["metadata"]["name"] for d in (await client.list(DAEMONSETS))["items"]] == ["nginx"]
            assert len((await client.list(PODS, namespace="default"))["items"]) == 3
        finally:
            await client.close()
    except BaseException:
        proc.kill()
        await proc.wait()
        raise
    proc.send_signal(signal.SIGINT)
    code, _, err = await _finish(proc, within=30)
    assert code == 0, err
    assert "Traceback" not in err, err
    assert not kubeconfig.exists(), "the temporary kubeconfig outlived the main job"
