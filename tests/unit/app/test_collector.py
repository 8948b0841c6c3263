"""The process's collector policy: what a relist leaves young is frozen, its dead cycles are not."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from typing import Any

import pytest

from dsctl.app.collector import freeze_relisted


@pytest.fixture
def unfrozen() -> Iterator[None]:
    """Leave the test process's collector as it was found: nothing stays frozen."""
    yield
    gc.unfreeze()


class _Cycle:
    """Refers to itself, so reference counting never frees it."""

    def __init__(self) -> None:
        self.me: Any = self


def test_freeze_relisted_freezes_the_live_and_collects_young_cycles(unfrozen: None) -> None:
    gc.collect()
    cached = [{"pod": [i]} for i in range(1000)]  # a container in it: tracked
    dead = weakref.ref(_Cycle())  # young cyclic garbage: only the collector can free it
    before = gc.get_freeze_count()

    frozen = freeze_relisted()

    assert frozen == gc.get_freeze_count()
    assert frozen >= before + len(cached)
    collected = gc.get_objects()  # generations 0 to 2, the permanent one excluded
    assert dead() is None
    assert gc.is_tracked(cached[0])
    assert not any(obj is cached[0] for obj in collected)
