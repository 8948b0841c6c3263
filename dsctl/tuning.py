"""The constants dsctl chose by measurement rather than took from upstream, each with its reason.

They trade latency against API calls or CPU, and were set by running the benchmarks and the
chaos soak (``benchmarks/``); change one only with a benchmark beside it. Values that copy
kube-controller-manager or client-go (expectations' five-minute TTL, the failed-pod backoff's
1 s to 15 min, a burst of 250, the event filter's 25 and 5 min, the work queue's rate limits)
stay beside the code that uses them, with that source named. Settings a user may change are
flags (``dsctl.app.config``), not constants.

Imports nothing, so every layer may read it.
"""

from __future__ import annotations

__all__ = [
    "BACKOFF_GC_SECONDS",
    "DAEMONSET_RESYNC_SECONDS",
    "DEFERRED_STATUS_SECONDS",
    "GC_THRESHOLDS",
    "GONE_SECONDS",
    "JOIN_HOLD_SECONDS",
    "JOIN_RECHECK_SECONDS",
    "LIST_APPLY_SLICE",
    "RECOUNT_SECONDS",
    "RELIST_YIELD_EVERY",
    "SPLICE_FROM",
    "STATUS_REFRESH_SECONDS",
    "UNKNOWN_OUTCOME_TTL",
]

# -- syncing ----------------------------------------------------------------------------------

DAEMONSET_RESYNC_SECONDS = 600.0
"""How often every DaemonSet is re-delivered and planned from scratch: the safety net of a
level-triggered controller for a missed event or a bug, rare enough to cost nothing at rest."""

RECOUNT_SECONDS = 300.0
"""How often a DaemonSet is planned both from scratch and incrementally and the two compared
(``dsctl_sync_plan_mismatches_total``): often enough to catch a change nobody noted within
minutes, rarely enough that the full plan stays a small share of the CPU (ADR 0055)."""

STATUS_REFRESH_SECONDS = 1.0
"""While a run of creating syncs lasts, its status is still written at least this often; a sync
that created everything it planned leaves the status to the sync its pods' events bring, so a
node join costs one status write per DaemonSet, not two (ADR 0058)."""

DEFERRED_STATUS_SECONDS = 2 * STATUS_REFRESH_SECONDS
"""A sync held back by its own creates still in flight runs anyway, to write status, once the
status is this old. Twice the creating syncs' own refresh, so the two never race for the key
while a batch's events are on their way (ADR 0062, ADR 0072)."""

GONE_SECONDS = 5.0
"""How long a 404 from the API outranks a cache that still shows the DaemonSet: the cache
normally catches up well before, and a 404 nothing else confirms stops a DaemonSet only that
long (ADR 0064)."""

UNKNOWN_OUTCOME_TTL = 15.0
"""How long an in-place patch without an answer (5xx, lost connection), or refused with 409,
stays expected: far above any watch delay seen, far below expectations' five minutes, so a
patch that never shows in the cache holds its DaemonSet only briefly (ADR 0053)."""

BACKOFF_GC_SECONDS = 60.0
"""How often idle failed-pod backoff entries are dropped: their own idle limit is twice the
backoff ceiling, so a minute is fine-grained enough and costs nothing."""

# -- node joins -------------------------------------------------------------------------------

JOIN_HOLD_SECONDS = 10.0
"""How long a DaemonSet's creates on a new node wait for DaemonSets of higher priority to sync
there first: long enough for a busy controller to get to them, short enough that a failing
critical DaemonSet keeps the others off the node only briefly (ADR 0051)."""

JOIN_RECHECK_SECONDS = 0.05
"""How soon a DaemonSet held back on a new node looks again: the higher-priority sync it waits
for is usually already running, so waiting longer only delays its pods."""

READINESS_GATE_WORKERS = 2
"""Workers of the node readiness gate's queue: a node's sync is one cache read and at most one
patch, so two keep a patch in flight while the next node is planned; a burst of joins is bounded
by the client's QPS, not by the workers."""

# -- the request path -------------------------------------------------------------------------

SPLICE_FROM = 4
"""Fewest creates in a sync for which the pods are spliced from one encoded template instead of
built and encoded one by one: below it, making the template costs more than it saves (ADR 0077)."""

# -- memory and the event loop ----------------------------------------------------------------

GC_THRESHOLDS = (50_000, 50, 100)
"""The cyclic garbage collector's (young, middle, old) thresholds: the caches hold millions of
acyclic containers, and with Python's defaults the collector rescans them over and over, so
collections are made rare and the caches frozen after the first list (ADR 0015)."""

LIST_APPLY_SLICE = 100
"""A listed page is written to the store and handed to the handlers in slices of this many
objects, yielding to the event loop between slices: the next page's request goes out and is
answered meanwhile, and a large page never stalls the workers for long (ADR 0205)."""

RELIST_YIELD_EVERY = 2000
"""A relist hands the deletions it found to the handlers in slices of this many, yielding to the
event loop between slices, so a relist of a large cache never stalls the workers for long."""
