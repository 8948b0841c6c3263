"""The narrow face of the API client that a sync writes through.

``dsctl.kube.client.KubeClient`` satisfies it; unit tests pass an in-memory fake. Only the
verbs a sync uses are here, so a fake stays small and a new verb is a visible decision.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from dsctl.kube.client import PatchType
from dsctl.kube.resources import Resource

__all__ = ["SyncClient"]


class SyncClient(Protocol):
    """The verbs of one sync: read one object live, and write."""

    async def get(self, res: Resource, name: str, *, namespace: str | None = None) -> dict[str, Any]: ...

    async def create(
        self, res: Resource, body: Mapping[str, Any], *, namespace: str | None = None,
        field_manager: str | None = None,
    ) -> dict[str, Any]: ...

    async def update(self, res: Resource, body: Mapping[str, Any], *, namespace: str | None = None) -> dict[str, Any]:
        ...

    async def update_status(
        self, res: Resource, body: Mapping[str, Any], *, namespace: str | None = None
    ) -> dict[str, Any]: ...

    async def patch(
        self, res: Resource, name: str, body: Any, *, namespace: str | None = None, patch_type: PatchType = "merge",
        subresource: str | None = None, field_manager: str | None = None,
    ) -> dict[str, Any]: ...

    async def delete(
        self, res: Resource, name: str, *, namespace: str | None = None, preconditions_uid: str | None = None,
        preconditions_resource_version: str | None = None, propagation_policy: str | None = None,
        grace_period_seconds: int | None = None, retry_server_errors: bool = True,
    ) -> dict[str, Any]: ...
