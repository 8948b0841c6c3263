"""Strategic-merge-patch metadata for the kinds the simulator serves.

Go types carry ``patchStrategy``/``patchMergeKey`` struct tags; kube-apiserver reads them by
reflection when it applies a strategic merge patch. Python objects are plain dicts, so the same
facts are written down here as a small tree of ``Field`` values, transcribed from the
``x-kubernetes-patch-strategy``/``x-kubernetes-patch-merge-key`` extensions of the published
OpenAPI for core/v1, apps/v1, coordination.k8s.io/v1 and events.k8s.io/v1.

Only fields that deviate from the default need an entry. The default is what the apiserver
does for an untagged field: maps (structs and ``map[string]string``) merge key by key, and
lists are atomic, replaced wholesale by the patch. Notably atomic, so absent here on purpose:
``PodSpec.tolerations``, ``NodeSpec.taints``, ``NamespaceSpec.finalizers``, container
``command``/``args``/``envFrom`` and every list inside affinity terms.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["Field", "Schema", "schema_for_kind"]


@dataclass(frozen=True, slots=True)
class Field:
    """How one field merges.

    ``merge`` marks a list with ``patchStrategy: merge``: a list of maps merges item by item on
    ``key``, a list of scalars merges as a set. ``schema`` describes the nested struct (of the
    field itself when it is a map, of each item when it is a list); ``None`` means untyped.
    """

    merge: bool = False
    key: str | None = None
    schema: Schema | None = None


Schema = Mapping[str, Field]

_OBJECT_META: Schema = {
    "finalizers": Field(merge=True),
    "ownerReferences": Field(merge=True, key="uid"),
}
_META = Field(schema=_OBJECT_META)


def _by(key: str, schema: Schema | None = None) -> Field:
    return Field(merge=True, key=key, schema=schema)


_CONTAINER: Schema = {
    "env": _by("name"),
    "ports": _by("containerPort"),
    "volumeMounts": _by("mountPath"),
    "volumeDevices": _by("devicePath"),
}

_POD_SPEC: Schema = {
    "containers": _by("name", _CONTAINER),
    "initContainers": _by("name", _CONTAINER),
    "ephemeralContainers": _by("name", _CONTAINER),
    # Tagged "merge,retainKeys": kubectl sends $retainKeys inside each volume, which the
    # merge honours wherever it appears, so only the merge half needs recording.
    "volumes": _by("name"),
    "imagePullSecrets": _by("name"),
    "hostAliases": _by("ip"),
    "resourceClaims": _by("name"),
    "schedulingGates": _by("name"),
    "topologySpreadConstraints": _by("topologyKey"),
}

_POD_STATUS: Schema = {
    "conditions": _by("type"),
    "podIPs": _by("ip"),
    "hostIPs": _by("ip"),
    "resourceClaimStatuses": _by("name"),
}

_POD_TEMPLATE: Schema = {"metadata": _META, "spec": Field(schema=_POD_SPEC)}

_CONDITIONS_ONLY: Schema = {"conditions": _by("type")}

_KINDS: dict[str, Schema] = {
    "Pod": {"metadata": _META, "spec": Field(schema=_POD_SPEC), "status": Field(schema=_POD_STATUS)},
    "PodTemplate": {"metadata": _META, "template": Field(schema=_POD_TEMPLATE)},
    "DaemonSet": {
        "metadata": _META,
        "spec": Field(schema={"template": Field(schema=_POD_TEMPLATE)}),
        "status": Field(schema=_CONDITIONS_ONLY),
    },
    "Node": {
        "metadata": _META,
        "spec": Field(schema={"podCIDRs": Field(merge=True)}),
        "status": Field(schema={"addresses": _by("type"), "conditions": _by("type")}),
    },
    "Namespace": {"metadata": _META, "status": Field(schema=_CONDITIONS_ONLY)},
}

# Kinds whose only tagged lists live in ObjectMeta. Unknown kinds (custom resources) get the
# same treatment: kube-apiserver refuses strategic merge for them, kubectl never sends one,
# and treating every other list as atomic makes the patch behave like a JSON merge patch.
_METADATA_ONLY: Schema = {"metadata": _META}


def schema_for_kind(kind: str) -> Schema:
    """The patch metadata for objects of ``kind`` (e.g. ``"DaemonSet"``)."""
    return _KINDS.get(kind, _METADATA_ONLY)
