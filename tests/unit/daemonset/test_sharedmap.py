"""``SharedMap`` behaves as a dict updated step by step, and never changes a map already made."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsctl.daemonset.sharedmap import SharedMap
from tests.support.profiles import examples

_keys = st.integers(min_value=0, max_value=300)
_step = st.tuples(st.lists(st.tuples(_keys, st.integers()), max_size=40), st.lists(_keys, max_size=40))


@settings(max_examples=examples(150), deadline=None)
@given(start=st.dictionaries(_keys, st.integers(), max_size=200), steps=st.lists(_step, min_size=1, max_size=30))
def test_updates_match_a_dict_and_leave_earlier_maps_alone(
    start: dict[int, int], steps: list[tuple[list[tuple[int, int]], list[int]]]
) -> None:
    shared = SharedMap(start)
    model = dict(start)
    history = [(shared, dict(model))]
    for put, drop in steps:
        shared = shared.updated(put, drop=drop)
        for key in drop:
            model.pop(key, None)
        model.update(put)
        history.append((shared, dict(model)))
    for made, expected in history:  # every map still reads as it did when it was made
        assert dict(made) == expected
        assert len(made) == len(expected)
        assert sorted(made) == sorted(expected)
        for key in range(301):
            assert (key in made) == (key in expected)
            assert made.get(key) == expected.get(key)


@pytest.mark.parametrize(("put", "drop", "expected"), [
    pytest.param([("b", 2)], [], {"a": 1, "b": 2}, id="add"),
    pytest.param([("a", 9)], [], {"a": 9}, id="replace"),
    pytest.param([], ["a"], {}, id="remove"),
    pytest.param([], ["zzz"], {"a": 1}, id="remove-missing"),
    pytest.param([("a", 5)], ["a"], {"a": 5}, id="remove-then-put"),
    pytest.param([("a", 5), ("a", 6)], [], {"a": 6}, id="later-pair-wins"),
])
def test_one_update(put: list[tuple[str, int]], drop: list[str], expected: dict[str, int]) -> None:
    made = SharedMap({"a": 1}).updated(put, drop=drop)
    assert dict(made) == expected and len(made) == len(expected)


def test_a_missing_or_removed_key_raises() -> None:
    made = SharedMap({"a": 1}).updated([("b", 2)], drop=["a"])
    with pytest.raises(KeyError):
        made["a"]
    with pytest.raises(KeyError):
        made["c"]


def test_small_updates_share_the_base_and_large_ones_fold_it() -> None:
    """The point of the type: one changed entry does not copy the other thousands."""
    base = SharedMap({i: i for i in range(5000)})
    one = base.updated([(7, -7)])
    assert one._base is base._base and len(one._top) == 1
    many = base.updated([(i, -i) for i in range(400)])
    assert many._base is not base._base and not many._top
    assert many[399] == -399 and many[400] == 400 and base[399] == 399
