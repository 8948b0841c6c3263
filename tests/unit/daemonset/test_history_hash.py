"""The template hash: FNV-32a, collision count, safe alphabet and revision names."""

from __future__ import annotations

import json
from typing import Any

import pytest

from dsctl.daemonset.hashing import SAFE_ALPHABET, compute_hash, fnv32a, revision_name, safe_encode

TEMPLATE: dict[str, Any] = {
    "metadata": {"labels": {"app": "agent"}},
    "spec": {"containers": [{"name": "agent", "image": "agent:1"}]},
}


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        pytest.param(b"", 0x811C9DC5, id="empty-is-offset-basis"),
        pytest.param(b"a", 0xE40C292C, id="one-byte"),
        pytest.param(b"foobar", 0xBF9CF968, id="word"),
    ],
)
def test_fnv32a_reference_vectors(data: bytes, expected: int) -> None:
    """fnv32a agrees with the published FNV-1a 32-bit test vectors."""
    assert fnv32a(data) == expected


def test_fnv32a_seed_continues_a_running_hash() -> None:
    """Hashing in two pieces with the first sum as seed equals hashing the whole."""
    assert fnv32a(b"bar", seed=fnv32a(b"foo")) == fnv32a(b"foobar")


def test_safe_encode_maps_digits_onto_the_safe_alphabet() -> None:
    """Decimal digits map by code point modulo 27, as Kubernetes' SafeEncodeString does."""
    assert safe_encode("0123456789") == "456789bcdf"


def test_hash_is_pinned() -> None:
    """The hash of a fixed template never changes between releases (revision names depend on it)."""
    assert compute_hash(TEMPLATE, None) == "577f69ccc5"
    assert compute_hash({}, None) == "5859f96865"


def test_hash_ignores_key_order() -> None:
    """Equal templates hash equally however their dicts were built."""
    reordered = {
        "spec": {"containers": [{"image": "agent:1", "name": "agent"}]},
        "metadata": {"labels": {"app": "agent"}},
    }
    assert compute_hash(reordered, 3) == compute_hash(TEMPLATE, 3)


@pytest.mark.parametrize(
    "change",
    [
        pytest.param({"spec": {"containers": [{"name": "agent", "image": "agent:2"}]}}, id="image"),
        pytest.param({"metadata": {"labels": {"app": "agent", "x": "y"}}}, id="template-label"),
        pytest.param(
            {"metadata": {"labels": {"app": "agent"}, "annotations": {"restartedAt": "now"}}},
            id="restart-annotation",
        ),
    ],
)
def test_hash_changes_with_the_template(change: dict[str, Any]) -> None:
    """Any change to the template, including a rollout-restart annotation, changes the hash."""
    assert compute_hash({**TEMPLATE, **change}, None) != compute_hash(TEMPLATE, None)


def test_collision_count_changes_the_hash() -> None:
    """None, 0, 1 and 2 give four different hashes: only an unset count is left out."""
    hashes = {compute_hash(TEMPLATE, count) for count in (None, 0, 1, 2)}
    assert len(hashes) == 4


def test_collision_count_is_hashed_as_eight_little_endian_bytes() -> None:
    """The count extends the running hash with a zero-padded 8-byte little-endian buffer."""
    base = compute_hash(TEMPLATE, None)
    seeded = fnv32a(b"\x01\x00\x00\x00\x00\x00\x00\x00", seed=fnv32a(_canonical_bytes()))
    assert compute_hash(TEMPLATE, 1) == safe_encode(str(seeded))
    assert compute_hash(TEMPLATE, 1) != base


def _canonical_bytes() -> bytes:
    return json.dumps(TEMPLATE, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


@pytest.mark.parametrize("count", [None, 0, 1, 7, 2**31 - 1])
def test_hash_uses_only_safe_characters(count: int | None) -> None:
    """A hash is at most 10 characters (a uint32's digits), all from the safe alphabet."""
    value = compute_hash(TEMPLATE, count)
    assert 1 <= len(value) <= 10
    assert set(value) <= set(SAFE_ALPHABET)


@pytest.mark.parametrize(
    ("ds_name", "expected_len"),
    [
        pytest.param("agent", len("agent-abc"), id="short"),
        pytest.param("a" * 250, 223 + 4, id="long-name-is-cut"),
    ],
)
def test_revision_name(ds_name: str, expected_len: int) -> None:
    """Revision names are <ds>-<hash>, with the prefix cut so the name stays under 253 characters."""
    name = revision_name(ds_name, "abc")
    assert name.endswith("-abc")
    assert len(name) == expected_len
