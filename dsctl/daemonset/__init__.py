"""The DaemonSet domain: pure decisions over cached objects.

Everything here is pure: plain JSON dicts and an explicit ``now`` in,
frozen values out, no I/O, no awaits, no clock reads. Objects may be informer projections
with fields missing; a malformed field is treated as absent, never raised on.

The order of one sync is decided in one place, ``syncplan.plan_sync`` (its docstring lists
the steps, following upstream's ``syncDaemonSet``), and carried out in the same order by
``dsctl.controller.executor.SyncExecutor.run``. ``nodetable`` lets a sync re-plan only the
nodes that changed since the previous one.

Runtime state that changes as the controller writes (expectations, the failed-pod backoff
entries, pending in-place patches) is not domain: it lives in ``dsctl.controller``, owned by
``dsctl.controller.state.RuntimeState``. Planners read the backoff only through
``backoffview.BackoffView``.

Public surface of the modules owned here (the rolling update and history planners live in
``update``, ``history`` and ``hashing``):

- ``access``: readers of DaemonSet and pod fields; what every object shares (metadata, spec,
  status) is read through ``dsctl_api.objects``. Either way a malformed field reads as absent.
- ``podplan``: ``Plan``, ``PodRef``, ``Event``, ``merge_plans``, ``soonest`` (the pod plan).
- ``syncplan``: ``plan_sync``, ``SyncSnapshot``, ``SyncPlan``, ``ClusterView``.
- ``nodetable``: ``plan_node``, ``NodeTable``, ``Basis`` (incremental planning).
- ``sharedmap``: ``SharedMap``, the immutable mapping whose updates share unchanged entries
  (a node table's outcomes).
- ``eligibility``: ``node_should_run(ds, node) -> Fit``, ``Eligibility.of(ds).check(node)``,
  ``evaluate_nodes(ds, nodes)``, ``verdicts(ds, nodes, fits)``, ``eligibility_signature(node)``.
- ``tolerations``: ``daemon_tolerations``, ``with_daemon_tolerations``.
- ``template``: ``new_pod(ds, node, *, hash, direct_binding)``, ``target_node(pod)``,
  ``is_pod_updated``, ``owner_reference``, ``HASH_LABEL``, ``GENERATION_LABEL``.
- ``podsort``: ``sort_pods``, ``oldest``, ``group_by_node``.
- ``podchange``: ``planning_view``, ``same_for_planning`` (pod updates no planner can see).
- ``ownership``: ``claim``, ``adopt_patch``, ``release_patch``.
- ``backoffview``: ``BackoffView`` (what planners read), ``backoff_key``.
- ``manage``: ``plan_manage``, ``manage_node``, ``slow_start_batches``, ``cap_burst``, ``BURST_REPLICAS``.
- ``status``: ``Status``, ``compute_status``, ``status_changed``, ``status_with``, ``availability_requeue``.
- ``progress``: ``plan_progress``, ``rollout_hold`` (the ``Progressing`` condition).
- ``reasons``: ``EVENT_REASONS``, ``CONDITIONS`` (every Event reason and condition, with its meaning).
- ``validation``: ``validate_daemonset``; ``conditions``: ``set_condition``, ``without_condition``.
- ``extensions``: ``EXTENSION_FIELDS`` (every field beyond apps/v1, with its annotation), ``rollout_controls``
  (partition, paused, selector, rollingUpdateType), ``progress_deadline_seconds``, ``effective_burst``.
- ``inplace``: ``image_only_changes``, ``plan_pod_update``, ``in_place_patch``, ``in_place_pending``.
- ``readinessgate``: ``plan_gate`` (one node's readiness taint: remove, add back, time out),
  ``ReadinessTaint``, ``GateSettings``, ``removal_patch``, ``addition_patch``.
"""

from dsctl.daemonset.backoffview import BackoffView, backoff_key
from dsctl.daemonset.eligibility import (
    Eligibility,
    Fit,
    eligibility_signature,
    evaluate_nodes,
    node_should_run,
)
from dsctl.daemonset.manage import BURST_REPLICAS, allows_surge, cap_burst, plan_manage, slow_start_batches
from dsctl.daemonset.ownership import Claim, adopt_patch, claim, release_patch
from dsctl.daemonset.podchange import planning_view, same_for_planning
from dsctl.daemonset.podplan import Event, Plan, PodRef, merge_plans
from dsctl.daemonset.podsort import group_by_node, oldest, sort_pods
from dsctl.daemonset.status import Status, availability_requeue, compute_status, status_changed, status_with
from dsctl.daemonset.template import (
    GENERATION_LABEL,
    HASH_LABEL,
    TemplateError,
    is_pod_updated,
    new_pod,
    owner_reference,
    target_node,
)
from dsctl.daemonset.tolerations import daemon_tolerations, with_daemon_tolerations

__all__ = [
    "BURST_REPLICAS",
    "GENERATION_LABEL",
    "HASH_LABEL",
    "BackoffView",
    "Claim",
    "Eligibility",
    "Event",
    "Fit",
    "Plan",
    "PodRef",
    "Status",
    "TemplateError",
    "adopt_patch",
    "allows_surge",
    "availability_requeue",
    "backoff_key",
    "cap_burst",
    "claim",
    "compute_status",
    "daemon_tolerations",
    "eligibility_signature",
    "evaluate_nodes",
    "group_by_node",
    "is_pod_updated",
    "merge_plans",
    "new_pod",
    "node_should_run",
    "oldest",
    "owner_reference",
    "plan_manage",
    "planning_view",
    "release_patch",
    "same_for_planning",
    "slow_start_batches",
    "sort_pods",
    "status_changed",
    "status_with",
    "target_node",
    "with_daemon_tolerations",
]
