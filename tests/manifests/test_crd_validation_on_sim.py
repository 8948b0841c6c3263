"""CRD mode refuses what apps/v1 refuses: the dsctl.io/v1 rules through the real kubectl on the simulator.

The simulator evaluates the CRD's schema and ``x-kubernetes-validations`` as kube-apiserver
does, so each refusal here is the message a user of a real cluster reads from
``kubectl apply``; and it serves the schema in OpenAPI v3, so ``kubectl explain`` works.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.manifests.conftest import MANIFESTS
from tests.manifests.test_apply_on_sim import kubectl_on, sim_kubeconfig

__all__ = ["sim_kubeconfig"]

DS = """\
apiVersion: dsctl.io/v1
kind: DaemonSet
metadata:
  name: {name}
  namespace: default
spec:
  selector:
    matchLabels: {{app: agent}}
  updateStrategy:
    type: RollingUpdate
    rollingUpdate: {{maxUnavailable: {unavailable}, maxSurge: {surge}}}
  template:
    metadata:
      labels: {{app: {label}}}
    spec:
{extra}      containers:
      - name: agent
        image: busybox
"""

BAD_AFFINITY = """\
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
            - matchExpressions:
              - {key: disk, operator: Bigger, values: [ssd]}
              - {key: zone, operator: In}
"""

NO_TERMS = """\
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms: []
"""

RU = "spec.updateStrategy.rollingUpdate"
TERMS = "spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"


@pytest.fixture(scope="module")
def crd_installed(kubectl: str, sim_kubeconfig: Path) -> Path:
    """The simulator with the dsctl.io/v1 CRD applied from manifests/crd."""
    kubectl_on(kubectl, sim_kubeconfig, "apply", "-k", str(MANIFESTS / "crd"))
    # kubectl caches discovery; listing the group's resources refreshes it, as a user would.
    kubectl_on(kubectl, sim_kubeconfig, "api-resources", "--api-group", "dsctl.io")
    return sim_kubeconfig


def apply(kubectl: str, kubeconfig: Path, manifest: str) -> subprocess.CompletedProcess[str]:
    """``kubectl apply -f -`` with this manifest; the result, whatever the exit code."""
    env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
    return subprocess.run([kubectl, "apply", "-f", "-"], input=manifest, capture_output=True, text=True,
                          timeout=60, env=env, check=False)


def manifest(name: str, *, unavailable: object = 1, surge: object = 0, label: str = "agent", extra: str = "") -> str:
    return DS.format(name=name, unavailable=unavailable, surge=surge, label=label, extra=extra)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(manifest("zero", unavailable=0, surge=0),
                     [f"{RU}.maxUnavailable: Required value: cannot be 0 when maxSurge is 0"], id="both-zero"),
        pytest.param(manifest("both", unavailable=1, surge='"10%"'),
                     [f'{RU}.maxSurge: Invalid value: "object": may not be set when maxUnavailable is non-zero'],
                     id="both-non-zero"),
        pytest.param(manifest("inplace", unavailable=0, surge='"25%", rollingUpdateType: InPlaceIfPossible'),
                     [f"{RU}.maxSurge: Required value: must be 0 for rollingUpdateType InPlaceIfPossible"],
                     id="in-place-with-surge"),
        pytest.param(manifest("affinity", extra=BAD_AFFINITY),
                     [f'{TERMS}[0].matchExpressions[0].operator: Invalid value: "object": '
                      "not a valid selector operator",
                      f"{TERMS}[0].matchExpressions[1].values: Required value: "
                      "must be specified when `operator` is 'In' or 'NotIn'"],
                     id="malformed-node-affinity"),
        pytest.param(manifest("noterms", extra=NO_TERMS),
                     [f"{TERMS}: Required value: must have at least one node selector term"], id="no-node-terms"),
        pytest.param(manifest("mismatch", label="other"),
                     ['spec.template.metadata.labels: Invalid value: "object": '
                      "`selector` does not match template `labels`"],
                     id="selector-mismatch"),
        pytest.param(manifest("unicode", label="ünï-cødé"),
                     ["spec.template.metadata.labels[app]: Invalid value: \"string\": a valid label must be an empty "
                      "string or consist of alphanumeric characters"],
                     id="label-value-format"),
        pytest.param(manifest("long", label="a" * 64),
                     ["spec.template.metadata.labels[app]: Too long: may not be longer than 63"], id="label-too-long"),
    ],
)
def test_crd_mode_refuses_what_apps_v1_refuses(
    kubectl: str, crd_installed: Path, text: str, expected: list[str]
) -> None:
    """kubectl apply of a dsctl.io/v1 DaemonSet that apps/v1 refuses fails with apps/v1's message; nothing is stored."""
    result = apply(kubectl, crd_installed, text)
    assert result.returncode != 0, result.stdout
    assert 'is invalid' in result.stderr
    for line in expected:
        assert line in result.stderr, result.stderr
    name = text.split("name: ", 1)[1].split("\n", 1)[0]
    got = subprocess.run([kubectl, "get", "dds", name, "-n", "default"], capture_output=True, text=True,
                         timeout=60, env={**os.environ, "KUBECONFIG": str(crd_installed)}, check=False)
    assert "NotFound" in got.stderr


@pytest.mark.parametrize(
    ("unavailable", "surge"),
    [
        pytest.param(1, 0, id="unavailable-only"),
        pytest.param(0, '"25%"', id="surge-only"),
        pytest.param('"10%"', '"0%"', id="percent-zero-surge"),
    ],
)
def test_crd_mode_accepts_valid_strategies(kubectl: str, crd_installed: Path, unavailable: object,
                                           surge: object) -> None:
    """Exactly one of maxUnavailable and maxSurge non-zero is accepted, as in apps/v1."""
    result = apply(kubectl, crd_installed, manifest(f"ok-{abs(hash((unavailable, surge))) % 10000}",
                                                    unavailable=unavailable, surge=surge))
    assert result.returncode == 0, result.stderr


def test_kubectl_explain_walks_the_crd_schema(kubectl: str, crd_installed: Path) -> None:
    """`kubectl explain dds.spec.updateStrategy` prints the strategy's fields from the served OpenAPI v3."""
    out = kubectl_on(kubectl, crd_installed, "explain", "dds.spec.updateStrategy")
    assert "KIND:       DaemonSet" in out and "VERSION:    v1" in out and "GROUP:      dsctl.io" in out
    assert "rollingUpdate\t<Object>" in out and "type\t<string>" in out
    deeper = kubectl_on(kubectl, crd_installed, "explain", "dds.spec.updateStrategy.rollingUpdate")
    assert "maxSurge" in deeper and "maxUnavailable" in deeper
