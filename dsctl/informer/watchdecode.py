"""Watch lines to prepared events: a pod event decoded straight to its projection.

A reflector caches *prepared* objects: apiVersion and kind filled in, then projected. Decoding a
whole pod with orjson and projecting it afterwards is most of an informer's time per event: the
decoder builds every object of the pod so that the projection can keep a few of them (ADR 0046).
For a :class:`~dsctl.informer.projections.PodProjection`, this module decodes
each line with msgspec against a schema of exactly the fields that projection reads; the parser
skips everything else (containers, volumes, managedFields...) without building it. Labels,
ownerReferences and the affinity, shared between pods by the projection anyway, are not even
decoded when seen before: their raw JSON is looked up in a bounded alias table that names the
projection's shared value. The whole lines of a received chunk are decoded in one call (msgspec's
``decode_lines``); a chunk holding any line of another shape is decoded line by line instead.
A list page is decoded the same way, all its pods in one call (ADR 0205); a page holding any pod
of another shape is decoded whole with orjson and its items prepared as the reflector prepares
any list's.

Contract, pinned by tests: for every line, the event decoded here equals what the general path
gives, ``decode_event`` (orjson) then apiVersion/kind filled in then the projection. The schema
is strict: a null, or a value of a type the API never sends, fails validation, and so does a
syntax error; every such line, and every event that is not ADDED, MODIFIED or DELETED, goes
through the general path. Unusual lines cost what they cost before and are decoded identically;
ERROR events and malformed lines raise exactly what ``decode_event`` raises. Two exceptions,
both about bytes no API server sends (Go's encoder writes valid UTF-8, finite numbers and one
event per line): the fields skipped are scanned, not validated, so invalid UTF-8 or an
out-of-range number inside, say, a container's spec decodes here where orjson refuses the
line; and the run decoder reads a chunk as JSON values separated by whitespace, so two events
on one line, or one event broken across lines, decode as the events they are where the line
decoder refuses them. Neither loses or alters an event.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Annotated, Any, Literal, NamedTuple, TypedDict

import msgspec
import orjson

from dsctl.informer.projections import (
    POD_SPECS,
    POD_STATUSES,
    READY_CONDITIONS,
    RESTART_COUNTS,
    PodProjection,
    SharedValues,
    affinity_of,
    ready_condition,
    restart_counts,
    shared_labels,
    shared_owner_refs,
)
from dsctl.kube.watch import LineDecoder, RunDecoder, decode_event

__all__ = [
    "ListPage",
    "PageDecoder",
    "WatchDecoder",
    "WatchEvent",
    "event_decoder",
    "general_decoder",
    "general_page_decoder",
    "lean_pod_decoder",
]

Obj = dict[str, Any]
WatchEvent = tuple[str, Obj]
"""``(type, object)``: for ADDED, MODIFIED and DELETED the object is prepared (apiVersion and
kind filled in, transformed); a BOOKMARK's object is as received (its annotations matter)."""

_intern = sys.intern
_ABSENT = 0
"""Default for a spec or status that is not there: falsy, and never a decoded value (those
are dicts or None)."""


def general_decoder(prepare: Callable[[Obj], Obj]) -> LineDecoder[WatchEvent]:
    """Decode with :func:`~dsctl.kube.watch.decode_event`, then ``prepare`` the object."""

    def decode(line: bytes | memoryview) -> WatchEvent:
        event = decode_event(line)
        kind: str = event["type"]
        obj: Obj = event["object"]
        return (kind, obj) if kind == "BOOKMARK" else (kind, prepare(obj))

    return decode


class ListPage(NamedTuple):
    """One page of a paginated list: its ``metadata.resourceVersion`` and ``metadata.continue``
    (empty when absent) and its items, already prepared when ``prepared`` (else as received)."""

    resource_version: str
    continue_: str
    items: list[Obj]
    prepared: bool


PageDecoder = Callable[[bytes], ListPage]
"""Decodes a list response body to a :class:`ListPage`; raises what ``decode_json`` raises
for a body that is not JSON."""


def general_page_decoder(body: bytes) -> ListPage:
    """The page as orjson decodes it; its items left for the reflector to prepare (it skips
    those whose resourceVersion it already caches)."""
    page = orjson.loads(body)
    if page.__class__ is not dict:
        page = {"items": page}
    meta = page.get("metadata") or {}
    return ListPage(meta.get("resourceVersion") or "", meta.get("continue") or "",
                    page.get("items") or [], False)


def event_decoder(
    transform: Callable[[Obj], Obj] | None, *, prepare: Callable[[Obj], Obj], api_version: str,
    kind: str,
) -> WatchDecoder:
    """The fastest decoders that give what ``prepare`` (fill in apiVersion/kind, then
    ``transform``) gives: the lean ones for a pod projection, else the general one."""
    general = general_decoder(prepare)
    if isinstance(transform, PodProjection):
        return lean_pod_decoder(transform, general=general, api_version=api_version, kind=kind)
    return WatchDecoder(general, page=general_page_decoder)


# -- the schema: only what PodProjection reads --------------------------------------------
#
# The pod, its spec and its status decode to dicts (TypedDicts) that become the cached dicts
# once their few derived fields are swapped in: fewer objects built per event than structs
# copied into fresh dicts.

# Values from a closed set decode as Literals: msgspec hands out the one shared constant (what
# interning would give) instead of allocating a string; any other value takes the general path.
_ConditionStatus = Literal["True", "False", "Unknown"]
_Phase = Literal["Pending", "Running", "Succeeded", "Failed", "Unknown"]


class _Condition(msgspec.Struct, gc=False):
    type: str | None = None
    status: _ConditionStatus | None = None
    lastTransitionTime: str | None = None


# orjson decodes an integer beyond 64 bits as a float; a count outside int64 takes the general
# path, which decides.
_Int64 = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]


class _ContainerStatus(msgspec.Struct, gc=False):
    name: str | None = None
    restartCount: _Int64 | None = None


# The functional TypedDict form, called through Any: some schemas depend on the projection
# (kept annotations, whose names are not identifiers; the filled-in apiVersion and kind).
_typed_dict: Any = TypedDict

# spec.affinity is looked up by its raw JSON: a daemon pod's is the same for every pod on a node.
_SPEC = _typed_dict("PodSpec", {"nodeName": str, "affinity": msgspec.Raw}, total=False)
_STATUS = _typed_dict("PodStatus", {
    "phase": _Phase | None,
    "conditions": list[_Condition] | None,
    "containerStatuses": list[_ContainerStatus] | None,
}, total=False)


def _metadata_schema(annotations: tuple[str, ...]) -> Any:
    """Metadata decodes to a dict holding only the projected keys: it is the cached dict."""
    fields: dict[str, Any] = {
        "name": str, "namespace": str, "uid": str, "resourceVersion": str,
        "creationTimestamp": str, "deletionTimestamp": str,
        "labels": msgspec.Raw, "ownerReferences": msgspec.Raw,
    }
    if annotations:
        fields["annotations"] = _typed_dict(
            "KeptAnnotations", dict.fromkeys(annotations, str), total=False
        )
    return _typed_dict("PodMetadata", fields, total=False)


def _pod_schema(metadata: Any, *, api_version: str, kind: str) -> Any:
    """A pod of this apiVersion and kind (the types and names the informer fills in, so an
    object that names others takes the general path)."""
    return _typed_dict("Pod", {
        "apiVersion": Literal[api_version],
        "kind": Literal[kind],
        "metadata": metadata | None,
        "spec": _SPEC | None,
        "status": _STATUS | None,
    }, total=False)


def _event_schema(pod: Any) -> Any:
    """An ADDED, MODIFIED or DELETED event of such a pod."""
    # gc=False: an event lives for one decode and never holds a cycle.
    return msgspec.defstruct(
        "PodEvent", [("type", Literal["ADDED", "MODIFIED", "DELETED"]), ("object", pod)], gc=False,
    )


class _ListMeta(msgspec.Struct, gc=False):
    resourceVersion: str | None = None
    continue_: str | None = msgspec.field(default=None, name="continue")


def _list_schema(pod: Any) -> Any:
    """A list response of such pods: its kind and apiVersion are not read (nor are they by
    the general path), its metadata only for the resourceVersion and the continue token."""
    return msgspec.defstruct(
        "PodListPage", [("metadata", _ListMeta | None, None), ("items", list[pod] | None, None)],
        gc=False,
    )


# -- raw JSON → the projection's shared value ---------------------------------------------


NOTHING: Any = object()
"""What an alias table holds for raw JSON the projection keeps nothing of; truthy, so a hit
short-circuits ``table.get(key) or miss(key)``."""


class _RawAliases:
    """Raw JSON of a sub-object → the projection's shared value for it, so a repeated value
    (the labels of one DaemonSet revision, its ownerReferences, a node's target affinity) is
    neither decoded nor rehashed field by field. Equal bytes are an equal value, so the alias
    is exact; the first sight decodes and asks the projection's own function."""

    def __init__(self, canonical: Callable[[Any], Any]) -> None:
        self._canonical = canonical
        self._values = SharedValues()
        self.table = self._values.table
        """Read it directly (``table.get(bytes(raw))``) on the hot path, :meth:`get` on a miss."""

    def get(self, key: bytes) -> Any:
        """The shared value for this raw JSON, or ``NOTHING`` when the projection keeps none
        (remembered too: a pod's anti-affinity is not re-parsed on each of its events)."""
        found = self.table.get(key)
        if found is None:
            found = self._canonical(orjson.loads(key))
            found = self._values.put(key, NOTHING if found is None else found)
        return found


_LABELS = _RawAliases(shared_labels)
_OWNERS = _RawAliases(shared_owner_refs)
_AFFINITY = _RawAliases(affinity_of)


class WatchDecoder(NamedTuple):
    """The reflector's decoders: one line at a time, and optionally a run of lines at once
    (see :data:`~dsctl.kube.watch.RunDecoder`); both give the same events. ``page`` decodes a
    list response: its items, prepared or not, are what the general path caches once prepared."""

    line: LineDecoder[WatchEvent]
    run: RunDecoder[WatchEvent] | None = None
    page: PageDecoder = general_page_decoder


def lean_pod_decoder(
    projection: PodProjection, *, general: LineDecoder[WatchEvent], api_version: str, kind: str,
) -> WatchDecoder:
    """Decoders equal to ``general`` on every line (see the module docstring), that decode an
    ordinary pod event into its projection without materialising the rest of the pod."""
    annotations = projection.keep_annotations
    filled_api_version = _intern(api_version)
    filled_kind = _intern(kind)
    pod_schema = _pod_schema(_metadata_schema(annotations), api_version=filled_api_version,
                             kind=filled_kind)
    decoder = msgspec.json.Decoder(_event_schema(pod_schema))
    decode_one = decoder.decode
    decode_many = decoder.decode_lines
    decode_list = msgspec.json.Decoder(_list_schema(pod_schema)).decode
    intern = _intern
    # RecursionError: msgspec's nesting limit is below orjson's, which then decides.
    errors = (msgspec.DecodeError, orjson.JSONDecodeError, RecursionError)
    # Hits are read straight from the tables; a miss goes through the owner's function.
    labels, labels_miss = _LABELS.table.get, _LABELS.get
    owners, owners_miss = _OWNERS.table.get, _OWNERS.get
    affinities, affinity_miss = _AFFINITY.table.get, _AFFINITY.get
    ready, ready_miss = READY_CONDITIONS.table.get, ready_condition
    restarts, restarts_miss = RESTART_COUNTS.table.get, restart_counts
    # Keyed as spec_key and status_key key them: the schema makes nodeName and phase strings.
    specs, specs_put = POD_SPECS.table.get, POD_SPECS.put
    statuses, statuses_put = POD_STATUSES.table.get, POD_STATUSES.put

    def project_pod(pod: Obj) -> Obj:
        """PodProjection's rules, field by field, on the schema-decoded pod, whose dicts
        become the cached ones. The schema's Literals (apiVersion, kind, phase, condition
        status) are shared constants already."""
        if "kind" not in pod:  # what the reflector does to an object without a kind
            pod["apiVersion"] = filled_api_version
            pod["kind"] = filled_kind
        meta = pod.get("metadata")
        if meta is None:
            pod["metadata"] = {}
        else:
            if "name" not in meta:
                meta["name"] = None
            value = meta.get("namespace")
            if value is not None:
                meta["namespace"] = intern(value)
            value = meta.get("creationTimestamp")
            if value is not None:
                meta["creationTimestamp"] = intern(value)
            # Labels, owners and the affinity alias alike; written out three times, since a
            # helper call per field is a tenth of a microsecond on every event.
            raw = meta.get("labels")
            if raw is not None:
                key = bytes(raw)
                if (value := labels(key) or labels_miss(key)) is NOTHING:
                    del meta["labels"]
                else:
                    meta["labels"] = value
            raw = meta.get("ownerReferences")
            if raw is not None:
                key = bytes(raw)
                if (value := owners(key) or owners_miss(key)) is NOTHING:
                    del meta["ownerReferences"]
                else:
                    meta["ownerReferences"] = value
            if annotations and "annotations" in meta and not meta["annotations"]:
                del meta["annotations"]
        spec = pod.get("spec", _ABSENT)
        if spec is None:
            del pod["spec"]
        elif spec:
            node = spec.get("nodeName")
            if node:
                spec["nodeName"] = intern(node)
            elif node is not None:
                del spec["nodeName"]  # ""
            raw = spec.get("affinity")
            if raw is not None:
                key = bytes(raw)
                if (value := affinities(key) or affinity_miss(key)) is NOTHING:
                    del spec["affinity"]
                else:
                    spec["affinity"] = value
            # Every DaemonSet's pod on one node has this spec: share it (nodeName is a str here).
            shared = (spec.get("nodeName"), id(spec.get("affinity")))
            pod["spec"] = specs(shared) or specs_put(shared, spec)
        status = pod.get("status", _ABSENT)
        if status is None:
            del pod["status"]
        elif status:
            if "phase" in status and status["phase"] is None:
                del status["phase"]
            conditions = status.pop("conditions", None)
            if conditions:
                for cond in conditions:
                    if cond.type == "Ready":
                        state = (cond.status, cond.lastTransitionTime)
                        status["conditions"] = ready(state) or ready_miss(*state)
                        break
            containers = status.pop("containerStatuses", None)
            if containers:
                pairs: tuple[tuple[Any, Any], ...]
                if len(containers) == 1:  # a daemon pod's usual one container: no loop
                    first = containers[0]
                    pairs = () if first.name is None else ((first.name, first.restartCount),)
                else:
                    pairs = tuple([(c.name, c.restartCount) for c in containers
                                   if c.name is not None])
                status["containerStatuses"] = restarts(pairs) or restarts_miss(pairs)
            alike = (status.get("phase"), id(status.get("conditions")),
                     id(status.get("containerStatuses")))
            pod["status"] = statuses(alike) or statuses_put(alike, status)
        return pod

    def decode(line: bytes | memoryview) -> WatchEvent:
        try:
            event = decode_one(line)
            return event.type, project_pod(event.object)
        except errors:
            return general(line)  # not the ordinary shape (or not JSON): the general path decides

    def decode_run(lines: memoryview) -> list[WatchEvent]:
        # Any line that is not the ordinary shape fails the whole run, which then goes line by line.
        return [(event.type, project_pod(event.object)) for event in decode_many(lines)]

    def decode_page(body: bytes) -> ListPage:
        # One pod of another shape sends the whole page down the general path, which then
        # prepares every item as it would any list's.
        try:
            page = decode_list(body)
        except errors:
            return general_page_decoder(body)
        meta = page.metadata
        items = page.items
        return ListPage(
            (meta.resourceVersion or "") if meta is not None else "",
            (meta.continue_ or "") if meta is not None else "",
            [project_pod(pod) for pod in items] if items else [],
            True,
        )

    return WatchDecoder(decode, decode_run, decode_page)
