"""An example kopf operator: every ``Greeting`` gets one pod that says its message.

Create a Greeting ``{spec: {message: hi}}`` and the operator creates the pod
``greeting-<name>``, owned by the Greeting so that the garbage collector removes it with it,
and records the pod's name in the Greeting's status (``status.create_pod.pod``). Writes go
through kubernetes_asyncio, configured from the same kubeconfig kopf logs in with.
"""

from __future__ import annotations

import os
from typing import Any

import kopf
from kubernetes_asyncio import client, config

GROUP, VERSION, PLURAL = "example.com", "v1", "greetings"


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    """Run alone: no peering objects are needed."""
    settings.peering.standalone = True


@kopf.on.login()
def login(**kwargs: Any) -> kopf.ConnectionInfo | None:
    """In a pod, the service account; elsewhere the kubeconfig named by $KUBECONFIG."""
    return kopf.login_with_service_account(**kwargs) or kopf.login_with_kubeconfig(**kwargs)


@kopf.on.create(GROUP, VERSION, PLURAL)
async def create_pod(spec: kopf.Spec, name: str, namespace: str | None, body: kopf.Body,
                     **_: Any) -> dict[str, Any]:
    """Create the greeting's pod; the returned dict lands in ``status.create_pod``."""
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"greeting-{name}", "labels": {"example.com/greeting": name}},
        "spec": {"containers": [{"name": "say", "image": "busybox:1.36",
                                 "command": ["echo", spec.get("message", "hello")]}]},
    }
    kopf.adopt(pod, owner=body)
    await config.load_kube_config(config_file=os.environ.get("KUBECONFIG"))
    async with client.ApiClient() as api:
        # The client serialises plain dicts as they are; its annotations name only its models.
        created = await client.CoreV1Api(api).create_namespaced_pod(namespace or "default", pod)  # type: ignore[arg-type]
    kopf.info(body, reason="Greeting", message=f"created pod {created.metadata.name}")
    return {"pod": created.metadata.name}
