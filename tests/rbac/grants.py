"""What the manifests grant, as the same ``Permission`` values the request audit produces.

``render_rbac`` builds ``manifests/`` with ``kubectl kustomize`` (optionally with components,
such as ``apps-v1-mode``) and returns the ClusterRole and the leader-election Role as they
would be installed. ``granted`` expands their rules into one ``Permission`` per
(group, resource, verb[, resourceName]); ``compare`` answers the two least-privilege
questions: which uses are not granted, and which grants nothing used.

Two modelling choices, both stated here so a reader can disagree with them:

- Namespaces are ignored: the Role lives in ``dsctl-system``, while tests run the Lease in
  ``default``. The object name is not ignored: the Role limits get/update to one Lease name.
- ``implied_by_admission`` adds what admission checks on the controller's behalf without a
  request of its own: with the ``OwnerReferencesPermissionEnforcement`` plugin, creating or
  patching an object whose ownerReference sets ``blockOwnerDeletion`` needs ``update`` on the
  owner's ``finalizers`` subresource.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.support.requestaudit import Permission
from tests.support.simproc import kubectl_path

__all__ = [
    "MANIFESTS",
    "RbacObjects",
    "RbacReport",
    "compare",
    "covers",
    "granted",
    "implied_by_admission",
    "normalize_daemonset_group",
    "render_rbac",
]

MANIFESTS = Path(__file__).resolve().parents[2] / "manifests"
DAEMONSET_GROUP = "<daemonset-group>"


@dataclass(frozen=True)
class RbacObjects:
    """The rendered RBAC objects dsctl's own ServiceAccount is bound to."""

    cluster_role: Mapping[str, Any]
    lease_role: Mapping[str, Any]


def render_rbac(workdir: Path, *, components: Sequence[str] = ()) -> RbacObjects:
    """``kubectl kustomize`` of ``manifests/`` plus ``components`` (names under ``components/``).

    The overlay is written in ``workdir``; kustomize only accepts relative paths to other
    kustomizations, hence ``os.path.relpath``.
    """
    base = os.path.relpath(MANIFESTS, workdir)
    overlay = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": [base],
        "components": [f"{base}/components/{name}" for name in components],
    }
    (workdir / "kustomization.yaml").write_text(yaml.safe_dump(overlay))
    built = subprocess.run([kubectl_path(), "kustomize", str(workdir)], capture_output=True, text=True,
                           check=False, timeout=60)
    if built.returncode != 0:
        raise AssertionError(f"kubectl kustomize failed: {built.stderr}")
    docs = [d for d in yaml.safe_load_all(built.stdout) if d]
    cluster_roles = [d for d in docs if d.get("kind") == "ClusterRole"]
    roles = [d for d in docs if d.get("kind") == "Role"]
    assert len(cluster_roles) == 1, f"expected one ClusterRole, got {[r['metadata']['name'] for r in cluster_roles]}"
    assert len(roles) == 1, f"expected one Role (leader election), got {[r['metadata']['name'] for r in roles]}"
    return RbacObjects(cluster_role=cluster_roles[0], lease_role=roles[0])


def granted(roles: Iterable[Mapping[str, Any]]) -> set[Permission]:
    """One permission per (group, resource, verb[, resourceName]) the rules grant."""
    out: set[Permission] = set()
    for role in roles:
        for rule in role.get("rules") or []:
            names = list(rule.get("resourceNames") or [""])
            for group in rule.get("apiGroups") or []:
                for resource in rule.get("resources") or []:
                    for verb in rule.get("verbs") or []:
                        out.update(Permission(group, resource, verb, name) for name in names)
    return out


def covers(grant: Permission, use: Permission) -> bool:
    """Whether ``grant`` authorizes ``use`` (a grant without a name covers every name)."""
    return grant.without_name() == use.without_name() and grant.name in ("", use.name)


def implied_by_admission(used: Iterable[Permission], *, daemonset_group: str) -> set[Permission]:
    """Permissions admission checks for the controller's writes (see the module docstring).

    Every pod and ControllerRevision dsctl creates or adopts carries a controller reference
    with ``blockOwnerDeletion: true`` to its DaemonSet.
    """
    owner_writes = {("", "pods", "create"), ("", "pods", "patch"),
                    ("apps", "controllerrevisions", "create"), ("apps", "controllerrevisions", "patch")}
    if any((p.group, p.resource, p.verb) in owner_writes for p in used):
        return {Permission(daemonset_group, "daemonsets/finalizers", "update")}
    return set()


def normalize_daemonset_group(permissions: Iterable[Permission], *, daemonset_group: str) -> set[Permission]:
    """Rename the DaemonSet kind's group to a placeholder, so both modes compare as one."""
    out: set[Permission] = set()
    for p in permissions:
        is_ds = p.resource == "daemonsets" or p.resource.startswith("daemonsets/")
        group = DAEMONSET_GROUP if is_ds and p.group == daemonset_group else p.group
        out.add(Permission(group, p.resource, p.verb, p.name))
    return out


@dataclass(frozen=True)
class RbacReport:
    """The two directions of least privilege."""

    missing: frozenset[Permission]
    unused: frozenset[Permission]

    def describe(self) -> str:
        """Human-readable diff for an assertion message."""
        lines = ["used but not granted:", *(f"  + {p}" for p in sorted(self.missing)),
                 "granted but never used:", *(f"  - {p}" for p in sorted(self.unused))]
        return "\n".join(lines)


def compare(grants: Iterable[Permission], uses: Iterable[Permission]) -> RbacReport:
    """Uses no grant covers, and grants no use needed."""
    grant_set, use_set = set(grants), set(uses)
    missing = frozenset(u for u in use_set if not any(covers(g, u) for g in grant_set))
    unused = frozenset(g for g in grant_set if not any(covers(g, u) for u in use_set))
    return RbacReport(missing=missing, unused=unused)
