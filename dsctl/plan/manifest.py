"""The file a plan is made for: one DaemonSet manifest, read and checked as the API would.

``load_manifest`` reads one YAML or JSON document and refuses, in one line naming the file,
anything ``kubectl apply`` would not get past the API server: not a DaemonSet, no name, a
namespace that contradicts ``--namespace``, or an unknown field. Unknown fields are judged
strictly, as ``kubectl apply`` asks (``fieldValidation=Strict``): for apps/v1 against the
fields the built-in type declares (``dsctl_api.strictfields``), for ``dsctl.io/v1`` against the
CRD's own schema as the cluster serves it (``crdschema``), which is only known once the cluster
has been read (``Manifest.check_custom_fields``).

The kind in the file decides the mode: ``apps/v1`` or ``dsctl.io/v1``.
"""

from __future__ import annotations

import copy
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from dsctl.kube.resources import DAEMONSETS, Resource, crd_daemonsets
from dsctl.plan.crdschema import unknown_fields as custom_unknown_fields
from dsctl_api.objects import as_map
from dsctl_api.strictfields import strict_decoding_message, unknown_fields

__all__ = ["APPS", "CUSTOM", "Manifest", "ManifestError", "load_manifest", "parse_manifest"]

APPS = "apps/v1"
CUSTOM = "dsctl.io/v1"
_KEY = "apps/daemonsets"


class ManifestError(ValueError):
    """A manifest no plan can be made for; the message is one line naming the file."""


@dataclass(frozen=True, slots=True)
class Manifest:
    """One DaemonSet as the file gives it (a private copy), with its mode and address."""

    obj: dict[str, Any]
    source: str
    namespace: str
    name: str

    @property
    def custom(self) -> bool:
        """Whether the file holds dsctl's own kind (``dsctl.io/v1``)."""
        return self.obj.get("apiVersion") == CUSTOM

    @property
    def api_version(self) -> str:
        """``apps/v1`` or ``dsctl.io/v1``."""
        return CUSTOM if self.custom else APPS

    @property
    def resource(self) -> Resource:
        """The REST collection of the DaemonSet's kind."""
        return crd_daemonsets() if self.custom else DAEMONSETS

    def check_custom_fields(self, schema: Mapping[str, Any]) -> None:
        """Refuse fields the CRD's ``openAPIV3Schema`` does not declare (custom kind only).

        The root ``metadata`` is ObjectMeta for every kind, so it is judged by the built-in
        table; everything else by the served schema.
        """
        paths = unknown_fields(_KEY, {"metadata": self.obj.get("metadata")})
        rest = {k: v for k, v in self.obj.items() if k != "metadata"}
        paths += [p for p in custom_unknown_fields(schema, rest) if not p.startswith("metadata")]
        if paths:
            raise ManifestError(f"{self.source}: {strict_decoding_message(paths)}")


def _one_document(text: str, source: str) -> Any:
    try:
        documents = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "not YAML or JSON"
        raise ManifestError(f"{source}: not YAML or JSON{where}: {problem}") from None
    if len(documents) != 1:
        raise ManifestError(f"{source}: holds {len(documents)} documents; dsctl plan takes exactly one DaemonSet")
    return documents[0]


def parse_manifest(doc: Any, *, source: str, namespace: str | None) -> Manifest:
    """Check a decoded document; ``namespace`` is ``--namespace`` (None: the file's, else the context's)."""
    if not isinstance(doc, Mapping):
        raise ManifestError(f"{source}: is not an object: dsctl plan takes one DaemonSet manifest")
    api_version, kind = doc.get("apiVersion"), doc.get("kind")
    if kind != "DaemonSet" or api_version not in (APPS, CUSTOM):
        shown = f"{kind or 'no kind'} ({api_version or 'no apiVersion'})"
        raise ManifestError(f"{source}: {shown} is not a DaemonSet: dsctl plan takes an {APPS} or {CUSTOM} "
                            "DaemonSet")
    obj: dict[str, Any] = copy.deepcopy(dict(doc))
    if api_version == APPS:
        paths = unknown_fields(_KEY, obj)
        if paths:
            raise ManifestError(f"{source}: {strict_decoding_message(paths)}")
    meta = as_map(obj.get("metadata"))
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise ManifestError(f"{source}: metadata.name: Required value (a plan needs the DaemonSet's name)")
    own = meta.get("namespace")
    if own is not None and not isinstance(own, str):
        raise ManifestError(f"{source}: metadata.namespace: must be a string")
    if own and namespace and own != namespace:
        raise ManifestError(f'{source}: the namespace from the provided object "{own}" does not match the namespace '
                            f'"{namespace}"; pass --namespace={own} or remove it from the file')
    return Manifest(obj=obj, source=source, namespace=own or namespace or "default", name=name)


def load_manifest(path: str, *, namespace: str | None, context_namespace: str = "") -> Manifest:
    """Read ``path`` (``-``: standard input) and check it; raises ``ManifestError``.

    ``namespace`` is ``--namespace``; without it and without one in the file, the
    kubeconfig context's namespace applies, else ``default``, as for kubectl.
    """
    source = "-" if path == "-" else str(path)
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ManifestError(f"{source}: cannot read it: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ManifestError(f"{source}: not UTF-8 text") from None
    manifest = parse_manifest(_one_document(text, source), source=source, namespace=namespace)
    own = as_map(manifest.obj.get("metadata")).get("namespace")
    if not own and not namespace and context_namespace:
        return Manifest(obj=manifest.obj, source=source, namespace=context_namespace, name=manifest.name)
    return manifest
