"""``dsctl plan``: what applying a DaemonSet manifest would do, computed by the controller's own
planners over a snapshot of the cluster, without writing anything.

The pieces, in the order a plan is made:

- ``manifest``: read the file, check it as the API would (kind, name, strict fields).
- ``snapshot``: list nodes, the DaemonSet's pods and revisions, get the live object (and the CRD
  for ``dsctl.io/v1``); a write fence refuses any write.
- ``proposal``: the object the API would store (defaulted, with the live identity and status).
- ``world`` and ``dryrun``: ``syncplan.plan_sync`` again and again over a copy of the cluster,
  each sync's writes applied, each wave's pods made Ready in turn.
- ``placement``, ``updates``, ``risks``: what the run says, grouped by the planners' own verdicts.
- ``report``: the plan document (``plan.schema.json``, which contains the view's overlay
  shape, ADR 0129); ``render``: the table; ``cli``: ``dsctl plan``.

Nothing here decides placement, order or budgets: the controller's planners do (ADR 0160).
"""

from dsctl.plan.report import Options, PlanError, make_plan

__all__ = ["SCHEMA_NAME", "Options", "PlanError", "make_plan", "schema"]

SCHEMA_NAME = "plan.schema.json"


def schema() -> dict[str, object]:
    """The JSON Schema of ``dsctl plan -o json``, as shipped in the package."""
    import json
    from importlib import resources

    loaded: dict[str, object] = json.loads(resources.files("dsctl.plan").joinpath(SCHEMA_NAME)
                                           .read_text(encoding="utf-8"))
    return loaded
