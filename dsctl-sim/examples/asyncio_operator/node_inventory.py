"""An example operator on the plain kubernetes_asyncio client: it labels every node it sees.

Each node gets ``example.com/inventoried: "true"``. It lists the nodes, then watches from the
list's resourceVersion; a 410 Gone (the watch fell too far behind) means list again. This is
the list-then-watch loop every controller needs, with nothing else around it.
"""

from __future__ import annotations

import asyncio
from typing import Any

from kubernetes_asyncio import client, watch
from kubernetes_asyncio.client.exceptions import ApiException

LABEL = "example.com/inventoried"


async def label_node(core: client.CoreV1Api, node: Any) -> None:
    """Patch the label onto one node unless it is there already."""
    if (node.metadata.labels or {}).get(LABEL) == "true":
        return
    await core.patch_node(node.metadata.name, {"metadata": {"labels": {LABEL: "true"}}})


async def run(api: client.ApiClient) -> None:
    """Label nodes until cancelled."""
    core = client.CoreV1Api(api)
    while True:
        listed = await core.list_node()
        for node in listed.items:
            await label_node(core, node)
        version = listed.metadata.resource_version
        try:
            async with watch.Watch() as stream:
                async for event in stream.stream(core.list_node, resource_version=version, timeout_seconds=300):
                    if event["type"] == "ERROR":
                        break  # an in-stream Status, most often 410 Gone: list again
                    if event["type"] in ("ADDED", "MODIFIED"):
                        await label_node(core, event["object"])
        except ApiException as err:
            if err.status != 410:
                raise
        await asyncio.sleep(0)  # list again: after a 410, or when the watch times out
