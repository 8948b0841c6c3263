"""REST paths and apiVersions of the resource constants."""

from __future__ import annotations

import pytest

from dsctl.kube import resources as r


@pytest.mark.parametrize(
    ("res", "kwargs", "path"),
    [
        pytest.param(r.NODES, {}, "/api/v1/nodes", id="nodes-collection"),
        pytest.param(r.NODES, {"name": "n1"}, "/api/v1/nodes/n1", id="node"),
        pytest.param(r.NODES, {"name": "n1", "subresource": "status"},
                     "/api/v1/nodes/n1/status", id="node-status"),
        pytest.param(r.PODS, {}, "/api/v1/pods", id="pods-all-namespaces"),
        pytest.param(r.PODS, {"namespace": "kube-system"},
                     "/api/v1/namespaces/kube-system/pods", id="pods-in-namespace"),
        pytest.param(r.DAEMONSETS, {"namespace": "d", "name": "x", "subresource": "status"},
                     "/apis/apps/v1/namespaces/d/daemonsets/x/status", id="ds-status"),
        pytest.param(r.CONTROLLER_REVISIONS, {"namespace": "d"},
                     "/apis/apps/v1/namespaces/d/controllerrevisions", id="revisions"),
        pytest.param(r.LEASES, {"namespace": "d", "name": "dsctl"},
                     "/apis/coordination.k8s.io/v1/namespaces/d/leases/dsctl", id="lease"),
        pytest.param(r.EVENTS_V1, {"namespace": "d"},
                     "/apis/events.k8s.io/v1/namespaces/d/events", id="events-v1"),
        pytest.param(r.crd_daemonsets(), {"namespace": "d"},
                     "/apis/dsctl.io/v1/namespaces/d/daemonsets", id="crd"),
        pytest.param(r.NODES, {"name": "a b"}, "/api/v1/nodes/a%20b", id="quoted-name"),
    ],
)
def test_paths(res: r.Resource, kwargs: dict[str, str], path: str) -> None:
    """Paths follow /api/v1 for core and /apis/<group>/<version> otherwise."""
    assert res.path(**kwargs) == path


@pytest.mark.parametrize(
    ("res", "kwargs"),
    [
        pytest.param(r.NODES, {"namespace": "x"}, id="namespace-on-cluster-scoped"),
        pytest.param(r.PODS, {"name": "p"}, id="name-without-namespace"),
        pytest.param(r.PODS, {"namespace": "d", "name": "../x"}, id="slash-in-name"),
        pytest.param(r.PODS, {"namespace": "d", "subresource": "status"}, id="subresource-no-name"),
    ],
)
def test_bad_paths_rejected(res: r.Resource, kwargs: dict[str, str]) -> None:
    """Impossible addresses raise ValueError instead of building a wrong URL."""
    with pytest.raises(ValueError):
        res.path(**kwargs)


def test_api_versions_and_labels() -> None:
    """apiVersion and metric label of core and grouped resources."""
    assert r.PODS.api_version == "v1"
    assert r.DAEMONSETS.api_version == "apps/v1"
    assert r.DAEMONSETS.label == "apps/daemonsets"
    crd = r.make_crd_daemonsets("example.com", "v1beta1")
    assert crd.api_version == "example.com/v1beta1"
    assert crd.kind == "DaemonSet"
