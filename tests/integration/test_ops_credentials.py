"""Credentials that keep working for months, against the simulator on loopback.

Each case was a real-cluster failure before the credential cache (``dsctl.kube.credentials``):
every request after an exec token's expiry started its own plugin process, a token living 5
minutes or less ran the plugin on every request, and a rotated token (a re-written
``tokenFile``, a revoked exec token) failed every request with 401 until a restart.
"""

from __future__ import annotations

import asyncio
import base64
import json
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from aiohttp import web
from prometheus_client import CollectorRegistry

from dsctl.kube import errors
from dsctl.kube.client import KubeClient
from dsctl.kube.resources import DAEMONSETS, NODES
from tests.support.builders import daemonset
from tests.support.clusterview import ds_status
from tests.support.controllerproc import ControllerProcess
from tests.support.poll import eventually
from tests.support.simproc import SimProcess

# The plugin counts its runs in a file and prints token "tok-<run>"; the first run's token
# lives FIRST seconds and later ones LATER seconds ("none": no expirationTimestamp).
PLUGIN = '''
import datetime, json, sys
counter, first, later = sys.argv[1], sys.argv[2], sys.argv[3]
with open(counter, "a+") as f:
    f.write("run\\n")
    f.seek(0)
    run = len(f.read().splitlines())
life = first if run == 1 else later
status = {"token": f"tok-{run}"}
if life != "none":
    expiry = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=float(life))
    status["expirationTimestamp"] = expiry.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
print(json.dumps({"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential", "status": status}))
'''


def _kubeconfig(path: Path, server: str, user: dict[str, Any]) -> str:
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "sim",
        "clusters": [{"name": "sim", "cluster": {"server": server}}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "sim", "context": {"cluster": "sim", "user": "u"}}],
    }))
    return str(path)


def _exec_kubeconfig(tmp_path: Path, server: str, *, first: str, later: str) -> tuple[str, Path]:
    script = tmp_path / "plugin.py"
    script.write_text(PLUGIN)
    counter = tmp_path / "runs"
    user = {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": sys.executable,
                     "args": [str(script), str(counter), first, later], "interactiveMode": "Never"}}
    return _kubeconfig(tmp_path / "kubeconfig", server, user), counter


def _runs(counter: Path) -> int:
    return len(counter.read_text().splitlines()) if counter.exists() else 0


async def test_concurrent_requests_at_expiry_run_the_plugin_once(tmp_path: Path) -> None:
    """50 requests that find the exec token expired share one plugin run."""
    async with SimProcess(nodes=1) as sim:
        kubeconfig, counter = _exec_kubeconfig(tmp_path, sim.url, first="0", later="3600")
        registry = CollectorRegistry()
        async with await KubeClient.from_config(kubeconfig=kubeconfig, qps=1000, burst=1000,
                                                registry=registry) as client:
            assert _runs(counter) == 1  # the load; its token expired as it was issued
            await asyncio.gather(*(client.get(NODES, "node-0") for _ in range(50)))
            assert _runs(counter) == 2
            await asyncio.gather(*(client.get(NODES, "node-0") for _ in range(50)))
            assert _runs(counter) == 2
        calls = registry.get_sample_value("rest_client_exec_plugin_call_total",
                                          {"code": "0", "call_status": "no_error"})
        assert calls == 1  # the refresh; the load's run happens before the client exists


@pytest.mark.parametrize("lifetime", [
    pytest.param("120", id="2-minutes"),
    pytest.param("300", id="5-minutes"),
    pytest.param("none", id="no-expiry"),
])
async def test_short_lived_exec_token_is_reused_until_due(tmp_path: Path, lifetime: str) -> None:
    """A token valid for 5 minutes or less is reused, not re-fetched on every request."""
    async with SimProcess(nodes=1) as sim:
        kubeconfig, counter = _exec_kubeconfig(tmp_path, sim.url, first=lifetime, later=lifetime)
        async with await KubeClient.from_config(kubeconfig=kubeconfig) as client:
            for _ in range(20):
                await client.get(NODES, "node-0")
            assert _runs(counter) == 1


async def test_revoked_exec_token_recovers_on_401(tmp_path: Path) -> None:
    """A token the server stops accepting before its expiry is replaced after one 401, once."""
    async with SimProcess(nodes=1, args=["--token", "tok-1"]) as sim:
        kubeconfig, counter = _exec_kubeconfig(tmp_path, sim.url, first="3600", later="3600")
        async with await KubeClient.from_config(kubeconfig=kubeconfig) as client:
            await client.get(NODES, "node-0")
            await sim.rotate_token("tok-2")
            results = await asyncio.gather(*(client.get(NODES, "node-0") for _ in range(10)))
            assert all(r["metadata"]["name"] == "node-0" for r in results)
            assert _runs(counter) == 2
            await sim.rotate_token("tok-99")  # the plugin will print tok-3: still refused
            with pytest.raises(errors.Unauthorized):
                await client.get(NODES, "node-0")
            assert _runs(counter) == 3  # one refresh and one retry, not a loop


@pytest.mark.parametrize("end", [pytest.param("", id="bare"), pytest.param("\n", id="trailing-newline")])
async def test_rotated_token_file_recovers_on_401(tmp_path: Path, end: str) -> None:
    """A tokenFile re-written by its owner is re-read after the old token's 401 (whitespace trimmed)."""
    token_file = tmp_path / "token"
    token_file.write_text("first-token" + end)
    async with SimProcess(nodes=1, args=["--token", "first-token"]) as sim:
        kubeconfig = _kubeconfig(tmp_path / "kubeconfig", sim.url, {"tokenFile": str(token_file)})
        async with await KubeClient.from_config(kubeconfig=kubeconfig) as client:
            await client.get(NODES, "node-0")
            token_file.write_text("second-token" + end)
            await sim.rotate_token("second-token")
            assert (await client.get(NODES, "node-0"))["metadata"]["name"] == "node-0"


async def test_controller_keeps_working_across_token_rotation(tmp_path: Path) -> None:
    """The controller keeps reconciling after its tokenFile and the server's token are rotated."""
    token_file = tmp_path / "token"
    token_file.write_text("first-token")
    async with SimProcess(nodes=3, args=["--token", "first-token", "--pod-startup-seconds", "0.1"]) as sim:
        kubeconfig = _kubeconfig(tmp_path / "kubeconfig", sim.url, {"tokenFile": str(token_file)})
        async with await KubeClient.from_config(kubeconfig=kubeconfig) as client, \
                ControllerProcess(kubeconfig) as ctl:
            await client.create(DAEMONSETS, daemonset("before"), namespace="default")
            await eventually(lambda: _ready(client, "before", 3), timeout=30, message="first DaemonSet ready")
            # As the kubelet does: the new token is valid before it is written, the old one is
            # then revoked (here at once, so that every client must notice through a 401).
            await sim.rotate_token("second-token", grace_seconds=3600)
            tmp = tmp_path / "token.new"
            tmp.write_text("second-token")
            tmp.replace(token_file)
            await sim.rotate_token("second-token", grace_seconds=0)
            await client.create(DAEMONSETS, daemonset("after"), namespace="default")
            await eventually(lambda: _ready(client, "after", 3), timeout=30, message="DaemonSet after rotation ready")
            assert not ctl.errors(), ctl.errors()[:5]
            assert any(e.get("event") == "kube.request.reauthenticate" for e in ctl.logs)
            assert not any("second-token" in line or "first-token" in line for line in ctl.raw)


async def _ready(client: KubeClient, name: str, count: int) -> bool:
    status = await ds_status(client, name)
    return status.get("numberReady") == count and status.get("updatedNumberScheduled") == count


def _jwt(name: str, *, exp: float) -> str:
    def part(data: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")
    return f"{part({'alg': 'none'})}.{part({'sub': name, 'exp': int(exp)})}.sig"


class FakeIdP:
    """An OpenID provider on loopback that answers refresh-token grants with the next id-token."""

    def __init__(self) -> None:
        self.grants: list[str] = []
        self.url = ""
        self.next_id_token = ""

    async def _discovery(self, request: web.Request) -> web.Response:
        return web.json_response({"issuer": self.url, "token_endpoint": f"{self.url}/token"})

    async def _token(self, request: web.Request) -> web.Response:
        form = await request.post()
        self.grants.append(str(form.get("refresh_token")))
        return web.json_response({"id_token": self.next_id_token, "refresh_token": f"r{len(self.grants) + 1}"})

    async def serve(self) -> AsyncIterator[FakeIdP]:
        app = web.Application()
        app.router.add_get("/.well-known/openid-configuration", self._discovery)
        app.router.add_post("/token", self._token)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        self.url = f"http://127.0.0.1:{port}"
        try:
            yield self
        finally:
            await runner.cleanup()


@pytest.fixture
async def idp() -> AsyncIterator[FakeIdP]:
    """A fake OpenID provider on 127.0.0.1."""
    async for served in FakeIdP().serve():
        yield served


async def test_oidc_token_refreshed_on_401(tmp_path: Path, idp: FakeIdP) -> None:
    """A revoked OIDC id-token is exchanged once through the refresh-token, and the request retried."""
    first = _jwt("first", exp=time.time() + 3600)
    idp.next_id_token = _jwt("second", exp=time.time() + 3600)
    async with SimProcess(nodes=1, args=["--token", first]) as sim:
        user = {"auth-provider": {"name": "oidc", "config": {
            "client-id": "dsctl", "client-secret": "secret", "idp-issuer-url": idp.url,
            "id-token": first, "refresh-token": "r1"}}}
        kubeconfig = _kubeconfig(tmp_path / "kubeconfig", sim.url, user)
        async with await KubeClient.from_config(kubeconfig=kubeconfig) as client:
            await client.get(NODES, "node-0")
            assert idp.grants == []
            await sim.rotate_token(idp.next_id_token)
            results = await asyncio.gather(*(client.get(NODES, "node-0") for _ in range(5)))
            assert len(results) == 5
            assert idp.grants == ["r1"]
