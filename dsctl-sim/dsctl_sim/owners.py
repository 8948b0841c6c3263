"""The ownerReference index: which stored objects name a given owner UID.

Garbage collection (background, foreground and orphan) and the storage's own decision of
whether a propagation finalizer is needed both ask "who depends on this UID?". Answering by
scanning 150,000 pods per owner deletion would be quadratic, so storage keeps this index up
to date on every write.
"""

from __future__ import annotations

from typing import Any

__all__ = ["OwnerIndex", "owner_uids"]

Ref = tuple[str, str, str]


def owner_uids(obj: dict[str, Any] | None) -> frozenset[str]:
    """The UIDs in an object's ``metadata.ownerReferences``."""
    if obj is None:
        return frozenset()
    refs = (obj.get("metadata") or {}).get("ownerReferences") or ()
    return frozenset(str(r["uid"]) for r in refs if isinstance(r, dict) and r.get("uid"))


class OwnerIndex:
    """Owner UID -> set of ``(key, namespace, name)`` of its dependents.

    Invariant: an entry exists exactly for UIDs named by at least one stored object.
    """

    def __init__(self) -> None:
        self._by_owner: dict[str, set[Ref]] = {}

    def update(self, key: str, namespace: str, name: str, old: dict[str, Any] | None,
               new: dict[str, Any] | None) -> None:
        """Record that the object at (key, namespace, name) changed from ``old`` to ``new``."""
        before, after = owner_uids(old), owner_uids(new)
        if before == after:
            return
        ref = (key, namespace, name)
        for uid in before - after:
            bucket = self._by_owner.get(uid)
            if bucket is not None:
                bucket.discard(ref)
                if not bucket:
                    del self._by_owner[uid]
        for uid in after - before:
            self._by_owner.setdefault(uid, set()).add(ref)

    def has_dependents(self, uid: str) -> bool:
        """Whether any stored object names ``uid`` as an owner."""
        return uid in self._by_owner

    def dependents(self, uid: str) -> list[Ref]:
        """The dependents of ``uid``, sorted for determinism."""
        return sorted(self._by_owner.get(uid, ()))
