"""Which resource types the simulator serves, and under which names.

A ``ResourceType`` is everything the server, discovery and storage need to know about one
resource: its group/version/kind, plural and short names, scope, subresources and the extra
field selectors it supports. The ``Registry`` holds the built-in types and the ones that
CustomResourceDefinitions add at run time, and answers the lookups the URL router makes.

Storage is keyed by ``ResourceType.key`` (``"pods"``, ``"apps/daemonsets"``): one key per
group and plural, whatever the version, because every served version of a resource shares
one set of objects.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dsctl_sim.validation.crschema import CustomSchema

__all__ = ["BUILTIN_TYPES", "STORED_ONLY", "Registry", "ResourceType"]

_ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True, slots=True)
class ResourceType:
    """One served resource. ``group`` is ``""`` for the core group.

    ``has_status`` means a ``status`` subresource exists: the main resource then ignores
    status changes and the subresource ignores everything but status, and ``generation``
    follows ``spec`` only. ``field_selectors`` lists the selectable field paths beyond
    ``metadata.name`` and ``metadata.namespace``. ``schema`` is a CRD's compiled
    ``openAPIV3Schema`` (its storage version's), which writes are validated against and
    ``/openapi/v3`` serves; None for built-ins. ``compact`` keeps stored versions as their
    JSON encoding, decoded on demand (ADR 0110): for the types a large cluster holds by the
    million.
    """

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    list_kind: str = ""
    short_names: tuple[str, ...] = ()
    has_status: bool = False
    singular: str = ""
    subresources: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    field_selectors: tuple[str, ...] = ()
    verbs: tuple[str, ...] = _ALL_VERBS
    builtin: bool = True
    extra_versions: tuple[str, ...] = field(default=())
    schema: CustomSchema | None = None
    compact: bool = False

    def __post_init__(self) -> None:
        if not self.list_kind:
            object.__setattr__(self, "list_kind", self.kind + "List")
        if not self.singular:
            object.__setattr__(self, "singular", self.kind.lower())
        if self.has_status and "status" not in self.subresources:
            object.__setattr__(self, "subresources", (*self.subresources, "status"))

    @property
    def key(self) -> str:
        """Storage key: ``plural`` for core, else ``group/plural``."""
        return f"{self.group}/{self.plural}" if self.group else self.plural

    @property
    def api_version(self) -> str:
        """``v1`` for core, else ``group/version``."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_resource(self) -> str:
        """``daemonsets.apps`` style name used in error messages."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def versions(self) -> tuple[str, ...]:
        """Every served version; the first is the storage version."""
        return (self.version, *self.extra_versions)

    def selectable_fields(self) -> frozenset[str]:
        """Field paths a ``fieldSelector`` may name for this resource."""
        return frozenset(("metadata.name", "metadata.namespace", *self.field_selectors))


_POD_FIELDS = (
    "spec.nodeName",
    "spec.restartPolicy",
    "spec.schedulerName",
    "spec.serviceAccountName",
    "spec.hostNetwork",
    "status.phase",
    "status.podIP",
    "status.nominatedNodeName",
)
_CORE_EVENT_FIELDS = (
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
)
_NEW_EVENT_FIELDS = (
    "regarding.kind",
    "regarding.namespace",
    "regarding.name",
    "regarding.uid",
    "reason",
    "reportingController",
    "type",
)

STORED_ONLY: tuple[ResourceType, ...] = (
    ResourceType("", "v1", "ServiceAccount", "serviceaccounts", True, short_names=("sa",)),
    ResourceType("", "v1", "Service", "services", True, short_names=("svc",), has_status=True,
                 categories=("all",)),
    ResourceType("apps", "v1", "Deployment", "deployments", True, short_names=("deploy",), has_status=True,
                 categories=("all",)),
    ResourceType("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", False),
    ResourceType("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", False),
    ResourceType("rbac.authorization.k8s.io", "v1", "Role", "roles", True),
    ResourceType("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", True),
)
"""Kinds the simulator stores and serves with no loop acting on them, so that the repository's
install manifests (``kubectl apply -k manifests/``) apply as on a cluster: a Deployment is
kept but never rolled out, RBAC objects are kept but never enforced (ADR 0136)."""

BUILTIN_TYPES: tuple[ResourceType, ...] = (
    ResourceType("", "v1", "Namespace", "namespaces", False, short_names=("ns",), has_status=True,
                 field_selectors=("status.phase",)),
    ResourceType("", "v1", "Node", "nodes", False, short_names=("no",), has_status=True,
                 field_selectors=("spec.unschedulable",)),
    ResourceType("", "v1", "Pod", "pods", True, short_names=("po",), has_status=True,
                 subresources=("status", "binding", "eviction"), categories=("all",), field_selectors=_POD_FIELDS,
                 compact=True),
    ResourceType("", "v1", "Event", "events", True, short_names=("ev",),
                 field_selectors=_CORE_EVENT_FIELDS),
    ResourceType("events.k8s.io", "v1", "Event", "events", True, short_names=("ev",),
                 field_selectors=_NEW_EVENT_FIELDS),
    ResourceType("apps", "v1", "DaemonSet", "daemonsets", True, short_names=("ds",), has_status=True,
                 categories=("all",)),
    ResourceType("apps", "v1", "ControllerRevision", "controllerrevisions", True),
    ResourceType("coordination.k8s.io", "v1", "Lease", "leases", True),
    ResourceType("scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", False, short_names=("pc",)),
    ResourceType("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", True, short_names=("pdb",),
                 has_status=True),
    ResourceType("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions",
                 False, short_names=("crd", "crds"), has_status=True, categories=("api-extensions",)),
    *STORED_ONLY,
)


class Registry:
    """The set of served resource types, looked up by URL parts or by storage key.

    Built-ins are registered at construction; ``register``/``unregister`` add and remove
    CRD-defined types at run time. Lookups are dict hits, so routing is O(1).
    """

    def __init__(self, types: tuple[ResourceType, ...] = BUILTIN_TYPES) -> None:
        self._by_key: dict[str, ResourceType] = {}
        self._by_gvr: dict[tuple[str, str, str], ResourceType] = {}
        self.generation = 0
        for rt in types:
            self.register(rt)

    def register(self, rt: ResourceType) -> None:
        """Serve ``rt`` under each of its versions, replacing any earlier type with the same key."""
        old = self._by_key.get(rt.key)
        if old is not None:
            self._drop(old)
        self._by_key[rt.key] = rt
        for version in rt.versions:
            self._by_gvr[(rt.group, version, rt.plural)] = rt
        self.generation += 1

    def unregister(self, key: str) -> ResourceType | None:
        """Stop serving the type with this storage key; returns it, or None if unknown."""
        rt = self._by_key.pop(key, None)
        if rt is not None:
            self._drop(rt)
            self.generation += 1
        return rt

    def _drop(self, rt: ResourceType) -> None:
        for version in rt.versions:
            if self._by_gvr.get((rt.group, version, rt.plural)) is rt:
                del self._by_gvr[(rt.group, version, rt.plural)]

    def lookup(self, group: str, version: str, plural: str) -> ResourceType | None:
        """The type served at ``/apis/<group>/<version>/<plural>`` (``group=""`` for ``/api/v1``)."""
        return self._by_gvr.get((group, version, plural))

    def by_key(self, key: str) -> ResourceType:
        """The type with this storage key; raises ``KeyError`` if it is not served."""
        return self._by_key[key]

    def get(self, key: str) -> ResourceType | None:
        """The type with this storage key, or None."""
        return self._by_key.get(key)

    def find_kind(self, api_version: str, kind: str) -> ResourceType | None:
        """The type for an object's ``apiVersion``/``kind`` (used for ownerReferences)."""
        group, _, version = api_version.rpartition("/")
        for rt in self._by_key.values():
            if rt.group == group and rt.kind == kind and version in rt.versions:
                return rt
        return None

    def __iter__(self) -> Iterator[ResourceType]:
        return iter(list(self._by_key.values()))

    def __contains__(self, key: object) -> bool:
        return key in self._by_key

    def served(self) -> list[tuple[ResourceType, str]]:
        """Every (type, version) pair served, for discovery."""
        return [(rt, v) for rt in self._by_key.values() for v in rt.versions]
