"""Table columns and row cells for the built-in kinds, as ``kubectl get`` prints them.

kube-apiserver renders ``kubectl get`` output server side: each kind has fixed column
definitions (wide-only ones have ``priority: 1``) and a function from one object to its cells.
The rules reproduced here are the visible ones: a pod's STATUS is the most telling container
reason (``CrashLoopBackOff``, ``Init:0/1``, ``Terminating``), a node's is ``Ready``/``NotReady``
plus ``SchedulingDisabled`` when cordoned, ages are compact durations (``5m``, ``3d4h``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from dsctl_api.timefmt import parse_rfc3339

__all__ = ["BUILTIN_PRINTERS", "Printer", "age", "human_duration"]

Obj = Mapping[str, Any]
Row = list[Any]
Column = dict[str, Any]
Printer = tuple[list[Column], Callable[[Obj, float], Row]]

_NONE = "<none>"


def human_duration(seconds: float) -> str:
    """kubectl's compact duration: ``42s``, ``3m12s``, ``25m``, ``5h3m``, ``3d4h``, ``400d``, ``2y3d``."""
    whole = int(seconds)
    if whole < -1:
        return "<invalid>"
    if whole < 0:
        return "0s"
    if whole < 120:
        return f"{whole}s"
    minutes = whole // 60
    if minutes < 10:
        rest = whole % 60
        return f"{minutes}m{rest}s" if rest else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = whole // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h{rest}m" if rest else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    days = hours // 24
    if hours < 24 * 8:
        rest = hours % 24
        return f"{days}d{rest}h" if rest else f"{days}d"
    if hours < 24 * 365 * 2:
        return f"{days}d"
    years = days // 365
    if hours < 24 * 365 * 8:
        rest = days % 365
        return f"{years}y{rest}d" if rest else f"{years}y"
    return f"{years}y"


def age(timestamp: Any, now: float) -> str:
    """Time since an RFC 3339 timestamp, or ``<unknown>`` when absent or unparsable."""
    if not timestamp:
        return "<unknown>"
    try:
        return human_duration(now - parse_rfc3339(str(timestamp)))
    except ValueError:
        return "<unknown>"


def col(name: str, kind: str = "string", *, priority: int = 0, fmt: str = "", description: str = "") -> Column:
    """One ``TableColumnDefinition``."""
    return {"name": name, "type": kind, "format": fmt, "description": description or name, "priority": priority}


NAME = col("Name", fmt="name", description="Name must be unique within a namespace.")
AGE = col("Age", description="Time since the object was created.")


def _meta(obj: Obj) -> Obj:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _part(obj: Obj, field: str) -> Obj:
    value = obj.get(field)
    return value if isinstance(value, Mapping) else {}


def _created(obj: Obj, now: float) -> str:
    return age(_meta(obj).get("creationTimestamp"), now)


# -- pods ------------------------------------------------------------------------------

POD_COLUMNS = [
    NAME,
    col("Ready", description="Ready containers out of all containers."),
    col("Status", description="The aggregate pod status."),
    col("Restarts", description="Container restarts, and how long ago the last one was."),
    AGE,
    col("IP", priority=1, description="The pod's IP address."),
    col("Node", priority=1, description="The node the pod is bound to."),
    col("Nominated Node", priority=1, description="The node the scheduler nominated for preemption."),
    col("Readiness Gates", priority=1, description="Readiness gates that are satisfied."),
]


def _terminated_reason(state: Obj, prefix: str = "") -> str:
    reason = state.get("reason")
    if reason:
        return f"{prefix}{reason}"
    if state.get("signal"):
        return f"{prefix}Signal:{state['signal']}"
    return f"{prefix}ExitCode:{state.get('exitCode', 0)}"


def _last_restart(statuses: list[Any]) -> float:
    latest = 0.0
    for cs in statuses:
        finished = _part(_part(cs, "lastState"), "terminated").get("finishedAt")
        if finished:
            try:
                latest = max(latest, parse_rfc3339(str(finished)))
            except ValueError:
                continue
    return latest


def _init_reason(spec: Obj, status: Obj) -> tuple[str | None, int]:
    """The ``Init:...`` reason while init containers run (None once done), and their restarts."""
    init_specs = {str(c.get("name")): c for c in spec.get("initContainers") or [] if isinstance(c, Mapping)}
    statuses = [s for s in status.get("initContainerStatuses") or [] if isinstance(s, Mapping)]
    restarts = 0
    for i, cs in enumerate(statuses):
        restarts += int(cs.get("restartCount") or 0)
        state = _part(cs, "state")
        terminated, waiting = _part(state, "terminated"), _part(state, "waiting")
        sidecar = _part(init_specs, str(cs.get("name"))).get("restartPolicy") == "Always"
        if terminated and terminated.get("exitCode", 0) == 0:
            continue
        if sidecar and state.get("running") is not None and cs.get("started"):
            continue
        if terminated:
            return _terminated_reason(terminated, "Init:"), restarts
        if waiting.get("reason") and waiting.get("reason") != "PodInitializing":
            return f"Init:{waiting['reason']}", restarts
        return f"Init:{i}/{len(init_specs)}", restarts
    return None, restarts


def _condition_true(status: Obj, kind: str) -> bool:
    return any(
        isinstance(c, Mapping) and c.get("type") == kind and c.get("status") == "True"
        for c in status.get("conditions") or []
    )


def _pod_row(pod: Obj, now: float) -> Row:
    spec, status, meta = _part(pod, "spec"), _part(pod, "status"), _meta(pod)
    containers = [c for c in spec.get("containers") or [] if isinstance(c, Mapping)]
    reason = str(status.get("reason") or status.get("phase") or "")
    for cond in status.get("conditions") or []:
        if isinstance(cond, Mapping) and cond.get("type") == "PodScheduled" and cond.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"
    init_reason, restarts = _init_reason(spec, status)
    ready = 0
    statuses = [s for s in status.get("containerStatuses") or [] if isinstance(s, Mapping)]
    if init_reason is not None and not _condition_true(status, "Initialized"):
        reason = init_reason
    else:
        restarts, running = 0, False
        for cs in reversed(statuses):
            restarts += int(cs.get("restartCount") or 0)
            state = _part(cs, "state")
            waiting, terminated = _part(state, "waiting"), _part(state, "terminated")
            if waiting.get("reason"):
                reason = str(waiting["reason"])
            elif terminated.get("reason"):
                reason = str(terminated["reason"])
            elif terminated:
                reason = _terminated_reason(terminated)
            elif state.get("running") is not None and cs.get("ready"):
                running = True
                ready += 1
        if reason == "Completed" and running:
            reason = "Running" if _condition_true(status, "Ready") else "NotReady"
    if meta.get("deletionTimestamp"):
        if status.get("reason") == "NodeLost":
            reason = "Unknown"
        elif status.get("phase") not in ("Succeeded", "Failed"):
            reason = "Terminating"
    restarts_cell = str(restarts)
    last = _last_restart(statuses)
    if restarts and last:
        restarts_cell = f"{restarts} ({human_duration(now - last)} ago)"
    ips = status.get("podIPs") or []
    ip = (ips[0].get("ip") if ips and isinstance(ips[0], Mapping) else None) or status.get("podIP") or _NONE
    gates = spec.get("readinessGates") or []
    gate_cell = _NONE
    if gates:
        wanted = {g.get("conditionType") for g in gates if isinstance(g, Mapping)}
        met = sum(1 for c in status.get("conditions") or [] if c.get("type") in wanted and c.get("status") == "True")
        gate_cell = f"{met}/{len(gates)}"
    return [
        meta.get("name", ""),
        f"{ready}/{len(containers)}",
        reason,
        restarts_cell,
        _created(pod, now),
        ip,
        spec.get("nodeName") or _NONE,
        status.get("nominatedNodeName") or _NONE,
        gate_cell,
    ]


# -- nodes -----------------------------------------------------------------------------

NODE_COLUMNS = [
    NAME,
    col("Status", description="Ready or NotReady, plus SchedulingDisabled when cordoned."),
    col("Roles", description="Roles from node-role.kubernetes.io/<role> labels."),
    AGE,
    col("Version", description="Kubelet version reported by the node."),
    col("Internal-IP", priority=1, description="The node's internal IP."),
    col("External-IP", priority=1, description="The node's external IP."),
    col("OS-Image", priority=1, description="Operating system image."),
    col("Kernel-Version", priority=1, description="Kernel version."),
    col("Container-Runtime", priority=1, description="Container runtime and version."),
]


def _address(status: Obj, kind: str) -> str:
    for address in status.get("addresses") or []:
        if isinstance(address, Mapping) and address.get("type") == kind:
            return str(address.get("address") or _NONE)
    return _NONE


def _node_row(node: Obj, now: float) -> Row:
    spec, status, meta = _part(node, "spec"), _part(node, "status"), _meta(node)
    states = []
    for cond in status.get("conditions") or []:
        if isinstance(cond, Mapping) and cond.get("type") == "Ready":
            states = ["Ready" if cond.get("status") == "True" else "NotReady"]
    if not states:
        states = ["Unknown"]
    if spec.get("unschedulable"):
        states.append("SchedulingDisabled")
    roles = set()
    for key, value in (_part(meta, "labels")).items():
        if key.startswith("node-role.kubernetes.io/") and key.split("/", 1)[1]:
            roles.add(key.split("/", 1)[1])
        elif key == "kubernetes.io/role" and value:
            roles.add(str(value))
    info = _part(status, "nodeInfo")
    return [
        meta.get("name", ""),
        ",".join(states),
        ",".join(sorted(roles)) or _NONE,
        _created(node, now),
        info.get("kubeletVersion", ""),
        _address(status, "InternalIP"),
        _address(status, "ExternalIP"),
        info.get("osImage") or "<unknown>",
        info.get("kernelVersion") or "<unknown>",
        info.get("containerRuntimeVersion") or "<unknown>",
    ]


# -- daemonsets and revisions ----------------------------------------------------------

DAEMONSET_COLUMNS = [
    NAME,
    col("Desired", "integer", description="Nodes that should run the daemon pod."),
    col("Current", "integer", description="Nodes running at least one daemon pod."),
    col("Ready", "integer", description="Nodes whose daemon pod is ready."),
    col("Up-to-date", "integer", description="Nodes running the updated daemon pod."),
    col("Available", "integer", description="Nodes whose daemon pod is available."),
    col("Node Selector", description="The pod template's nodeSelector."),
    AGE,
    col("Containers", priority=1, description="Container names in the pod template."),
    col("Images", priority=1, description="Container images in the pod template."),
    col("Selector", priority=1, description="The label selector for the daemon pods."),
]


def format_labels(labels: Any) -> str:
    """``k=v,k2=v2`` sorted by key, or ``<none>``."""
    if not isinstance(labels, Mapping) or not labels:
        return _NONE
    return ",".join(f"{k}={labels[k]}" for k in sorted(labels))


def format_label_selector(selector: Any) -> str:
    """A ``metav1.LabelSelector`` in string form (``app=x,tier in (a,b)``), or ``<none>``."""
    if not isinstance(selector, Mapping):
        return _NONE
    terms: list[tuple[str, str]] = []
    for key, value in (_part(selector, "matchLabels")).items():
        terms.append((str(key), f"{key}={value}"))
    for expr in selector.get("matchExpressions") or []:
        key, op = str(expr.get("key", "")), expr.get("operator")
        values = ",".join(sorted(str(v) for v in expr.get("values") or []))
        text = {
            "In": f"{key} in ({values})",
            "NotIn": f"{key} notin ({values})",
            "Exists": key,
            "DoesNotExist": f"!{key}",
        }.get(str(op), "<error>")
        terms.append((key, text))
    return ",".join(t for _, t in sorted(terms)) or _NONE


def _daemonset_row(ds: Obj, now: float) -> Row:
    spec, status = _part(ds, "spec"), _part(ds, "status")
    pod_spec = _part(_part(spec, "template"), "spec")
    containers = [c for c in pod_spec.get("containers") or [] if isinstance(c, Mapping)]
    return [
        _meta(ds).get("name", ""),
        int(status.get("desiredNumberScheduled") or 0),
        int(status.get("currentNumberScheduled") or 0),
        int(status.get("numberReady") or 0),
        int(status.get("updatedNumberScheduled") or 0),
        int(status.get("numberAvailable") or 0),
        format_labels(pod_spec.get("nodeSelector")),
        _created(ds, now),
        ",".join(str(c.get("name", "")) for c in containers),
        ",".join(str(c.get("image", "")) for c in containers),
        format_label_selector(spec.get("selector")),
    ]


REVISION_COLUMNS = [
    NAME,
    col("Controller", description="The controller that owns this revision."),
    col("Revision", "integer", description="The revision number."),
    AGE,
]


def _revision_row(rev: Obj, now: float) -> Row:
    controller = _NONE
    for ref in _meta(rev).get("ownerReferences") or []:
        if isinstance(ref, Mapping) and ref.get("controller") is True:
            group = str(ref.get("apiVersion", "")).rpartition("/")[0]
            kind = str(ref.get("kind", "")).lower() + (f".{group}" if group else "")
            controller = f"{kind}/{ref.get('name', '')}"
    return [_meta(rev).get("name", ""), controller, int(rev.get("revision") or 0), _created(rev, now)]


# -- namespaces, leases, CRDs ----------------------------------------------------------

NAMESPACE_COLUMNS = [NAME, col("Status", description="The namespace phase."), AGE]
LEASE_COLUMNS = [NAME, col("Holder", description="The current holder of the lease."), AGE]
CRD_COLUMNS = [NAME, col("Created At", "date", description="When the definition was created.")]


def _namespace_row(ns: Obj, now: float) -> Row:
    return [_meta(ns).get("name", ""), _part(ns, "status").get("phase", ""), _created(ns, now)]


def _lease_row(lease: Obj, now: float) -> Row:
    return [_meta(lease).get("name", ""), _part(lease, "spec").get("holderIdentity") or "", _created(lease, now)]


PDB_COLUMNS = [
    NAME,
    col("Min Available", description="The minimum number of pods that must be available."),
    col("Max Unavailable", description="The maximum number of pods that may be unavailable."),
    col("Allowed Disruptions", "integer", description="Calculated number of pods that may be disrupted now."),
    AGE,
]


def _pdb_row(pdb: Obj, now: float) -> Row:
    spec = _part(pdb, "spec")
    shown = [_NONE if spec.get(k) is None else str(spec.get(k)) for k in ("minAvailable", "maxUnavailable")]
    return [_meta(pdb).get("name", ""), *shown, int(_part(pdb, "status").get("disruptionsAllowed") or 0),
            _created(pdb, now)]


PRIORITY_CLASS_COLUMNS = [
    NAME,
    col("Value", "integer", description="The integer value of this priority class."),
    col("Global-Default", "boolean", description="Whether this class is the default for pods without one."),
    AGE,
    col("PreemptionPolicy", description="The policy for preempting pods with lower priority.", priority=1),
]


def _priority_class_row(pc: Obj, now: float) -> Row:
    return [_meta(pc).get("name", ""), pc.get("value", 0), bool(pc.get("globalDefault")), _created(pc, now),
            pc.get("preemptionPolicy") or ""]


def _crd_row(crd: Obj, now: float) -> Row:
    return [_meta(crd).get("name", ""), _meta(crd).get("creationTimestamp", "")]


BUILTIN_PRINTERS: dict[tuple[str, str], Printer] = {
    ("", "pods"): (POD_COLUMNS, _pod_row),
    ("", "nodes"): (NODE_COLUMNS, _node_row),
    ("", "namespaces"): (NAMESPACE_COLUMNS, _namespace_row),
    ("apps", "daemonsets"): (DAEMONSET_COLUMNS, _daemonset_row),
    ("apps", "controllerrevisions"): (REVISION_COLUMNS, _revision_row),
    ("coordination.k8s.io", "leases"): (LEASE_COLUMNS, _lease_row),
    ("policy", "poddisruptionbudgets"): (PDB_COLUMNS, _pdb_row),
    ("scheduling.k8s.io", "priorityclasses"): (PRIORITY_CLASS_COLUMNS, _priority_class_row),
    ("apiextensions.k8s.io", "customresourcedefinitions"): (CRD_COLUMNS, _crd_row),
}
