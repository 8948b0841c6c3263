"""Which DaemonSet a rollout argument names, and how to print it.

``ds/x``, ``daemonset/x``, ``daemonsets/x`` and ``daemonset.apps/x`` name an apps/v1
DaemonSet; ``dds/x``, ``daemonset.dsctl.io/x`` and ``daemonsets.dsctl.io/x`` name dsctl's
custom resource. A bare ``x`` takes the mode from ``--resource``.
"""

from __future__ import annotations

from dataclasses import dataclass

from dsctl.kube.resources import DAEMONSETS, Resource, crd_daemonsets

__all__ = ["Target", "TargetError", "parse_target"]

_APPS = {"ds", "daemonset", "daemonsets", "daemonset.apps", "daemonsets.apps"}
_CRD = {"dds", "daemonset.dsctl.io", "daemonsets.dsctl.io"}


class TargetError(ValueError):
    """An argument that names no DaemonSet."""


@dataclass(frozen=True, slots=True)
class Target:
    """One DaemonSet: its resource (apps/v1 or the CRD), namespace and name."""

    resource: Resource
    namespace: str
    name: str

    @property
    def crd(self) -> bool:
        """Whether this is dsctl's custom resource rather than apps/v1."""
        return self.resource.group != "apps"

    @property
    def ref(self) -> str:
        """kubectl's way of naming it in output: ``daemonset.apps/x`` or ``daemonset.dsctl.io/x``."""
        return f"daemonset.{self.resource.group}/{self.name}"

    @property
    def plural_ref(self) -> str:
        """kubectl's way of naming it in errors: ``daemonsets.apps "x"``."""
        return f'daemonsets.{self.resource.group} "{self.name}"'


def parse_target(text: str, *, namespace: str, resource: str = "apps/v1") -> Target:
    """The DaemonSet that ``text`` names; ``resource`` decides for a bare name."""
    kind, _, name = text.rpartition("/")
    if not name:
        raise TargetError(f"no DaemonSet name in {text!r}")
    if kind:
        if kind.lower() in _APPS:
            return Target(DAEMONSETS, namespace, name)
        if kind.lower() in _CRD:
            return Target(crd_daemonsets(), namespace, name)
        raise TargetError(f"{kind!r} is not a DaemonSet kind: use ds/NAME (apps/v1) or dds/NAME (dsctl.io/v1)")
    if resource == "dsctl.io/v1":
        return Target(crd_daemonsets(), namespace, name)
    if resource == "apps/v1":
        return Target(DAEMONSETS, namespace, name)
    raise TargetError(f"unknown --resource {resource!r}: use apps/v1 or dsctl.io/v1")
