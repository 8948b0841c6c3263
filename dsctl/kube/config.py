"""Finding and loading the client configuration, in client-go's order.

Order (the first that applies wins, as controller-runtime's ``GetConfig`` does):

1. an explicit kubeconfig path (``--kubeconfig``), which must exist;
2. ``KUBECONFIG``: a colon-separated list of files, merged first-wins (missing files skipped);
3. in-cluster: ``KUBERNETES_SERVICE_HOST``/``PORT`` plus the service-account token and CA;
4. ``~/.kube/config``.

kubernetes_asyncio parses the kubeconfig, sets up TLS and client certificates and performs the
first authentication; this module checks the files first so that every failure becomes a
:class:`ConfigError` with one line that names the problem (missing file, malformed YAML, unknown
context, no configuration at all) instead of a library traceback.

Bearer tokens are then handed to :mod:`dsctl.kube.credentials`, which keeps them fresh as
client-go does: ``token``, ``tokenFile`` (re-read every minute; preferred over ``token`` as in
client-go), token-printing exec plugins, the ``oidc`` auth-provider and the in-cluster
service-account token (re-read every minute). Basic auth, client certificates (also when an exec
plugin prints them) and the ``gcp`` auth-provider stay as kubernetes_asyncio loaded them.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from kubernetes_asyncio.client import Configuration
from kubernetes_asyncio.config.config_exception import ConfigException
from kubernetes_asyncio.config.incluster_config import (
    SERVICE_CERT_FILENAME,
    SERVICE_TOKEN_FILENAME,
    InClusterConfigLoader,
)
from kubernetes_asyncio.config.kube_config import KubeConfigLoader, KubeConfigMerger

from dsctl.kube.credentials import (
    FILE_TOKEN_PERIOD,
    CachedCredentials,
    ExecTokenSource,
    FileTokenSource,
    OidcTokenSource,
    StaticTokenSource,
    Token,
    jwt_expiry,
)
from dsctl.kube.errors import ConfigError, KubeError, one_line

__all__ = ["LoadedConfig", "check_config", "load_config"]


@dataclass
class LoadedConfig:
    """A ready kubernetes_asyncio ``Configuration`` and where it came from (for logs)."""

    configuration: Any
    source: str
    """``kubeconfig`` or ``in-cluster``."""
    host: str
    files: tuple[str, ...] = ()
    context: str | None = None
    loader: Any = field(default=None, repr=False)
    credentials: CachedCredentials | None = field(default=None, repr=False)
    """The bearer token's cache, or None when the user authenticates otherwise."""


def _read_kubeconfig(path: Path) -> Mapping[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"kubeconfig {path}: file not found") from None
    except OSError as exc:
        raise ConfigError(f"kubeconfig {path}: cannot read: {exc.strerror or exc}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise ConfigError(f"kubeconfig {path}: malformed YAML{where}: {problem}") from None
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise ConfigError(f"kubeconfig {path}: not a kubeconfig (top level is not a mapping)")
    for key in ("clusters", "contexts", "users"):
        value = data.get(key)
        if value is not None and not isinstance(value, list):
            raise ConfigError(f"kubeconfig {path}: '{key}' must be a list")
        for entry in value or ():
            if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
                raise ConfigError(f"kubeconfig {path}: every entry of '{key}' needs a 'name'")
    return data


def _names(docs: list[Mapping[str, Any]], key: str) -> dict[str, Mapping[str, Any]]:
    found: dict[str, Mapping[str, Any]] = {}
    for doc in docs:
        for entry in doc.get(key) or ():
            found.setdefault(entry["name"], entry)  # first file wins, as in client-go
    return found


def _choose_context(
    docs: list[Mapping[str, Any]], files: tuple[str, ...], context: str | None
) -> str:
    where = ", ".join(files)
    contexts = _names(docs, "contexts")
    if context is None:
        context = next(
            (d["current-context"] for d in docs if isinstance(d.get("current-context"), str)
             and d["current-context"]),
            None,
        )
        if context is None:
            raise ConfigError(f"kubeconfig {where}: no current-context set; pass a context")
    if context not in contexts:
        available = ", ".join(sorted(contexts)) or "none"
        raise ConfigError(
            f"kubeconfig {where}: context {context!r} not found (available: {available})"
        )
    body = contexts[context].get("context")
    cluster_name = body.get("cluster") if isinstance(body, Mapping) else None
    clusters = _names(docs, "clusters")
    if not isinstance(cluster_name, str) or cluster_name not in clusters:
        raise ConfigError(
            f"kubeconfig {where}: context {context!r} names cluster {cluster_name!r}, "
            "which is not defined"
        )
    cluster = clusters[cluster_name].get("cluster")
    if not isinstance(cluster, Mapping) or not cluster.get("server"):
        raise ConfigError(f"kubeconfig {where}: cluster {cluster_name!r} has no server")
    return context


def _bearer(loader: Any) -> str | None:
    """The token kubernetes_asyncio loaded, without its ``Bearer`` prefix (None for Basic auth)."""
    loaded = getattr(loader, "token", None)
    if isinstance(loaded, str) and loaded.startswith("Bearer "):
        return loaded[len("Bearer "):].strip() or None
    return None


def _resolve_exec_command(loader: Any) -> None:
    """Make a relative exec ``command`` with a path separator relative to its kubeconfig's folder.

    client-go resolves such a command (``./bin/get-token``) against the directory of the
    kubeconfig that defines the user, and leaves bare names (``aws``) to ``PATH``;
    kubernetes_asyncio would run it relative to the working directory.
    """
    user = getattr(loader, "_user", None)
    if user is None or "exec" not in user or not user.path:
        return
    config = user["exec"].value
    command = config.get("command") if isinstance(config, dict) else None
    if isinstance(command, str) and os.sep in command and not os.path.isabs(command):
        config["command"] = os.path.normpath(os.path.join(os.path.dirname(user.path), command))


def _kubeconfig_credentials(loader: Any) -> CachedCredentials | None:
    """The credential cache for the context's user, seeded with what the load obtained."""
    user = getattr(loader, "_user", None)
    if user is None or loader.provider == "gcp":
        return None
    now = time.time()
    first = _bearer(loader)
    if loader.provider == "oidc":
        if first is None:
            return None
        return CachedCredentials(OidcTokenSource(loader), initial=Token(first, now, jwt_expiry(first)))
    if "exec" in user:
        if first is None:
            return None  # the plugin printed a client certificate: TLS, not a bearer token
        expiry = getattr(loader, "exec_plugin_expiry", None)
        initial = Token(first, now, None if expiry is None else expiry.timestamp())
        return CachedCredentials(ExecTokenSource(user["exec"].value), initial=initial)
    token_file = user.safe_get("tokenFile")
    static = user.safe_get("token")
    static = str(static) if static else None
    if token_file:
        base = os.path.dirname(user.path) if user.path else ""
        path = os.path.normpath(os.path.join(base, str(token_file)))
        return CachedCredentials(FileTokenSource(path, fallback=static))
    if static:
        return CachedCredentials(StaticTokenSource(static), initial=Token(static, now))
    return None


async def _load_kubeconfig(files: tuple[str, ...], context: str | None) -> LoadedConfig:
    docs = [_read_kubeconfig(Path(f)) for f in files]
    chosen = _choose_context(docs, files, context)
    configuration = Configuration()
    try:
        merged = KubeConfigMerger(os.pathsep.join(files))
        loader = KubeConfigLoader(
            config_dict=merged.config, config_base_path=None, active_context=chosen
        )
        _resolve_exec_command(loader)
        await loader.load_and_set(configuration)
    except ConfigException as exc:
        raise ConfigError(f"kubeconfig {', '.join(files)}: {one_line(exc)}") from None
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        # exec plugins that cannot start, unreadable certificate files, bad base64...
        raise ConfigError(
            f"kubeconfig {', '.join(files)} (context {chosen!r}): {one_line(exc)}"
        ) from None
    credentials = _kubeconfig_credentials(loader)
    if credentials is not None and not credentials.has_token:
        try:
            await credentials.token()  # a tokenFile that cannot be read fails the load, not a request
        except KubeError as exc:
            raise ConfigError(f"kubeconfig {', '.join(files)} (context {chosen!r}): {exc}") from None
    return LoadedConfig(
        configuration=configuration,
        source="kubeconfig",
        host=str(configuration.host),
        files=files,
        context=chosen,
        loader=loader,
        credentials=credentials,
    )


def _load_in_cluster(environ: Mapping[str, str], token_path: str, ca_path: str) -> LoadedConfig:
    configuration = Configuration()
    try:
        loader = InClusterConfigLoader(
            token_filename=token_path, cert_filename=ca_path, environ=dict(environ)
        )
        loader.load_and_set(configuration)
    except ConfigException as exc:
        raise ConfigError(f"in-cluster config: {one_line(exc)} ({token_path})") from None
    except OSError as exc:
        raise ConfigError(f"in-cluster config: {one_line(exc)}") from None
    # kubernetes_asyncio keeps the file's trailing newline in the token; client-go trims it.
    first = str(configuration.api_key.get("BearerToken", "")).removeprefix("Bearer ").strip()
    now = time.time()
    if not first:
        raise ConfigError(f"in-cluster config: the token file {token_path} holds only whitespace")
    credentials = CachedCredentials(
        FileTokenSource(token_path), initial=Token(first, now, now + FILE_TOKEN_PERIOD)
    )
    return LoadedConfig(
        configuration=configuration,
        source="in-cluster",
        host=str(configuration.host),
        loader=loader,
        credentials=credentials,
    )


def _existing_files(listed: str) -> tuple[str, ...]:
    """The files of a KUBECONFIG list that exist, in order, without duplicates."""
    paths = [os.path.expanduser(p) for p in listed.split(os.pathsep) if p]
    existing = tuple(dict.fromkeys(p for p in paths if os.path.exists(p)))
    if not existing:
        raise ConfigError(f"KUBECONFIG={listed}: none of the listed files exist")
    return existing


async def load_config(
    *,
    kubeconfig: str | os.PathLike[str] | None = None,
    context: str | None = None,
    environ: Mapping[str, str] | None = None,
    home: str | os.PathLike[str] | None = None,
    token_path: str = SERVICE_TOKEN_FILENAME,
    ca_path: str = SERVICE_CERT_FILENAME,
) -> LoadedConfig:
    """Find the configuration in client-go's order and load it (see the module docstring).

    ``environ``, ``home``, ``token_path`` and ``ca_path`` default to the real process values;
    tests pass their own. Raises :class:`ConfigError` with a one-line message.
    """
    files = _locate(kubeconfig=kubeconfig, context=context, environ=environ, home=home)
    if files is None:
        return _load_in_cluster(os.environ if environ is None else environ, token_path, ca_path)
    return await _load_kubeconfig(files, context)


def check_config(
    *,
    kubeconfig: str | os.PathLike[str] | None = None,
    context: str | None = None,
    environ: Mapping[str, str] | None = None,
    home: str | os.PathLike[str] | None = None,
    token_path: str = SERVICE_TOKEN_FILENAME,
) -> None:
    """What ``load_config`` checks in files only, with no plugin run and no request: the
    kubeconfig is found and readable and its context names a cluster with a server, or the
    in-cluster token is readable. Raises :class:`ConfigError` with the same one line, so a
    command can report a configuration mistake before it binds ports."""
    files = _locate(kubeconfig=kubeconfig, context=context, environ=environ, home=home)
    if files is None:
        if not os.access(token_path, os.R_OK):
            raise ConfigError(f"in-cluster config: cannot read the service-account token {token_path}")
        return
    _choose_context([_read_kubeconfig(Path(f)) for f in files], files, context)


def _locate(
    *,
    kubeconfig: str | os.PathLike[str] | None,
    context: str | None,
    environ: Mapping[str, str] | None,
    home: str | os.PathLike[str] | None,
) -> tuple[str, ...] | None:
    """The kubeconfig files to load, in client-go's order, or None for in-cluster."""
    env = os.environ if environ is None else environ
    if kubeconfig is not None:
        return (os.fspath(kubeconfig),)
    listed = env.get("KUBECONFIG", "")
    if listed:
        return _existing_files(listed)
    if env.get("KUBERNETES_SERVICE_HOST") and context is None:
        return None
    default = Path(home if home is not None else Path.home()) / ".kube" / "config"
    if default.exists():
        return (str(default),)
    if context is not None:
        raise ConfigError(f"context {context!r} given, but no kubeconfig found ({default})")
    raise ConfigError(
        "no Kubernetes configuration found: pass --kubeconfig, set KUBECONFIG, "
        f"run in a pod, or create {default}"
    )
