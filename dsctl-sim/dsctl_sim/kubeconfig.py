"""The kubeconfig file ``dsctl sim serve --kubeconfig`` writes for kubectl and dsctl.

One cluster (plain http, no TLS), one user with a bearer token (a dummy one unless the
simulator was started with ``--token``, in which case it accepts only that one), one context
named ``dsctl-sim`` that is also the current context.
"""

from __future__ import annotations

import os
from pathlib import Path

import yaml

__all__ = ["CONTEXT", "DEFAULT_TOKEN", "kubeconfig_dict", "write_kubeconfig"]

CONTEXT = "dsctl-sim"


DEFAULT_TOKEN = "dsctl-sim-token"


def kubeconfig_dict(url: str, *, namespace: str = "default", token: str = DEFAULT_TOKEN) -> dict[str, object]:
    """The kubeconfig document for a simulator at ``url``."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CONTEXT, "cluster": {"server": url}}],
        "users": [{"name": CONTEXT, "user": {"token": token}}],
        "contexts": [{"name": CONTEXT, "context": {"cluster": CONTEXT, "user": CONTEXT, "namespace": namespace}}],
        "current-context": CONTEXT,
        "preferences": {},
    }


def write_kubeconfig(path: str | os.PathLike[str], url: str, *, token: str = DEFAULT_TOKEN) -> Path:
    """Write the kubeconfig atomically (a reader never sees half a file); returns the path."""
    target = Path(path).expanduser().resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(yaml.safe_dump(kubeconfig_dict(url, token=token), sort_keys=False))
    os.chmod(tmp, 0o600)
    tmp.replace(target)
    return target
