"""Resource types the controller talks about, and how their REST paths are built.

A :class:`Resource` names one REST collection (group, version, plural) plus what is needed to
build its URLs. The controller addresses every request through one of these constants instead of
generated API classes, because requests and answers stay plain JSON dicts.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

__all__ = [
    "CONTROLLER_REVISIONS",
    "DAEMONSETS",
    "EVENTS",
    "EVENTS_V1",
    "LEASES",
    "NAMESPACES",
    "NODES",
    "PODS",
    "POD_DISRUPTION_BUDGETS",
    "PRIORITY_CLASSES",
    "Resource",
    "crd_daemonsets",
    "make_crd_daemonsets",
]


def _segment(value: str) -> str:
    if not value or value in (".", "..") or "/" in value:
        raise ValueError(f"invalid path segment {value!r}")
    return quote(value, safe="")


@dataclass(frozen=True, slots=True)
class Resource:
    """One REST collection: ``/api/v1/pods``, ``/apis/apps/v1/daemonsets``...

    ``group`` is ``""`` for the core group. ``namespaced`` decides whether paths take a namespace.
    """

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        """The ``apiVersion`` of objects of this kind: ``v1`` or ``apps/v1``."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def label(self) -> str:
        """Short name used in metrics and logs: ``pods``, ``apps/daemonsets``."""
        return f"{self.group}/{self.plural}" if self.group else self.plural

    def base_path(self) -> str:
        """``/api/v1`` or ``/apis/<group>/<version>``."""
        return f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"

    def path(
        self,
        *,
        namespace: str | None = None,
        name: str | None = None,
        subresource: str | None = None,
    ) -> str:
        """URL path of the collection, of one object, or of a subresource of an object.

        A namespaced resource without ``namespace`` addresses the collection across all
        namespaces (list and watch only). A cluster-scoped resource rejects a namespace.
        """
        parts = [self.base_path()]
        if namespace is not None:
            if not self.namespaced:
                raise ValueError(f"{self.label} is cluster-scoped; no namespace allowed")
            parts.append(f"namespaces/{_segment(namespace)}")
        elif name is not None and self.namespaced:
            raise ValueError(f"{self.label} is namespaced; a namespace is required for {name!r}")
        parts.append(self.plural)
        if name is not None:
            parts.append(_segment(name))
        if subresource is not None:
            if name is None:
                raise ValueError("a subresource needs an object name")
            parts.append(_segment(subresource))
        return "/".join(parts)


NODES = Resource("", "v1", "nodes", "Node", namespaced=False)
PODS = Resource("", "v1", "pods", "Pod", namespaced=True)
NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
EVENTS = Resource("", "v1", "events", "Event", namespaced=True)
EVENTS_V1 = Resource("events.k8s.io", "v1", "events", "Event", namespaced=True)
DAEMONSETS = Resource("apps", "v1", "daemonsets", "DaemonSet", namespaced=True)
CONTROLLER_REVISIONS = Resource(
    "apps", "v1", "controllerrevisions", "ControllerRevision", namespaced=True
)
LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease", namespaced=True)
PRIORITY_CLASSES = Resource("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", namespaced=False)
POD_DISRUPTION_BUDGETS = Resource("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", namespaced=True)


def crd_daemonsets(group: str = "dsctl.io", version: str = "v1") -> Resource:
    """dsctl's own DaemonSet custom resource (CRD mode), same shape as apps/v1 DaemonSet."""
    return Resource(group, version, "daemonsets", "DaemonSet", namespaced=True)


# The name used in the team's plan for the same factory.
make_crd_daemonsets = crd_daemonsets
