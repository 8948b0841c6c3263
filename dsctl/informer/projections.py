"""Projections: cache only the fields a DaemonSet controller reads, in the same JSON shape.

At 5,000 nodes and 150,000 pods the pod cache dominates the controller's memory. A projection
keeps the original nesting (``metadata.labels``, ``spec.nodeName``, ``status.conditions``...)
so domain code reads a projected object exactly like a full one, and drops everything else
(containers, volumes, managedFields, container statuses...).

Two more savings (``benchmarks/informer_memory.py`` measures them; ADR 0006):

- strings that repeat across objects (label keys and values, namespaces, node names, phases)
  are interned, so 150,000 copies of ``controller-revision-hash`` cost one string;
- sub-objects that are equal across many pods are **shared**: the labels of the pods of one
  DaemonSet revision, their ownerReferences, the target-node affinity of all pods on one node,
  and equal Ready conditions; then the whole kept ``spec`` of the pods on one node, and the
  whole kept ``status`` of pods Ready since the same moment (ADR 0206). Each is looked up in a
  bounded canonicalization table, so a projected pod owns only two dicts (itself and its
  metadata) and its unique strings.

Kept for pods (and ``apiVersion``/``kind``, which informers always fill in):

- ``metadata``: name, namespace, uid, resourceVersion, labels, ownerReferences,
  creationTimestamp, deletionTimestamp, plus the annotations named in ``keep_annotations``;
- ``spec``: nodeName, and ``affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution``
  (where a DaemonSet pod records its target node before it is bound);
- ``status``: phase, the ``Ready`` condition (type, status, lastTransitionTime), and each
  container status's ``name`` and ``restartCount`` (an in-place update is done once the
  patched containers restarted; shared, so pods with equal counts store one list).

Kept for nodes:

- ``metadata``: name, uid, resourceVersion, labels, creationTimestamp, deletionTimestamp;
- ``spec``: taints, unschedulable;
- ``status``: the ``Ready`` condition (type, status, lastTransitionTime; and its message while
  it is not True: the kubelet's graceful shutdown says so there). Its ``lastHeartbeatTime``
  is dropped, so a heartbeat leaves the projection as it was.

**Never mutate projected objects**: besides being cached, their sub-objects are shared between
many objects, so a change would show up in all of them. Copy first (``copy.deepcopy``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Hashable, Iterable
from typing import Any

import orjson

__all__ = [
    "POD_SPECS",
    "POD_STATUSES",
    "READY_CONDITIONS",
    "RESTART_COUNTS",
    "PodProjection",
    "SharedValues",
    "affinity_of",
    "make_pod_projection",
    "project_node",
    "project_pod",
    "ready_condition",
    "required_node_affinity",
    "restart_counts",
    "shared_labels",
    "shared_owner_refs",
    "shared_spec",
    "shared_status",
    "spec_key",
    "status_key",
]

Obj = dict[str, Any]
_intern = sys.intern
_str = str
_CONTAINERS = (dict, list)


def _refcount_of(table: dict[Hashable, Any], key: Hashable) -> int:
    return sys.getrefcount(table[key])


_ONLY_THE_TABLE = _refcount_of({None: {}}, None)
"""What :func:`_refcount_of` reports for a value that nothing but its table holds."""

_SWEEP_STEP = 64
"""Entries a sweep examines at each insertion: it ends within a sixty-fourth of the table's
insertions, so the table outgrows its bound by as little while it runs."""


class SharedValues:
    """A bounded table of canonical read-only values, so equal sub-objects are stored once.

    Once it holds ``max_entries`` values a sweep begins: the containers that something besides
    the table still holds (a cached object, another table's value) stay, the rest go. The sweep
    is spread over the insertions that follow, ``_SWEEP_STEP`` entries at each, because the
    tables keyed by node are as large as the cluster, and one pass over all of them would stop
    the event loop for as long as it took, at 100,000 nodes for hundreds of milliseconds on the
    node join that happened to cross the bound. When it ends, the bound becomes twice what the
    table holds (never below ``min_entries``). So a table keyed by node keeps sharing at any
    cluster size, while values of departed nodes and old revisions go. Values handed out stay
    valid either way (they are ordinary objects).
    """

    def __init__(self, max_entries: int = 100_000) -> None:
        self.min_entries = max_entries
        self.max_entries = max_entries
        self.table: dict[Hashable, Any] = {}
        """Read-only for callers: a hot path may look a key up here directly (the dict is
        never replaced, only swept), and call :meth:`get` or :meth:`put` on a miss."""
        self._unswept: list[Hashable] = []
        """The keys the running sweep has still to examine; empty between sweeps."""

    def get(self, key: Hashable, make: Callable[[], Any]) -> Any:
        """The canonical value for ``key``, built by ``make()`` the first time."""
        found = self.table.get(key)
        if found is None:
            found = self.put(key, make())
        return found

    def share(self, key: Hashable, value: Any) -> Any:
        """The canonical value for ``key``: the one already held, else ``value``, held from now on."""
        found = self.table.get(key)
        return self.put(key, value) if found is None else found

    def put(self, key: Hashable, value: Any) -> Any:
        """Make ``value`` the canonical value for ``key`` (absent until now); return it."""
        if self._unswept or len(self.table) >= self.max_entries:
            self._sweep_step()
        self.table[key] = value
        return value

    def sweep(self) -> None:
        """Finish the running sweep, or run a whole one, at once."""
        self._begin()
        while self._unswept:
            self._sweep_step()

    @property
    def sweeping(self) -> bool:
        """True while a sweep has entries left to examine."""
        return bool(self._unswept)

    def _begin(self) -> None:
        if not self._unswept:
            self._unswept = list(self.table)

    def _sweep_step(self) -> None:
        self._begin()
        table, unswept = self.table, self._unswept
        for _ in range(min(_SWEEP_STEP, len(unswept))):
            key = unswept.pop()
            if key not in table:
                continue
            if table[key].__class__ not in _CONTAINERS or _refcount_of(table, key) <= _ONLY_THE_TABLE:
                del table[key]
        if not unswept:
            self.max_entries = max(self.min_entries, 2 * len(table))

    def __len__(self) -> int:
        return len(self.table)


def _interned_map(values: dict[str, Any]) -> Obj:
    return {
        _intern(k): (_intern(v) if v.__class__ is _str else v) for k, v in values.items()
    }


# One table per kind of sub-object, so a key is the bare content (no tag to build).
_LABELS = SharedValues()
_OWNERS = SharedValues()
_READY = SharedValues()
_AFFINITY = SharedValues()
_RESTARTS = SharedValues()
_SPECS = SharedValues()
_STATUSES = SharedValues()
READY_CONDITIONS = _READY
"""Ready conditions by ``(status, lastTransitionTime)`` (see :func:`ready_condition`)."""
RESTART_COUNTS = _RESTARTS
"""containerStatuses lists by their ``(name, restartCount)`` pairs (see :func:`restart_counts`)."""
POD_SPECS = _SPECS
"""Projected pod specs by :func:`spec_key` (see :func:`shared_spec`)."""
POD_STATUSES = _STATUSES
"""Projected pod statuses by :func:`status_key` (see :func:`shared_status`)."""


def spec_key(node: Any, affinity: Any) -> tuple[Any, int] | None:
    """The key of a projected pod spec holding this nodeName and kept affinity (None for
    absent), or None when it is not shared (a nodeName that is not a string).

    The affinity, itself a shared value, is named by its identity: the table's value holds
    it, so no other object has that identity while the key is in the table."""
    if node is not None and node.__class__ is not _str:
        return None
    return node, id(affinity)


def shared_spec(spec: Obj) -> Obj:
    """The shared copy of a projected pod spec: the pods of every DaemonSet on one node have
    equal ones (the node's name, and the affinity that targets it)."""
    key = spec_key(spec.get("nodeName"), spec.get("affinity"))
    if key is None:
        return spec
    return _SPECS.share(key, spec)  # type: ignore[no-any-return]


def status_key(phase: Any, conditions: Any, containers: Any) -> tuple[Any, int, int] | None:
    """The key of a projected pod status holding this phase, kept conditions and container
    restart counts (None for absent; the last two are shared values, named by identity as in
    :func:`spec_key`), or None when it is not shared (a phase that is not a string)."""
    if phase is not None and phase.__class__ is not _str:
        return None
    return phase, id(conditions), id(containers)


def shared_status(status: Obj) -> Obj:
    """The shared copy of a projected pod status: pods that became Ready in the same second
    with equal restart counts have equal ones."""
    key = status_key(status.get("phase"), status.get("conditions"), status.get("containerStatuses"))
    if key is None:
        return status
    return _STATUSES.share(key, status)  # type: ignore[no-any-return]


def shared_labels(labels: Any) -> Obj | None:
    """The shared, interned copy of a labels map (None when empty or not a map)."""
    if not labels or labels.__class__ is not dict:
        return None
    try:
        key = tuple(labels.items())
        found = _LABELS.table.get(key)
    except TypeError:  # a non-string value: not hashable, keep a private copy
        return _interned_map(labels)
    if found is None:
        found = _LABELS.put(key, _interned_map(labels))
    return found  # type: ignore[no-any-return]


def shared_owner_refs(refs: Any) -> list[Obj] | None:
    """The shared, interned copy of an ownerReferences list (None when empty or not a list)."""
    if not refs or refs.__class__ is not list:
        return None
    try:
        key = tuple([tuple(r.items()) for r in refs])
        found = _OWNERS.table.get(key)
    except (AttributeError, TypeError):
        return [_interned_map(r) for r in refs if isinstance(r, dict)]
    if found is None:
        found = _OWNERS.put(key, [_interned_map(r) for r in refs])
    return found  # type: ignore[no-any-return]


def _ready_condition(status: Any) -> list[Obj] | None:
    conditions = status.get("conditions") if status.__class__ is dict else None
    if not conditions or conditions.__class__ is not list:
        return None
    for cond in conditions:
        if cond.__class__ is dict and cond.get("type") == "Ready":
            return ready_condition(cond.get("status"), cond.get("lastTransitionTime"))
    return None


def ready_condition(state: Any, since: Any) -> list[Obj]:
    """The shared one-element ``conditions`` list of a Ready condition in this state."""
    try:
        key = (state, since)
        found = _READY.table.get(key)
    except TypeError:
        found = None
        key = None
    if found is None:
        made: Obj = {"type": "Ready", "status": state}
        if since is not None:
            made["lastTransitionTime"] = since
        found = [made] if key is None else _READY.put(key, [made])
    return found


def _restart_counts(status: Obj) -> list[Obj] | None:
    statuses = status.get("containerStatuses")
    if not statuses or statuses.__class__ is not list:
        return None
    return restart_counts(tuple(
        (name, s.get("restartCount"))
        for s in statuses
        if s.__class__ is dict and (name := s.get("name")).__class__ is _str
    ))


def restart_counts(kept: tuple[tuple[str, Any], ...]) -> list[Obj]:
    """The shared ``containerStatuses`` list for these (name, restartCount) pairs."""

    def make() -> list[Obj]:
        return [{"name": _intern(str(n))} if c is None else {"name": _intern(str(n)), "restartCount": c}
                for n, c in kept]

    try:
        return _RESTARTS.get(kept, make)  # type: ignore[no-any-return]
    except TypeError:
        return make()


def _metadata(meta: Any, annotations: tuple[str, ...]) -> Obj:
    if meta.__class__ is not dict:
        return {}
    get = meta.get
    out: Obj = {"name": get("name")}
    value = get("namespace")
    if value is not None:
        out["namespace"] = _intern(value) if value.__class__ is _str else value
    value = get("uid")
    if value is not None:
        out["uid"] = value
    value = get("resourceVersion")
    if value is not None:
        out["resourceVersion"] = value
    value = get("creationTimestamp")
    if value is not None:
        out["creationTimestamp"] = _intern(value) if value.__class__ is _str else value
    value = get("deletionTimestamp")
    if value is not None:
        out["deletionTimestamp"] = value
    labels = shared_labels(get("labels"))
    refs = shared_owner_refs(get("ownerReferences"))
    if labels is not None:
        out["labels"] = labels
    if refs is not None:
        out["ownerReferences"] = refs
    if annotations:
        source = get("annotations")
        if source.__class__ is dict:
            kept = {_intern(k): source[k] for k in annotations if k in source}
            if kept:
                out["annotations"] = kept
    return out


_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"


def _target_node(required: Any) -> str | None:
    """The node of the one-term affinity a DaemonSet controller writes
    (``matchFields: [{key: metadata.name, operator: In, values: [node]}]``), else None.

    That shape is nearly every daemon pod's, and naming it by its node is cheaper than
    encoding it; any other shape is keyed by its JSON (bytes, never equal to a str key)."""
    if required.__class__ is not dict or len(required) != 1:
        return None
    terms = required.get("nodeSelectorTerms")
    if terms.__class__ is not list or len(terms) != 1:
        return None
    term = terms[0]
    if term.__class__ is not dict or len(term) != 1:
        return None
    fields = term.get("matchFields")
    if fields.__class__ is not list or len(fields) != 1:
        return None
    req = fields[0]
    if (req.__class__ is not dict or len(req) != 3 or req.get("key") != "metadata.name"
            or req.get("operator") != "In"):
        return None
    values = req.get("values")
    if values.__class__ is not list or len(values) != 1 or values[0].__class__ is not str:
        return None
    return values[0]


def affinity_of(affinity: Any) -> Obj | None:
    """The shared kept ``affinity`` of a pod whose ``spec.affinity`` is ``affinity`` (any
    JSON value): its required node affinity, or None when there is none."""
    if affinity.__class__ is not dict:
        return None
    node_affinity = affinity.get("nodeAffinity")
    if node_affinity.__class__ is not dict:
        return None
    return required_node_affinity(node_affinity.get(_REQUIRED))


def required_node_affinity(required: Any) -> Obj | None:
    """The shared ``affinity`` of a pod whose required node affinity is ``required``."""
    if required is None:
        return None
    key = _target_node(required) or orjson.dumps(required)
    found = _AFFINITY.table.get(key)
    if found is None:
        found = _AFFINITY.put(key, {"nodeAffinity": {_REQUIRED: required}})
    return found  # type: ignore[no-any-return]


def _type_meta(obj: Obj) -> Obj:
    out: Obj = {}
    api_version = obj.get("apiVersion")
    if api_version.__class__ is _str:
        out["apiVersion"] = _intern(api_version)
    kind = obj.get("kind")
    if kind.__class__ is _str:
        out["kind"] = _intern(kind)
    return out


class PodProjection:
    """The pod projection (see the module docstring), keeping also the annotations named in
    ``keep_annotations``. Call it on a pod; the watch path decodes straight to the same result
    (``dsctl.informer.watchdecode``), which is why the kept annotations are an attribute."""

    __slots__ = ("keep_annotations",)

    def __init__(self, *, keep_annotations: Iterable[str] = ()) -> None:
        self.keep_annotations = tuple(keep_annotations)

    def __call__(self, pod: Obj) -> Obj:
        out = _type_meta(pod)
        out["metadata"] = _metadata(pod.get("metadata"), self.keep_annotations)
        spec = pod.get("spec")
        if spec.__class__ is dict:
            kept_spec: Obj = {}
            node = spec.get("nodeName")
            if node:
                kept_spec["nodeName"] = _intern(node) if node.__class__ is _str else node
            affinity = affinity_of(spec.get("affinity"))
            if affinity is not None:
                kept_spec["affinity"] = affinity
            out["spec"] = shared_spec(kept_spec)
        status = pod.get("status")
        if status.__class__ is dict:
            kept_status: Obj = {}
            phase = status.get("phase")
            if phase is not None:
                kept_status["phase"] = _intern(phase) if phase.__class__ is _str else phase
            ready = _ready_condition(status)
            if ready is not None:
                kept_status["conditions"] = ready
            restarts = _restart_counts(status)
            if restarts is not None:
                kept_status["containerStatuses"] = restarts
            out["status"] = shared_status(kept_status)
        return out


def make_pod_projection(*, keep_annotations: Iterable[str] = ()) -> PodProjection:
    """A pod projection that also keeps the named annotations."""
    return PodProjection(keep_annotations=keep_annotations)


project_pod = make_pod_projection()
"""Project a pod to what a DaemonSet controller reads (see the module docstring)."""


def project_node(node: Obj) -> Obj:
    """Project a node to name, labels, taints, unschedulable and the Ready condition."""
    out = _type_meta(node)
    out["metadata"] = _metadata(node.get("metadata"), ())
    spec = node.get("spec")
    if spec.__class__ is dict:
        kept_spec: Obj = {}
        taints = spec.get("taints")
        if taints and taints.__class__ is list:
            kept_spec["taints"] = [_interned_map(t) for t in taints if t.__class__ is dict]
        if spec.get("unschedulable"):
            kept_spec["unschedulable"] = True
        out["spec"] = kept_spec
    ready = _ready_condition(node.get("status"))
    if ready is not None and ready[0].get("status") != "True":
        message = _ready_message(node.get("status"))
        if message:
            ready = [{**ready[0], "message": message}]
    out["status"] = {"conditions": ready} if ready is not None else {}
    return out


def _ready_message(status: Any) -> str:
    for cond in status.get("conditions") or ():
        if cond.__class__ is dict and cond.get("type") == "Ready":
            message = cond.get("message")
            return message if message.__class__ is _str else ""
    return ""
