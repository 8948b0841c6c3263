"""The settled state, judged from a fresh read of the cluster: invariant (c) of the chaos suite.

After the faults stop, every DaemonSet must reach, within the stated bound:

- exactly one pod on each eligible node, Ready, and (RollingUpdate) of the current revision,
  i.e. the newest ControllerRevision, which must hold the current template;
- no pod on an ineligible node, and no terminating pod left over;
- a status equal to a recount of those pods (desired, current, misscheduled, ready,
  available, updated, unavailable) and ``observedGeneration`` equal to ``generation``.
- no ``ReplicaFailure`` condition: one set by a write refused during the faults is cleared
  by the first sync whose writes all succeed;
- no node left carrying the readiness taint (``dsctl.io/agents-not-ready``): once every gating
  pod is Ready, the gate has removed it.

Eligibility is recomputed here from ``dsctl_api`` helpers with the automatic daemon tolerations,
independently of the controller's own code paths (only the low-level matchers are shared).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from dsctl.kube.client import KubeClient
from dsctl.kube.resources import CONTROLLER_REVISIONS, DAEMONSETS, NODES, PODS, Resource
from dsctl_api.nodeaffinity import required_node_affinity_matches
from dsctl_api.pods import controller_ref
from dsctl_api.taints import find_untolerated
from dsctl_api.timefmt import parse_rfc3339
from tests.support.invariants import HASH_LABEL

__all__ = ["AUTO_TOLERATIONS", "eligible", "settle_problems", "target_node"]

AUTO_TOLERATIONS = [
    {"key": key, "operator": "Exists", "effect": effect}
    for key, effect in (
        ("node.kubernetes.io/not-ready", "NoExecute"), ("node.kubernetes.io/unreachable", "NoExecute"),
        ("node.kubernetes.io/disk-pressure", "NoSchedule"), ("node.kubernetes.io/memory-pressure", "NoSchedule"),
        ("node.kubernetes.io/pid-pressure", "NoSchedule"), ("node.kubernetes.io/unschedulable", "NoSchedule"),
        ("dsctl.io/agents-not-ready", "NoSchedule"),  # the readiness gate's taint, at its default key
    )
]
Obj = Mapping[str, Any]
READINESS_KEY = "dsctl.io/agents-not-ready"


def eligible(ds: Obj, node: Obj) -> bool:
    """Whether the DaemonSet should run a pod on ``node`` (selector, affinity, taints)."""
    pod_spec = ((ds.get("spec") or {}).get("template") or {}).get("spec") or {}
    if not required_node_affinity_matches(pod_spec, node):
        return False
    tolerations = [*(pod_spec.get("tolerations") or []), *AUTO_TOLERATIONS]
    taints = (node.get("spec") or {}).get("taints") or []
    return find_untolerated(taints, tolerations, ("NoSchedule", "NoExecute")) is None


def target_node(pod: Obj) -> str:
    """The bound node, else the node the daemon pod's ``matchFields`` affinity names."""
    spec = pod.get("spec") or {}
    if spec.get("nodeName"):
        return str(spec["nodeName"])
    terms = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
             .get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms") or []
    for term in terms:
        for req in term.get("matchFields") or []:
            if req.get("key") == "metadata.name" and req.get("values"):
                return str(req["values"][0])
    return ""


def _ready_since(pod: Obj) -> float | None:
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready" and cond.get("status") == "True":
            stamp = cond.get("lastTransitionTime")
            return parse_rfc3339(str(stamp)) if stamp else 0.0
    return None


def _newest_revision(revisions: list[Obj], uid: str) -> Obj | None:
    owned = [r for r in revisions if (controller_ref(r) or {}).get("uid") == uid]
    return max(owned, key=lambda r: int(r.get("revision") or 0), default=None)


def _judge(ds: Obj, nodes: list[Obj], pods: list[Obj], revisions: list[Obj], now: float) -> list[str]:
    meta, spec, status = ds.get("metadata") or {}, ds.get("spec") or {}, ds.get("status") or {}
    name, uid = str(meta.get("name")), str(meta.get("uid"))
    problems: list[str] = []
    if int(status.get("observedGeneration") or 0) != int(meta.get("generation") or 0):
        problems.append(f"observedGeneration {status.get('observedGeneration')} != generation {meta.get('generation')}")
    newest = _newest_revision(revisions, uid)
    current = ""
    if newest is None:
        problems.append("no ControllerRevision")
    else:
        current = str((newest.get("metadata") or {}).get("labels", {}).get(HASH_LABEL, ""))
        stored = dict(((newest.get("data") or {}).get("spec") or {}).get("template") or {})
        stored.pop("$patch", None)
        if stored != spec.get("template"):
            problems.append(f"newest revision {newest['metadata']['name']} does not hold the current template")
    rolling = (spec.get("updateStrategy") or {}).get("type", "RollingUpdate") == "RollingUpdate"
    min_ready = float(spec.get("minReadySeconds") or 0)
    owned = [p for p in pods if (controller_ref(p) or {}).get("uid") == uid]
    terminating = sorted(str(p["metadata"]["name"]) for p in owned if p["metadata"].get("deletionTimestamp"))
    if terminating:
        problems.append(f"terminating pods left: {terminating}")
    by_node: dict[str, list[Obj]] = {}
    for pod in owned:
        if not pod["metadata"].get("deletionTimestamp"):
            by_node.setdefault(target_node(pod), []).append(pod)
    wanted = {str(n["metadata"]["name"]) for n in nodes if eligible(ds, n)}
    counts = {"desiredNumberScheduled": len(wanted), "currentNumberScheduled": 0, "numberMisscheduled": 0,
              "numberReady": 0, "numberAvailable": 0, "updatedNumberScheduled": 0}
    for node_name in sorted(wanted | set(by_node)):
        here = by_node.get(node_name, [])
        if node_name not in wanted:
            counts["numberMisscheduled"] += 1
            problems.append(f"{node_name} is not eligible but has {[p['metadata']['name'] for p in here]}")
            continue
        if here:
            counts["currentNumberScheduled"] += 1
        if len(here) != 1:
            problems.append(f"{node_name} has {len(here)} pods: {[p['metadata']['name'] for p in here]}")
            continue
        pod = here[0]
        since = _ready_since(pod)
        labels = pod["metadata"].get("labels") or {}
        if since is None:
            problems.append(f"{node_name}: pod {pod['metadata']['name']} not Ready")
        else:
            counts["numberReady"] += 1
            if min_ready <= 0 or since + min_ready < now:
                counts["numberAvailable"] += 1
        if labels.get(HASH_LABEL) == current:
            counts["updatedNumberScheduled"] += 1
        elif rolling:
            problems.append(f"{node_name}: pod {pod['metadata']['name']} has hash {labels.get(HASH_LABEL)}, "
                            f"current is {current}")
    counts["numberUnavailable"] = counts["desiredNumberScheduled"] - counts["numberAvailable"]
    for key, want in counts.items():
        if int(status.get(key) or 0) != want:
            problems.append(f"status.{key}={status.get(key)} but a recount gives {want}")
    # A write refused during the faults sets ReplicaFailure; once writes succeed it must go.
    stale = [c for c in status.get("conditions") or [] if c.get("type") == "ReplicaFailure"]
    if stale:
        problems.append(f"ReplicaFailure condition left after convergence: {stale[0].get('reason')}")
    return [f"ds/{name}: {p}" for p in problems]


async def settle_problems(client: KubeClient, names: list[str], *, namespace: str = "default",
                          resource: Resource = DAEMONSETS) -> list[str]:
    """What keeps ``names`` from the settled state right now (empty when settled)."""
    nodes = (await client.list(NODES))["items"]
    pods = (await client.list(PODS, namespace=namespace))["items"]
    revisions = (await client.list(CONTROLLER_REVISIONS, namespace=namespace))["items"]
    problems: list[str] = []
    now = time.time()
    for name in names:
        ds = await client.get(resource, name, namespace=namespace)
        problems += _judge(ds, nodes, pods, revisions, now)
    problems += [f"node/{n['metadata']['name']}: readiness taint left" for n in nodes
                 if any(t.get("key") == READINESS_KEY for t in (n.get("spec") or {}).get("taints") or [])]
    return problems[:25]
