"""How a controller process runs Python's cyclic garbage collector.

The caches hold JSON trees: up to a million small dicts and lists, none in a cycle, all freed
by reference counting when the informer replaces them. The cyclic collector cannot reclaim
any of them, yet with the default thresholds (700, 10, 10) it rescans them over and over:
every sync allocates tens of thousands of short-lived containers, the ones alive across an
await are promoted, and every 25 % growth of the old generation triggers a full collection
over the whole cache, which at scale costs a large share of the controller's CPU during node
joins (ADR 0015).

Two measures, both process-wide:

- larger thresholds, so temporaries die young and promotions are rare;
- after the initial list, the caches are moved to the permanent generation (``gc.freeze``),
  out of every later collection's reach. Objects that die later are still freed by
  reference counting; only a cycle alive at the freeze would be kept, and caches have none.
"""

from __future__ import annotations

import gc

from dsctl.tuning import GC_THRESHOLDS

__all__ = ["freeze_caches", "tune_collector"]


def tune_collector() -> None:
    """Apply ``GC_THRESHOLDS``; idempotent."""
    gc.set_threshold(*GC_THRESHOLDS)


def freeze_caches() -> int:
    """Collect once, then freeze everything alive (the freshly synced caches); returns the
    number of frozen objects."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()
