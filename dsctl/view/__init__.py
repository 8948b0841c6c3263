"""``dsctl view``: a live, read-only web page of every DaemonSet's pod on every node.

- ``cells``: what one cell shows (pure; the controller's own eligibility, revision and
  rollout-control functions decide).
- ``model``: ``GridModel``, the cells kept current from the informers' caches, with coalesced
  changes (``Update``) and snapshots.
- ``planfile``: the overlay of planned waves read from a saved ``dsctl plan -o json``, and its
  schema (``plan-overlay.schema.json``).
- ``source``: ``ClusterSource``, the informers (list and watch only) that feed the model.
- ``server``: ``ViewServer``, the aiohttp server of the page, its snapshot and its server-sent
  events; the page itself is ``static/`` (plain JavaScript drawing on a canvas).
- ``app``: ``running_view``, everything started in order; ``cli``: ``dsctl view``.

Decisions: ADR 0125 (a local read-only page), 0126 (server-sent events), 0127 (model, snapshot
and delta protocol), 0128 (canvas), 0129 (the plan overlay's schema), 0130 (browser tests),
0131 (what a cell shows, and who decides it).
"""

from dsctl.view.cells import CODEC, READINESS_TAINT, Cell, Hold, Revision, State, cell_of, holds
from dsctl.view.model import GridModel, Update
from dsctl.view.planfile import PlanError, PlanOverlay, load_plan, parse_plan

__all__ = [
    "CODEC",
    "READINESS_TAINT",
    "Cell",
    "GridModel",
    "Hold",
    "PlanError",
    "PlanOverlay",
    "Revision",
    "State",
    "Update",
    "cell_of",
    "holds",
    "load_plan",
    "parse_plan",
]
