"""The API layer: the only code in dsctl that talks HTTP to an API server.

- ``config``: find and load the client configuration (kubeconfig, KUBECONFIG, in-cluster).
- ``errors``: the one error hierarchy that the layers above catch.
- ``resources``: ``Resource`` constants and REST path building.
- ``ratelimit``: the QPS/burst token bucket and retry backoff.
- ``fence``: the write fence that refuses writes once the leader Lease cannot be trusted.
- ``transport``: one request with pacing, auth, retries and metrics.
- ``metrics``: the ``rest_client_*`` Prometheus metrics, one set per registry.
- ``watch``: decoding NDJSON watch streams.
- ``client``: ``KubeClient``, get/list/watch/create/update/patch/delete over plain dicts.

kubernetes_asyncio is imported here and nowhere else (enforced by import-linter).
"""

from dsctl.kube.client import DEFAULT_USER_AGENT, KubeClient, PatchType
from dsctl.kube.config import LoadedConfig, load_config
from dsctl.kube.errors import (
    AlreadyExists,
    ApiError,
    BadRequest,
    ConfigError,
    Conflict,
    ConnectionFailed,
    Fenced,
    Forbidden,
    Gone,
    Invalid,
    KubeError,
    NotFound,
    ServerError,
    TooManyRequests,
    Unauthorized,
)
from dsctl.kube.fence import WriteFence
from dsctl.kube.ratelimit import DEFAULT_BURST, DEFAULT_QPS, Backoff, TokenBucket
from dsctl.kube.resources import (
    CONTROLLER_REVISIONS,
    DAEMONSETS,
    EVENTS,
    EVENTS_V1,
    LEASES,
    NAMESPACES,
    NODES,
    PODS,
    Resource,
    crd_daemonsets,
    make_crd_daemonsets,
)
from dsctl.kube.transport import RetryPolicy

__all__ = [
    "CONTROLLER_REVISIONS",
    "DAEMONSETS",
    "DEFAULT_BURST",
    "DEFAULT_QPS",
    "DEFAULT_USER_AGENT",
    "EVENTS",
    "EVENTS_V1",
    "LEASES",
    "NAMESPACES",
    "NODES",
    "PODS",
    "AlreadyExists",
    "ApiError",
    "Backoff",
    "BadRequest",
    "ConfigError",
    "Conflict",
    "ConnectionFailed",
    "Fenced",
    "Forbidden",
    "Gone",
    "Invalid",
    "KubeClient",
    "KubeError",
    "LoadedConfig",
    "NotFound",
    "PatchType",
    "Resource",
    "RetryPolicy",
    "ServerError",
    "TokenBucket",
    "TooManyRequests",
    "Unauthorized",
    "WriteFence",
    "crd_daemonsets",
    "load_config",
    "make_crd_daemonsets",
]
