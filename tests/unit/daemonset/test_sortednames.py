"""``SortedNames`` behaves as a sorted set changed step by step, and never changes a set already made."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from dsctl.daemonset.sortednames import SortedNames
from tests.support.profiles import examples

_names = st.integers(min_value=0, max_value=400).map(lambda i: f"node-{i:03d}")
_step = st.dictionaries(_names, st.booleans(), max_size=60)


@settings(max_examples=examples(150), deadline=None)
@given(start=st.sets(_names, max_size=300), steps=st.lists(_step, min_size=1, max_size=40),
       counts=st.lists(st.integers(min_value=0, max_value=50), min_size=1, max_size=5))
def test_updates_match_a_sorted_set_and_leave_earlier_sets_alone(
    start: set[str], steps: list[dict[str, bool]], counts: list[int]
) -> None:
    """Every step reads as the model set, in order, from the front and by membership; earlier sets stay as made."""
    names = SortedNames(start)
    model = set(start)
    history = [(names, set(model))]
    for changes in steps:
        names = names.updated(changes)
        for name, present in changes.items():
            (model.add if present else model.discard)(name)
        history.append((names, set(model)))
    for made, expected in history:
        ordered = sorted(expected)
        assert list(made) == ordered and len(made) == len(expected)
        for count in counts:
            assert made.first(count) == ordered[:count]
        for probe in ("node-000", "node-200", "node-399", *ordered[:3]):
            assert (probe in made) == (probe in expected)


def test_taking_from_the_front_walks_no_removed_name() -> None:
    """Removing the first names, as a rollout does, moves the start instead of leaving names to step over."""
    names = SortedNames(f"n{i:05d}" for i in range(10_000))
    for at in range(0, 9_000, 100):
        names = names.updated(dict.fromkeys(names.first(100), False))
        assert names.first(1) == [f"n{at + 100:05d}"]
    assert len(names) == 1_000 and not names._gone
