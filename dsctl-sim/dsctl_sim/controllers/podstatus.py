"""Pure builders for the pod status a simulated kubelet reports, and the knobs that steer it.

The kubelet loop decides *when* a pod starts, becomes Ready or fails; this module decides
*what* the status then looks like, in the shape a real kubelet writes (phase, conditions,
container statuses, IPs, start time). Builders keep every timestamp of a condition whose
status did not change, so rebuilding the status of an unchanged pod gives an equal dict and
the kubelet can skip the write.

Container statuses carry over from the previous status by container name: ``restartCount``
is kept, and a container whose spec image is no longer the image its status reports (an
in-place image update) is restarted: ``restartCount`` goes up by one, ``image`` follows the
spec, the running state starts anew, and the previous run shows as ``lastState.terminated``,
as a real kubelet reports a container it killed to change its image.
"""

from __future__ import annotations

import functools
import hashlib
import ipaddress
import math
from collections.abc import Mapping
from typing import Any

from dsctl_api.timefmt import format_rfc3339

__all__ = [
    "ANN_FAIL_AFTER",
    "ANN_NEVER_READY",
    "ANN_NODE_STARTUP",
    "ANN_STARTUP",
    "annotation_float",
    "changed_images",
    "failed_status",
    "node_ip",
    "node_ready_status",
    "pod_ip",
    "running_status",
]

ANN_STARTUP = "sim.dsctl.io/startup-seconds"
"""Pod annotation: seconds from start to Ready (float)."""
ANN_NEVER_READY = "sim.dsctl.io/never-ready"
"""Pod annotation: ``"true"`` keeps the pod Running but never Ready."""
ANN_FAIL_AFTER = "sim.dsctl.io/fail-after-seconds"
"""Pod annotation: seconds from start until the pod's phase becomes Failed (float)."""
ANN_NODE_STARTUP = "sim.dsctl.io/pod-startup-seconds"
"""Node annotation: the default startup delay for pods on that node (float)."""

_CONDITION_ORDER = (
    "PodReadyToStartContainers",
    "Initialized",
    "Ready",
    "ContainersReady",
    "PodScheduled",
)


def annotation_float(obj: Mapping[str, Any] | None, name: str) -> float | None:
    """A non-negative float annotation, or None when absent or unparseable."""
    if obj is None:
        return None
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    raw = annotations.get(name)
    if raw is None:
        return None
    try:
        value = float(raw)
    except (TypeError, ValueError):
        return None
    if math.isnan(value) or value < 0:  # ignore a knob that makes no sense
        return None
    return value


def node_ready_status(node: Mapping[str, Any]) -> str | None:
    """The node's Ready condition status (``True``/``False``/``Unknown``), None if it has none."""
    for condition in (node.get("status") or {}).get("conditions") or []:
        if isinstance(condition, Mapping) and condition.get("type") == "Ready":
            status = condition.get("status")
            return status if isinstance(status, str) else "Unknown"
    return None


def node_ip(node: Mapping[str, Any]) -> str:
    """The node's InternalIP, or a stable made-up address derived from its name."""
    for address in (node.get("status") or {}).get("addresses") or []:
        if isinstance(address, Mapping) and address.get("type") == "InternalIP":
            value = address.get("address")
            if isinstance(value, str) and value:
                return value
    name = str((node.get("metadata") or {}).get("name") or "")
    digest = hashlib.blake2s(name.encode(), digest_size=2).digest()
    return f"172.16.{digest[0]}.{digest[1] or 1}"


# One entry per node's podCIDR: sized for the largest clusters, so a pod start never parses one.
@functools.lru_cache(maxsize=1 << 17)
def _pod_network(cidr: str) -> tuple[int, int, int] | None:
    """(first address as an int, number of addresses, IP version) of a CIDR with room for pods."""
    try:
        network = ipaddress.ip_network(cidr, strict=False)
    except ValueError:
        return None
    if network.num_addresses < 4:
        return None
    return int(network.network_address), network.num_addresses, network.version


def pod_ip(pod_cidr: str | None, serial: int) -> str:
    """The ``serial``-th pod address: inside the node's ``podCIDR`` when it has a usable one
    (skipping the network and first address), else in 100.64.0.0/10, clear of node IPs."""
    network = _pod_network(pod_cidr) if pod_cidr else None
    if network is not None:
        first, size, version = network
        n = first + 2 + serial % (size - 3)
        if version == 4:
            return f"{n >> 24}.{(n >> 16) & 255}.{(n >> 8) & 255}.{n & 255}"
        return str(ipaddress.IPv6Address(n))
    n = serial % ((1 << 22) - 2) + 1
    return f"100.{64 + (n >> 16)}.{(n >> 8) & 255}.{n & 255}"


@functools.lru_cache(maxsize=8)
def _second_stamp(second: int) -> str:
    return format_rfc3339(second)


def _stamp(epoch: float) -> str:
    """``format_rfc3339`` that hands out one shared string per second.

    Statuses written in the same second (thousands, in a burst) then share their timestamp
    strings instead of each holding its own copy: a few hundred bytes per pod at 150,000 pods.
    """
    return _second_stamp(int(epoch))


def _condition(
    old: Mapping[str, Mapping[str, Any]],
    kind: str,
    status: str,
    stamp: str,
    *,
    reason: str | None = None,
    message: str | None = None,
) -> dict[str, Any]:
    """One condition; ``stamp`` is the transition time used only if the status changes."""
    previous = old.get(kind)
    if previous is not None and previous.get("status") == status:
        stamp = previous.get("lastTransitionTime") or stamp
    condition: dict[str, Any] = {
        "type": kind,
        "status": status,
        "lastProbeTime": None,
        "lastTransitionTime": stamp,
    }
    if reason:
        condition["reason"] = reason
    if message:
        condition["message"] = message
    return condition


def _old_conditions(status: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    # Stored objects are plain JSON dicts; ``dict`` checks are much cheaper than ``Mapping``.
    return {
        c["type"]: c
        for c in status.get("conditions") or []
        if isinstance(c, dict) and isinstance(c.get("type"), str)
    }


def _merge_conditions(
    old: Mapping[str, Mapping[str, Any]], new: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """New conditions in kubelet order, keeping any foreign condition types the pod had."""
    by_type = {c["type"]: c for c in new}
    for kind, condition in old.items():
        by_type.setdefault(kind, dict(condition))
    ordered = [by_type.pop(kind) for kind in _CONDITION_ORDER if kind in by_type]
    return ordered + list(by_type.values())


def _containers(pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    spec = pod.get("spec") or {}
    return [c for c in spec.get("containers") or [] if isinstance(c, dict)]


def _container_id(uid: str, name: str, restarts: int = 0) -> str:
    """A stable id per container run: each restart is a new container, with a new id."""
    seed = f"{uid}/{name}" if restarts == 0 else f"{uid}/{name}/{restarts}"
    digest = hashlib.blake2s(seed.encode(), digest_size=16).hexdigest()
    return f"sim://{digest}"


def _old_statuses(status: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {
        c["name"]: c
        for c in status.get("containerStatuses") or []
        if isinstance(c, dict) and isinstance(c.get("name"), str)
    }


def changed_images(pod: Mapping[str, Any]) -> list[str]:
    """Containers whose spec image differs from the image their current status reports."""
    old = _old_statuses(pod.get("status") or {})
    changed = []
    for container in _containers(pod):
        name = str(container.get("name") or "")
        previous = old.get(name)
        if previous is not None and previous.get("image") != (container.get("image") or ""):
            changed.append(name)
    return changed


def _restart_count(previous: Mapping[str, Any] | None) -> int:
    count = (previous or {}).get("restartCount")
    return count if isinstance(count, int) and not isinstance(count, bool) else 0


def running_status(
    pod: Mapping[str, Any],
    *,
    now: float,
    started_at: float,
    ready: bool,
    host_ip: str,
    ip: str,
    not_ready_reason: str = "ContainersNotReady",
) -> dict[str, Any]:
    """Status of a started pod: phase Running, containers running, Ready as given."""
    old = pod.get("status") or {}
    old_conditions = _old_conditions(old)
    uid = str((pod.get("metadata") or {}).get("uid") or "")
    start = old.get("startTime") or _stamp(started_at)
    stamp = _stamp(now)
    names = [str(c.get("name") or "") for c in _containers(pod)]
    unready = "containers with unready status: [" + " ".join(names) + "]"
    new_conditions = [
        _condition(old_conditions, "PodReadyToStartContainers", "True", stamp),
        _condition(old_conditions, "Initialized", "True", stamp),
        _condition(
            old_conditions,
            "Ready",
            "True" if ready else "False",
            stamp,
            reason=None if ready else not_ready_reason,
            message=None if ready else unready,
        ),
        _condition(
            old_conditions,
            "ContainersReady",
            "True" if ready else "False",
            stamp,
            reason=None if ready else "ContainersNotReady",
            message=None if ready else unready,
        ),
        _condition(old_conditions, "PodScheduled", "True", stamp),
    ]
    statuses = []
    old_statuses = _old_statuses(old)
    for container in _containers(pod):
        name = str(container.get("name") or "")
        image = container.get("image") or ""
        previous = old_statuses.get(name)
        restarts = _restart_count(previous)
        running = {"startedAt": start}
        last_state: dict[str, Any] = {}
        if previous is not None:
            running = ((previous.get("state") or {}).get("running")) or running
            last_state = previous.get("lastState") or {}
            if previous.get("image") != image:
                restarts += 1
                last_state = {
                    "terminated": {
                        "exitCode": 0,
                        "reason": "Completed",
                        "startedAt": running.get("startedAt") or start,
                        "finishedAt": stamp,
                        "containerID": _container_id(uid, name, restarts - 1),
                    }
                }
                running = {"startedAt": stamp}
        statuses.append(
            {
                "name": name,
                "image": image,
                "imageID": "",
                "containerID": _container_id(uid, name, restarts),
                "ready": ready,
                "started": True,
                "restartCount": restarts,
                "state": {"running": running},
                "lastState": last_state,
            }
        )
    status = dict(old)
    status.update(
        {
            "phase": "Running",
            "conditions": _merge_conditions(old_conditions, new_conditions),
            "hostIP": host_ip,
            "hostIPs": [{"ip": host_ip}],
            "podIP": ip,
            "podIPs": [{"ip": ip}],
            "startTime": start,
            "containerStatuses": statuses,
            "qosClass": old.get("qosClass") or "BestEffort",
        }
    )
    return status


def failed_status(pod: Mapping[str, Any], *, now: float) -> dict[str, Any]:
    """Status of a pod whose containers exited with an error: phase Failed, not Ready."""
    old = pod.get("status") or {}
    old_conditions = _old_conditions(old)
    uid = str((pod.get("metadata") or {}).get("uid") or "")
    finished = stamp = _stamp(now)
    start = old.get("startTime") or stamp
    new_conditions = [
        _condition(old_conditions, "Ready", "False", stamp, reason="PodFailed"),
        _condition(old_conditions, "ContainersReady", "False", stamp, reason="PodFailed"),
    ]
    statuses = []
    old_statuses = _old_statuses(old)
    for container in _containers(pod):
        name = str(container.get("name") or "")
        restarts = _restart_count(old_statuses.get(name))
        statuses.append(
            {
                "name": name,
                "image": container.get("image") or "",
                "imageID": "",
                "containerID": _container_id(uid, name, restarts),
                "ready": False,
                "started": False,
                "restartCount": restarts,
                "state": {
                    "terminated": {
                        "exitCode": 1,
                        "reason": "Error",
                        "startedAt": start,
                        "finishedAt": finished,
                        "containerID": _container_id(uid, name, restarts),
                    }
                },
                "lastState": {},
            }
        )
    status = dict(old)
    status.update(
        {
            "phase": "Failed",
            "conditions": _merge_conditions(old_conditions, new_conditions),
            "startTime": start,
            "containerStatuses": statuses,
        }
    )
    return status
