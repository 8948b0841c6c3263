"""The template hash that names ControllerRevisions and labels pods.

A DaemonSet's current revision is ``<ds>-<hash>`` and every pod it creates carries
``controller-revision-hash: <hash>``. The hash must be a pure function of the pod template and
``status.collisionCount``, so that the same template always maps to the same revision (that is
what makes ``kubectl rollout undo`` reuse the old revision instead of minting a new one), and so
that bumping ``collisionCount`` moves a clashing template to a fresh name.

Upstream computes FNV-32a over a ``go-spew`` dump (``%#v``, sorted map keys, no methods) of the
typed ``PodTemplateSpec``. That dump prints every field of every Go struct reachable from the
template, zero values included, with Go type names, pointer markers and the unexported internals
of ``resource.Quantity``; it changes whenever a Kubernetes release adds a field to PodSpec, and
no JSON object carries the information to rebuild it (a field absent from JSON may be a nil
pointer or an empty struct). Reproducing it would mean embedding the Go type tree of one
Kubernetes version, and would still be wrong against the next. We hash canonical JSON instead
(sorted keys, no whitespace, UTF-8): stable across our own releases and processes, but
different from the names kube-controller-manager gives the same template.

Takeover does not depend on the names. Revisions are matched by their data, as upstream's
history matches them (``history.revision_data_equal``), so the revision kube-controller-manager
created stays current and its hash stays on the pods: switching an apps/v1 DaemonSet to dsctl
restarts nothing and rewrites no revision (``tests/integration/test_takeover_from_kcm.py``).
For the way back, dsctl writes a new revision's data in the bytes upstream's ``getPatch``
writes (``history.wire_body``), so kube-controller-manager's byte comparison can recognise it
too, as long as the server serves the template as the Go types marshal it (kube-apiserver
does); that direction is reasoned from upstream's code, not tested here. Only templates first
seen by dsctl get dsctl-computed names.

Everything else follows upstream: the collision count, when set, is appended as an 8-byte
little-endian buffer (``None`` hashes differently from ``0``), and the 32-bit sum's decimal
digits are mapped onto the "safe" alphabet that avoids vowels and look-alike characters.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = [
    "SAFE_ALPHABET",
    "compute_hash",
    "fnv32a",
    "revision_name",
    "safe_encode",
]

SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
"""Characters a hash may use: no vowels (no accidental words), no 0/1/3 (look like o/l/e)."""

_FNV32_OFFSET = 0x811C9DC5
_FNV32_PRIME = 0x01000193
_MASK32 = 0xFFFFFFFF

# Kubernetes object names are DNS subdomains (253 characters); keeping the prefix to 223
# leaves room for "-" and any 32-bit hash, as pkg/controller/history does for its names.
_MAX_PREFIX = 223


def fnv32a(data: bytes, *, seed: int = _FNV32_OFFSET) -> int:
    """FNV-1a, 32-bit. ``seed`` lets a caller continue a running hash over more bytes."""
    value = seed
    for byte in data:
        value ^= byte
        value = (value * _FNV32_PRIME) & _MASK32
    return value


def safe_encode(text: str) -> str:
    """Map each character onto ``SAFE_ALPHABET`` by code point, as Kubernetes does for hashes."""
    size = len(SAFE_ALPHABET)
    return "".join(SAFE_ALPHABET[ord(char) % size] for char in text)


def _canonical(template: Mapping[str, Any]) -> bytes:
    # sort_keys makes dict order irrelevant; ensure_ascii=False keeps non-ASCII values as
    # their UTF-8 bytes, so escaping choices cannot change the hash.
    return json.dumps(template, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def compute_hash(template: Mapping[str, Any], collision_count: int | None) -> str:
    """The revision hash of a pod template under a given ``status.collisionCount``.

    Deterministic for equal templates regardless of key order. ``collision_count`` None and 0
    give different hashes, exactly as upstream (where the count is hashed only when set).
    """
    value = fnv32a(_canonical(template))
    if collision_count is not None:
        # The count is a uint32 written little-endian into an 8-byte zeroed buffer; all eight
        # bytes go into the hash.
        buffer = (collision_count & _MASK32).to_bytes(4, "little") + bytes(4)
        value = fnv32a(buffer, seed=value)
    return safe_encode(str(value))


def revision_name(ds_name: str, template_hash: str) -> str:
    """``<ds>-<hash>``; an over-long DaemonSet name is cut so the result stays a valid name."""
    return f"{ds_name[:_MAX_PREFIX]}-{template_hash}"
