"""The first request of ``dsctl run``: can this identity list the DaemonSets it should reconcile?

A bad token, an unreachable server or a missing CRD should end start-up with one line that says
what was tried and what to do, not a bare ``404 NotFound`` (issue 14). A 404 on the collection
means the API server does not serve that group/version/resource: in CRD mode, the CRD is not
installed.
"""

from __future__ import annotations

from dsctl.kube import errors
from dsctl.kube.client import KubeClient
from dsctl.kube.resources import DAEMONSETS, Resource

__all__ = ["CRD_MANIFEST", "preflight"]

CRD_MANIFEST = "manifests/crd/daemonsets.dsctl.io.yaml"


async def preflight(client: KubeClient, resource: Resource, *, namespace: str | None) -> None:
    """List one DaemonSet; raises ``errors.ConfigError`` with a hint when the kind is not served."""
    try:
        await client.list(resource, namespace=namespace, limit=1)
    except errors.NotFound as exc:
        url = f"{client.host.rstrip('/')}{resource.path(namespace=namespace)}?limit=1"
        if resource == DAEMONSETS:
            hint = "this API server does not serve apps/v1 DaemonSets"
        else:
            hint = (f"the CustomResourceDefinition daemonsets.{resource.group} is not installed; install it with "
                    f"'kubectl apply -f {CRD_MANIFEST}' (or 'kubectl apply -k manifests/'), "
                    f"or reconcile apps/v1 DaemonSets with --resource apps/v1")
        raise errors.ConfigError(f"--resource {resource.api_version}: GET {url} answered "
                                 f"{exc.status} {exc.reason}: {hint}") from None
