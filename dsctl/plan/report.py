"""From a manifest and a cluster snapshot to the plan document (``plan.schema.json``).

``make_plan`` is pure: the snapshot is read before (``snapshot.read_cluster``), the clock is
passed in. It proposes the stored object (``proposal``), runs the controller's syncs over a copy
of the cluster (``dryrun``), and describes the result: placement, update, risks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dsctl import __version__
from dsctl.daemonset.eligibility import Eligibility, Fit
from dsctl.daemonset.inplace import templates_by_hash
from dsctl.daemonset.readinessgate import DEFAULT_TAINT, ReadinessTaint
from dsctl.daemonset.template import target_node
from dsctl.plan.crdschema import served_schema
from dsctl.plan.dryrun import DryRunError, dry_run
from dsctl.plan.manifest import Manifest
from dsctl.plan.placement import group_placement
from dsctl.plan.proposal import propose
from dsctl.plan.risks import risks
from dsctl.plan.snapshot import CRD_NAME, ClusterSnapshot
from dsctl.plan.updates import observed_startup, update_section
from dsctl.plan.world import World
from dsctl_api.objects import deletion_timestamp, labels, name
from dsctl_api.objects import uid as uid_of
from dsctl_api.timefmt import format_rfc3339

__all__ = ["PLAN_API_VERSION", "PLAN_KIND", "Options", "PlanError", "make_plan"]

PLAN_API_VERSION = "dsctl.io/v1"
PLAN_KIND = "DaemonSetPlan"


class PlanError(ValueError):
    """No plan can be made; the message is one line."""


@dataclass(frozen=True, slots=True)
class Options:
    """How the plan is made."""

    now: float
    burst: int = 250
    """The controller's ``--burst-replicas``."""
    pod_startup: float | None = None
    """Seconds from creation to Ready; None: the median of the DaemonSet's live pods."""
    max_waves: int = 100
    """Waves simulated at most; the rest of a longer rollout is listed in update order, not in waves."""
    readiness_taint: ReadinessTaint | None = DEFAULT_TAINT
    """The controller's ``--readiness-taint``: every pod it creates tolerates it; None: no gate."""

    @property
    def extra_tolerations(self) -> tuple[dict[str, str], ...]:
        """The tolerations the controller adds to every pod beyond upstream's."""
        return (self.readiness_taint.toleration(),) if self.readiness_taint is not None else ()


def make_plan(manifest: Manifest, cluster: ClusterSnapshot, options: Options) -> dict[str, Any]:
    """The plan document for one manifest; raises ``PlanError`` or ``ManifestError``."""
    schema = None
    if manifest.custom:
        if cluster.crd is None:
            raise PlanError(f"{manifest.source}: the cluster does not serve dsctl.io/v1 DaemonSets "
                            f"(no CustomResourceDefinition {CRD_NAME}); install it first")
        schema = served_schema(cluster.crd, "v1")
        if schema is not None:
            manifest.check_custom_fields(schema)
    proposal = propose(manifest, cluster.live, schema=schema, now=options.now)
    ds = proposal.ds
    old_templates = templates_by_hash(cluster.revisions)
    world = World(cluster.nodes, cluster.pods, cluster.revisions)
    try:
        run = dry_run(ds, world, now=options.now, burst=options.burst, max_waves=options.max_waves,
                      wave_seconds=0.0 if options.pod_startup is None else options.pod_startup,
                      extra_tolerations=options.extra_tolerations)
    except DryRunError as exc:
        raise PlanError(f"{manifest.source}: the controller would not act on it: {exc}") from None
    assert run.first.table is not None
    first = run.first.table
    # The dry run changes its pods in place (in-place patches, readiness): "now" is read from
    # the snapshot's own objects, found by the UIDs the first sync claimed.
    originals = {uid_of(p): p for p in cluster.pods}
    claimed = [originals.get(uid_of(p), p) for p in first.all_pods()]
    startup = observed_startup(claimed if cluster.live is not None else (), override=options.pod_startup)

    def live(pod: Any) -> bool:
        return not deletion_timestamp(pod)

    before = {n for n, o in first.outcomes.items() if any(live(p) for p in o.pods)}
    after = {n for p in world.owned_pods(uid_of(ds)) if live(p) and (n := target_node(p))}
    old_rules = Eligibility.of(cluster.live, extra=options.extra_tolerations) if cluster.live is not None else None
    nodes = {name(n): n for n in cluster.nodes}

    def fit_before(node: str) -> Fit | None:
        assert old_rules is not None
        obj = nodes.get(node)
        return old_rules.check(obj) if obj is not None else None

    outcomes = run.final.outcomes
    departing = {n: reason for n in run.final.departing if (reason := outcomes[n].departing) is not None}
    placement = group_placement(before=before, after=after, fit_now=lambda n: run.fits.get(n) if n in nodes else None,
                                fit_before=fit_before if old_rules is not None else None, departing=departing,
                                skipped=[n for n in run.last.skipped if n in outcomes and outcomes[n].old],
                                withheld=run.final.held)
    node_labels = {n: {str(k): str(v) for k, v in labels(obj).items()} for n, obj in nodes.items()}
    update = update_section(run, ds, before=claimed, old_templates=old_templates, startup=startup,
                            node_labels=node_labels)
    found = risks(ds, cluster.live, custom=manifest.custom, nodes=nodes, gained=placement.nodes("gain"),
                  should_run=run.final.should_run())
    changes = (proposal.action != "none" or placement.count("gain") > 0 or placement.count("lose") > 0
               or update["changing"]["count"] > 0)
    entry = {
        "namespace": manifest.namespace,
        "name": manifest.name,
        "resource": manifest.api_version,
        "action": proposal.action,
        "changedFields": list(proposal.changed),
        "changes": changes,
        "placement": placement.to_json(),
        "update": update,
        "risks": found,
    }
    return {
        "apiVersion": PLAN_API_VERSION,
        "kind": PLAN_KIND,
        "generator": f"dsctl {__version__}",
        "generated": format_rfc3339(options.now),
        "source": manifest.source,
        "changes": changes,
        "cluster": {"nodes": len(cluster.nodes), "pods": len(cluster.pods), "revisions": len(cluster.revisions)},
        "daemonsets": [entry],
    }
