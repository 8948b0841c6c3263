"""The read side of storage: lookups, filtered lists and the open watchers.

``Storage`` builds on this class; it is separate only to keep the read paths (which the
server's list and get handlers and every control-plane loop hit constantly) in one short
module. Everything here is O(1) by key, or a walk over an index bucket or the sorted keys.
"""

from __future__ import annotations

import builtins
from functools import partial
from typing import Any

from dsctl_api.fields import FieldSelector
from dsctl_api.labels import Selector
from dsctl_sim import strategy
from dsctl_sim.errors import BadRequest, NotFound
from dsctl_sim.registry import Registry, ResourceType
from dsctl_sim.table import Table
from dsctl_sim.watch import Doc, Watcher

__all__ = ["ReadView"]

Obj = dict[str, Any]


class ReadView:
    """Reads over ``_tables``; returned dicts are shared with storage and must not be mutated."""

    registry: Registry
    _rv: int
    _tables: dict[str, Table]

    @property
    def resource_version(self) -> int:
        """The newest resourceVersion handed out."""
        return self._rv

    def table(self, key: str) -> Table:
        """The table for a storage key; ``NotFound`` when the type is not served."""
        table = self._tables.get(key)
        if table is None:
            raise NotFound(f"the server could not find the requested resource ({key})")
        return table

    # -- reads ----------------------------------------------------------------------------

    def get(self, key: str, namespace: str | None, name: str) -> Obj | None:
        """The current object, or None. Shared: do not mutate."""
        doc = self.table(key).get(namespace or "", name)
        return None if doc is None else doc.obj

    def get_doc(self, key: str, namespace: str | None, name: str) -> Doc | None:
        """Like ``get`` but with the cached JSON encoding."""
        return self.table(key).get(namespace or "", name)

    def count(self, key: str) -> int:
        """How many objects of this type exist."""
        return self.table(key).count

    def list(
        self,
        key: str,
        *,
        namespace: str | None = None,
        label_selector: Selector | None = None,
        field_selector: FieldSelector | None = None,
    ) -> tuple[builtins.list[Obj], int]:
        """Matching objects in (namespace, name) order, and the resourceVersion of the snapshot."""
        docs, rv = self.list_docs(
            key, namespace=namespace, label_selector=label_selector, field_selector=field_selector
        )
        return [d.obj for d in docs], rv

    def list_docs(
        self,
        key: str,
        *,
        namespace: str | None = None,
        label_selector: Selector | None = None,
        field_selector: FieldSelector | None = None,
    ) -> tuple[builtins.list[Doc], int]:
        """``list`` returning ``Doc``s, for callers that want the cached encoding."""
        table = self.table(key)
        if not table.rt.namespaced:
            namespace = None
        fields = self.check_fields(table.rt, field_selector)
        exact = {p: v for p, op, v in fields.requirements if op == "="} if fields else {}
        if namespace is None and "metadata.namespace" in exact:
            namespace = exact["metadata.namespace"]
        docs = table.docs(table.candidates(namespace, exact))
        labels = None if label_selector is None or label_selector.empty else label_selector
        if labels is None and fields is None:
            return list(docs), self._rv
        out: builtins.list[Doc] = []
        for doc in docs:
            obj = doc.peek()
            if labels is not None and not labels.matches(obj["metadata"].get("labels")):
                continue
            if fields is not None and not fields.matches(partial(strategy.field_value, obj)):
                continue
            out.append(doc)
        return out, self._rv

    def check_fields(self, rt: ResourceType, selector: FieldSelector | None) -> FieldSelector | None:
        """``selector`` if every field it names is selectable on ``rt``; ``BadRequest`` otherwise."""
        if selector is None or selector.empty:
            return None
        allowed = rt.selectable_fields()
        for path in selector.fields():
            if path not in allowed:
                raise BadRequest(f'field label not supported: "{path}" for {rt.kind}')
        return selector

    def watchers(self, key: str | None = None) -> builtins.list[Watcher]:
        """Open watchers (of one type, or all)."""
        tables = [self.table(key)] if key is not None else list(self._tables.values())
        return [w for t in tables for w in t.watchers]

