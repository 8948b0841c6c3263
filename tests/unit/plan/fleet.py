"""A cluster in memory for plan tests: nodes, and a DaemonSet rolled out on them as the API and
the controller would have left it (defaulted object, its revision, one Ready pod per node)."""

from __future__ import annotations

import copy
from typing import Any

from dsctl.daemonset.history import plan_history
from dsctl.daemonset.template import GENERATION_ANNOTATION, new_pod
from dsctl.plan.manifest import parse_manifest
from dsctl.plan.report import Options, make_plan
from dsctl.plan.snapshot import ClusterSnapshot
from dsctl_api.defaults import apply_defaults
from dsctl_api.timefmt import format_rfc3339
from tests.support.builders import daemonset, node

NOW = 1_800_000_000.0
UID = "ds-uid-1"


def nodes(count: int, **kwargs: Any) -> list[dict[str, Any]]:
    """``count`` Ready nodes named node-00, node-01..."""
    return [node(f"node-{i:02d}", **kwargs) for i in range(count)]


def stored(ds: dict[str, Any]) -> dict[str, Any]:
    """``ds`` as the API stores it: defaulted, with identity and a template generation."""
    live = copy.deepcopy(ds)
    apply_defaults("apps/daemonsets", live)
    live["metadata"].update(uid=UID, generation=1, resourceVersion="10",
                            annotations={**live["metadata"].get("annotations", {}), GENERATION_ANNOTATION: "1"},
                            creationTimestamp=format_rfc3339(NOW - 3600))
    live["status"] = {}
    return live


def ready_pod(live: dict[str, Any], node_name: str, hash: str, serial: int, *, ready: bool = True) -> dict[str, Any]:
    """The controller's pod for ``node_name``, bound and Ready for an hour (or Running, not Ready)."""
    pod = new_pod(live, node_name, hash=hash)
    pod["metadata"].update(name=f"{live['metadata']['name']}-{serial:05d}", uid=f"pod-{serial}", resourceVersion="5",
                           creationTimestamp=format_rfc3339(NOW - 3600))
    pod["spec"]["nodeName"] = node_name
    pod["status"] = {"phase": "Running", "conditions": [
        {"type": "Ready", "status": "True" if ready else "False",
         "lastTransitionTime": format_rfc3339(NOW - 3590)}],
        "containerStatuses": [{"name": "agent", "ready": ready, "restartCount": 0}]}
    return pod


def rolled_out(ds: dict[str, Any], all_nodes: list[dict[str, Any]], *, not_ready: tuple[str, ...] = ()) \
        -> ClusterSnapshot:
    """``ds`` stored, its revision, and a Ready pod on every node it selects."""
    from dsctl.daemonset.eligibility import Eligibility

    live = stored(ds)
    history = plan_history(ds=live, revisions=[], api_version="apps/v1", kind="DaemonSet")
    assert history.create is not None
    revision = {**history.create, "metadata": {**history.create["metadata"], "uid": "rev-1"}}
    rules = Eligibility.of(live)
    pods = [ready_pod(live, n["metadata"]["name"], history.hash, i, ready=n["metadata"]["name"] not in not_ready)
            for i, n in enumerate(all_nodes) if rules.check(n).should_run]
    return ClusterSnapshot(nodes=all_nodes, pods=pods, revisions=[revision], live=live)


def plan_for(doc: dict[str, Any], cluster: ClusterSnapshot, **options: Any) -> dict[str, Any]:
    """The plan of applying ``doc`` to ``cluster``."""
    manifest = parse_manifest(doc, source="ds.yaml", namespace=None)
    return make_plan(manifest, cluster, Options(now=NOW, **options))


def waves(plan: dict[str, Any]) -> list[list[str]]:
    """The planned waves' nodes."""
    return [w["nodes"] for w in plan["daemonsets"][0]["update"]["waves"]]


__all__ = ["NOW", "daemonset", "nodes", "plan_for", "ready_pod", "rolled_out", "stored", "waves"]
