"""What kubectl prints when the simulator refuses an apps/v1 write kube-apiserver refuses (issues 14 and 15)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from tests.support.simproc import SimProcess

pytestmark = pytest.mark.asyncio(loop_scope="module")

DS = """\
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: {name}
  namespace: default
spec:
{extra}  selector:
    matchLabels: {{app: agent}}
  updateStrategy:
    type: RollingUpdate
    rollingUpdate: {{maxUnavailable: {unavailable}, maxSurge: {surge}}}
  template:
    metadata:
      labels: {{app: agent}}
{annotations}    spec:
      containers:
      - name: agent
        image: busybox
"""


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def sim() -> AsyncIterator[SimProcess]:
    """One simulator for the module; each case writes its own DaemonSet."""
    async with SimProcess(nodes=1, args=["--no-control-plane"]) as proc:
        yield proc


def manifest(name: str, *, unavailable: object = 1, surge: object = 0, extra: str = "", annotations: str = "") -> str:
    return DS.format(name=name, unavailable=unavailable, surge=surge, extra=extra, annotations=annotations)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(manifest("both", surge=1),
                     'The DaemonSet "both" is invalid: spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: 1: '
                     "may not be set when maxUnavailable is non-zero", id="surge-and-unavailable"),
        pytest.param(manifest("zero", unavailable=0),
                     'The DaemonSet "zero" is invalid: spec.updateStrategy.rollingUpdate.maxUnavailable: '
                     "Required value: cannot be 0 when maxSurge is 0", id="both-zero"),
        pytest.param(manifest("history", extra="  revisionHistoryLimit: 1000000000000000\n"),
                     'Error from server (BadRequest): error when creating "STDIN": DaemonSet in version "v1" cannot be '
                     "handled as a DaemonSet: json: cannot unmarshal number 1000000000000000 into Go struct field "
                     "DaemonSetSpec.spec.revisionHistoryLimit of type int32", id="history-limit-int32"),
        pytest.param(manifest("ready", extra="  minReadySeconds: 1000000000000\n"),
                     "json: cannot unmarshal number 1000000000000 into Go struct field "
                     "DaemonSetSpec.spec.minReadySeconds of type int32", id="min-ready-int32"),
        pytest.param(manifest("big", annotations=f"      annotations: {{note: {'x' * 1_500_000}}}\n"),
                     # kubectl's last-applied annotation holds the object too, so both limits are hit.
                     "* spec.template.metadata.annotations: Too long: must have at most 262144 bytes",
                     id="annotation-1.5MB"),
    ],
)
async def test_kubectl_apply_prints_the_apiservers_refusal(sim: SimProcess, text: str, expected: str) -> None:
    """kubectl apply fails with kube-apiserver's message, and nothing is stored."""
    result = await sim.kubectl("apply", "-f", "-", input=text.encode(), check=False)
    assert result.returncode != 0
    assert expected in result.stderr, result.stderr
    name = text.split("name: ", 1)[1].split("\n", 1)[0]
    got = await sim.kubectl("get", "ds", name, "-n", "default", check=False)
    assert "NotFound" in got.stderr
