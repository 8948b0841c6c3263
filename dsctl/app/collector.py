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
  reference counting; only a cycle alive at the freeze would be kept, and caches have none;
- after every relist, the objects it made are moved there too (``freeze_relisted``): a relist
  of a million pods otherwise leaves millions of young containers for the next collections of
  the middle and old generations to scan, with the event loop stopped for as long (ADR 0207).

Every collection is timed (``CollectionTimer``): a full collection over caches that are not
frozen stops the event loop for as long as it takes, and the histogram shows it.
"""

from __future__ import annotations

import gc
import time
from typing import Any

from prometheus_client import CollectorRegistry, Histogram

from dsctl.tuning import GC_THRESHOLDS

__all__ = ["CollectionTimer", "freeze_caches", "freeze_relisted", "tune_collector"]

_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


def tune_collector() -> None:
    """Apply ``GC_THRESHOLDS``; idempotent."""
    gc.set_threshold(*GC_THRESHOLDS)


def freeze_caches() -> int:
    """Collect once, then freeze everything alive (the freshly synced caches); returns the
    number of frozen objects."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


def freeze_relisted() -> int:
    """Freeze what a relist left in the collected generations; returns the number of frozen
    objects.

    No full collection first, unlike at start-up: the workers run by now, and a full pass over
    a relist's million objects stops them for as long as it lasts. Only the young generation
    is collected, which is cheap and holds most of the cyclic garbage there is (exception
    tracebacks, mostly); a cycle that had reached an older generation and died since stays
    frozen. Freezing itself moves whole generations, a constant cost.
    """
    gc.collect(0)
    gc.freeze()
    return gc.get_freeze_count()


class CollectionTimer:
    """Times every cyclic collection of this process into ``dsctl_gc_collection_seconds``,
    labelled by generation, from ``start`` until ``stop`` (``gc.callbacks``, process-wide)."""

    def __init__(self, *, registry: CollectorRegistry) -> None:
        histogram = Histogram("dsctl_gc_collection_seconds",
                              "Duration of the cyclic garbage collector's collections, by generation.",
                              ["generation"], buckets=_BUCKETS, registry=registry)
        self._by_generation = [histogram.labels(generation=str(g)) for g in range(3)]
        self._began = 0.0

    def start(self) -> None:
        """Begin timing; idempotent."""
        if self._callback not in gc.callbacks:
            gc.callbacks.append(self._callback)

    def stop(self) -> None:
        """Stop timing; idempotent."""
        if self._callback in gc.callbacks:
            gc.callbacks.remove(self._callback)

    def _callback(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._began = time.perf_counter()
            return
        generation = info.get("generation")
        if isinstance(generation, int) and 0 <= generation < len(self._by_generation):
            self._by_generation[generation].observe(time.perf_counter() - self._began)
