"""The shipped dsctl.io/v1 CRD for tests, and the same CRD without its CEL rules and size bounds.

Without ``x-kubernetes-validations`` and the ``maxLength``/``maxItems``/``maxProperties`` bounds
that came with them, it is the CRD an older install (or a cluster too old for CEL rules)
serves: values the current CRD refuses at the API, such as a malformed label value in the
template, reach the controller there, and tests of the controller's own guards need that.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

__all__ = ["CRD_FILE", "write_crd_without_rules"]

CRD_FILE = Path(__file__).resolve().parents[2] / "manifests" / "crd" / "daemonsets.dsctl.io.yaml"


_ADDED_WITH_RULES = {"x-kubernetes-validations", "maxLength", "maxItems", "maxProperties"}


def _without_rules(node: Any) -> Any:
    """A schema with every CEL rule and size bound removed."""
    if isinstance(node, dict):
        return {k: _without_rules(v) for k, v in node.items() if k not in _ADDED_WITH_RULES}
    if isinstance(node, list):
        return [_without_rules(v) for v in node]
    return node


def write_crd_without_rules(directory: Path) -> Path:
    """Write the CRD without its CEL rules and bounds into ``directory``; returns the file's path."""
    loose = directory / "daemonsets.dsctl.io.yaml"
    loose.write_text(yaml.safe_dump(_without_rules(yaml.safe_load(CRD_FILE.read_text(encoding="utf-8")))),
                     encoding="utf-8")
    return loose
