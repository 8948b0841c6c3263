"""Settings for ``dsctl run``: one dataclass is the single source of flags, env vars and docs.

Every field carries its help text and default. ``add_arguments`` turns the fields into
``--kebab-case`` flags, each with a ``DSCTL_SNAKE_CASE`` environment twin that supplies the
default, and ``settings_table`` renders the configuration table of ``docs/reference/cli.md``
from the same data.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from dataclasses import MISSING, dataclass, field, fields
from typing import Any

from dsctl.daemonset.readinessgate import DEFAULT_READINESS_TAINT, MODES, GateSettings, parse_readiness_taint
from dsctl_api.durations import parse_duration

__all__ = ["ConfigError", "Settings", "add_arguments", "settings_from_args", "settings_table"]

RESOURCE_APPS = "apps/v1"
RESOURCE_CRD = "dsctl.io/v1"


class ConfigError(ValueError):
    """A setting with a value that cannot work; the message names the flag."""


def _opt(default: Any, doc: str, *, choices: tuple[str, ...] | None = None) -> Any:
    return field(default=default, metadata={"doc": doc, "choices": choices})


@dataclass(frozen=True)
class Settings:
    """Everything ``dsctl run`` can be told. Defaults are the production defaults."""

    kubeconfig: str = _opt("", "Path to a kubeconfig. Empty: $KUBECONFIG, in-cluster, ~/.kube/config.")
    context: str = _opt("", "kubeconfig context to use. Empty: the current context.")
    namespace: str = _opt("", "Watch and manage DaemonSets in this namespace only. Empty: all.")
    workers: int = _opt(8, "Concurrent sync workers (kube-controller-manager uses 2).")
    kube_api_qps: float = _opt(100.0, "Client-side request rate limit, requests per second.")
    kube_api_burst: int = _opt(200, "Client-side burst above the QPS limit.")
    burst_replicas: int = _opt(250, "Most pod creates or deletes one sync may issue.")
    list_page_size: int = _opt(500, "Objects per page when an informer lists (client-go's reflector uses 500).")
    metrics_bind_address: str = _opt(":8080", "host:port for /metrics. '0' disables it.")
    health_probe_bind_address: str = _opt(":8081", "host:port for /healthz and /readyz. '0' disables.")
    leader_elect: bool = _opt(False, "Run leader election; only the leader writes.")
    leader_elect_namespace: str = _opt("kube-system", "Namespace of the leader-election Lease.")
    leader_elect_id: str = _opt("dsctl", "Name of the leader-election Lease.")
    leader_elect_lease_duration: float = _opt(15.0, "Seconds a standby waits before taking over.")
    leader_elect_renew_deadline: float = _opt(10.0, "Seconds of failed renewals before the leader stops.")
    leader_elect_retry_period: float = _opt(2.0, "Seconds between leader-election attempts.")
    log_format: str = _opt("auto", "Log format: json, console, or auto (console on a TTY).",
                           choices=("auto", "json", "console"))
    log_level: str = _opt("info", "Log level.", choices=("debug", "info", "warning", "error"))
    direct_binding: bool = _opt(False, "Set spec.nodeName on new pods instead of relying on the scheduler.")
    resource: str = _opt(RESOURCE_APPS, "DaemonSet kind to reconcile: apps/v1, or the CRD dsctl.io/v1.",
                         choices=(RESOURCE_APPS, RESOURCE_CRD))
    shutdown_timeout: float = _opt(20.0, "Seconds to let in-flight syncs finish on SIGTERM.")
    failed_pod_backoff_max: float = _opt(900.0, "Ceiling of the per-node backoff for failed pods, seconds.")
    stuck_sync_seconds: float = _opt(300.0, "A sync running longer than this fails /healthz.")
    node_join_priority: bool = _opt(True, "Sync the DaemonSets a new node wants by their pods' priority, "
                                          "not FIFO.")
    incremental_planning: bool = _opt(True, "Re-plan only the nodes that changed since a DaemonSet's last "
                                            "sync, with a full recount every five minutes.")
    readiness_taint: str = _opt(DEFAULT_READINESS_TAINT, "The node readiness gate's taint, key[:effect] (effect "
                                "NoSchedule unless given). Nodes register with it; every daemon pod tolerates "
                                "it; dsctl removes it once the gating DaemonSets' pods are available. Empty: no "
                                "gate.")
    readiness_taint_mode: str = _opt(MODES[0], "bootstrap: the readiness taint is only removed; continuous: it is "
                                     "also added back while a gating pod stays not Ready.", choices=MODES)
    readiness_timeout: str = _opt("10m", "A node still gated after this long (a Go duration: 10m, 90s) gets a "
                                  "Warning event naming the DaemonSets not ready; the taint stays.")
    readiness_retaint_seconds: float = _opt(30.0, "Continuous mode: seconds a gating pod may be not Ready before "
                                          "the readiness taint is added back.")

    def validate(self) -> Settings:
        """Return self, or raise ``ConfigError`` naming the first bad setting."""
        for f in fields(self):
            choices = f.metadata["choices"]
            if choices and getattr(self, f.name) not in choices:
                flag = "--" + f.name.replace("_", "-")
                raise ConfigError(f"{flag} must be one of {', '.join(choices)}, not {getattr(self, f.name)!r}")
        if self.workers < 1:
            raise ConfigError("--workers must be at least 1")
        if self.kube_api_qps <= 0 or self.kube_api_burst < 1:
            raise ConfigError("--kube-api-qps must be > 0 and --kube-api-burst >= 1")
        if self.burst_replicas < 1:
            raise ConfigError("--burst-replicas must be at least 1")
        if self.list_page_size < 1:
            raise ConfigError(f"--list-page-size must be at least 1, not {self.list_page_size}")
        lease, renew, retry = (
            self.leader_elect_lease_duration,
            self.leader_elect_renew_deadline,
            self.leader_elect_retry_period,
        )
        if self.leader_elect and not lease > renew > retry > 0:
            raise ConfigError(
                "leader election needs lease-duration > renew-deadline > retry-period > 0"
            )
        if self.stuck_sync_seconds <= 0:
            raise ConfigError("--stuck-sync-seconds must be > 0")
        if self.shutdown_timeout <= 0:
            raise ConfigError("--shutdown-timeout must be > 0")
        self._gate_settings()
        from dsctl.app.http import parse_bind_address

        for name in ("metrics_bind_address", "health_probe_bind_address"):
            try:
                parse_bind_address(getattr(self, name))
            except ValueError as exc:
                raise ConfigError(f"--{name.replace('_', '-')}: {exc}") from None
        return self


    @property
    def readiness_gate(self) -> GateSettings | None:
        """The node readiness gate's settings; None when ``--readiness-taint`` is empty (no gate)."""
        return self._gate_settings()

    def _gate_settings(self) -> GateSettings | None:
        """``readiness_gate``; raises ``ConfigError`` naming the first ``--readiness-*`` flag that cannot be read."""
        try:
            taint = parse_readiness_taint(self.readiness_taint)
        except ValueError as exc:
            raise ConfigError(f"--readiness-taint: {exc}") from None
        if taint is None:
            return None
        try:
            timeout = parse_duration(self.readiness_timeout)
        except ValueError as exc:
            raise ConfigError(f"--readiness-timeout: {exc}") from None
        if timeout <= 0:
            raise ConfigError(f"--readiness-timeout must be longer than 0, not {self.readiness_timeout!r}")
        if self.readiness_retaint_seconds <= 0:
            raise ConfigError(f"--readiness-retaint-seconds must be > 0, not {self.readiness_retaint_seconds}")
        return GateSettings(taint=taint, mode=self.readiness_taint_mode, timeout=timeout,
                            retaint_seconds=self.readiness_retaint_seconds)


def _env_name(name: str) -> str:
    return "DSCTL_" + name.upper()


def _parse_bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off", ""):
        return False
    raise ValueError("not a boolean (use true or false)")


_ENV_ERRORS = "_dsctl_env_errors"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add one flag per setting; an env var ``DSCTL_<NAME>`` overrides the built-in default.

    A malformed env value does not fail here (that would break ``--help`` too): it is kept on
    the namespace and reported by ``settings_from_args``, unless the flag itself is given.
    """
    env_errors: dict[str, str] = {}
    for f in fields(Settings):
        flag = "--" + f.name.replace("_", "-")
        default = f.default if f.default is not MISSING else None
        env_name = _env_name(f.name)
        env = os.environ.get(env_name)
        help_text = f"{f.metadata['doc']} [env {env_name}]"
        choices = f.metadata["choices"]
        if env is not None:
            try:
                default = _parse_bool(env) if f.type in (bool, "bool") else _KINDS.get(str(f.type), str)(env)
            except ValueError as exc:
                env_errors[f.name] = f"{env_name}={env!r}: {exc}"
            else:
                if choices and default not in choices:
                    env_errors[f.name] = f"{env_name}={env!r}: must be one of {', '.join(choices)}"
        if f.type in (bool, "bool"):
            parser.add_argument(flag, dest=f.name, default=default, help=help_text,
                                action=argparse.BooleanOptionalAction)
            continue
        # With choices, argparse shows them as the metavar: {apps/v1,dsctl.io/v1}.
        parser.add_argument(flag, dest=f.name, type=_KINDS.get(str(f.type), str), default=default,
                            help=help_text, choices=choices, metavar=None if choices else f.name.upper())
    parser.set_defaults(**{_ENV_ERRORS: env_errors})


_KINDS: dict[str, Any] = {"int": int, "float": float}


def settings_from_args(args: argparse.Namespace, argv: Sequence[str] = ()) -> Settings:
    """Build validated settings from parsed arguments; raises ``ConfigError`` naming the setting.

    ``argv`` lets a bad env value be ignored when its flag was given explicitly.
    """
    for name, message in getattr(args, _ENV_ERRORS, {}).items():
        flag = "--" + name.replace("_", "-")
        if not any(a == flag or a.startswith(flag + "=") for a in argv):
            raise ConfigError(message)
    values = {f.name: getattr(args, f.name) for f in fields(Settings)}
    return Settings(**values).validate()


def settings_table() -> str:
    """The configuration table of the command-line reference, rendered from the dataclass."""
    lines = ["| flag | env | default | meaning |", "|---|---|---|---|"]
    for f in fields(Settings):
        flag = "--" + f.name.replace("_", "-")
        env, doc = _env_name(f.name), f.metadata["doc"]
        lines.append(f"| `{flag}` | `{env}` | `{f.default!r}` | {doc} |")
    return "\n".join(lines)
