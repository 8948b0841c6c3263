"""kube-apiserver's defaulting and validation for the resources the simulator serves.

Pure functions, no I/O. The HTTP layer calls, on every create and update (patches included,
after the patch is applied):

``apply_defaults(key: str, obj: dict) -> None``
    Fills defaults in place, like the apiserver's ``SetDefaults_*`` functions plus the pod
    admission defaults (priority, default NoExecute tolerations, service account name).
    Idempotent. ``key`` is the storage key (``"pods"``, ``"apps/daemonsets"``...); unknown
    keys are left alone.

``validate(key: str, obj: dict, old: dict | None, *, subresource: str | None = None) -> list[dict]``
    The ``Status.details.causes`` kube-apiserver would answer with, each
    ``{"field": "spec.selector", "reason": "FieldValueInvalid", "message": "Invalid value: ..."}``;
    an empty list means the object is valid. ``old`` is the stored object on update (immutable
    fields, pod-spec update rules), None on create. ``subresource="status"`` validates only a
    status write (DaemonSet counters); ``"binding"`` skips pod-spec immutability.
    Keys: ``pods``, ``nodes``, ``namespaces``, ``events``, ``events.k8s.io/events``,
    ``apps/daemonsets``, ``apps/controllerrevisions``, ``coordination.k8s.io/leases``,
    ``apiextensions.k8s.io/customresourcedefinitions``; any other key gets the ObjectMeta
    checks only.

``unknown_fields(key: str, obj: dict) -> list[str]`` / ``prune_unknown_fields(key, obj)``
    Fields a built-in type does not declare (``spec.template.spec.containers[0].imagee``).
    kube-apiserver rejects them under ``fieldValidation=Strict`` (plain ``kubectl apply``)
    with ``strict decoding error: unknown field "<path>"`` (several joined by ``, ``), which
    ``strict_decoding_message(paths)`` builds, and drops them under ``Warn`` (with a warning)
    and ``Ignore``, which pruning reproduces. ``dsctl_sim.fieldvalidation`` applies the modes.

``decode_error(key: str, obj: dict) -> str | None``
    encoding/json's message for an integer field whose Go type cannot hold the value
    (``json: cannot unmarshal number 1000000000000000 into Go struct field
    DaemonSetSpec.spec.revisionHistoryLimit of type int32``): kube-apiserver refuses such a
    body while decoding, with 400, before any validation.

Custom resources are validated against their CRD's schema and ``x-kubernetes-validations``
by ``crschema.CustomSchema`` (the CEL rules in ``cel``), which the CRD controller attaches
to the served type.

Also exported: ``Causes`` (the cause-list builder) and ``pull_policy_for(image)``.

Defaulting and the field table live in ``dsctl_api`` (``dsctl_api.defaults``,
``dsctl_api.strictfields``): ``dsctl plan`` defaults a manifest and checks its fields with the
same code before it predicts a revision hash.
"""

from dsctl_api.defaults import apply_defaults, pull_policy_for
from dsctl_api.strictfields import prune_unknown_fields, strict_decoding_message, unknown_fields
from dsctl_sim.validation.causes import Causes
from dsctl_sim.validation.dispatch import validate
from dsctl_sim.validation.ranges import decode_error

__all__ = [
    "Causes",
    "apply_defaults",
    "decode_error",
    "prune_unknown_fields",
    "pull_policy_for",
    "strict_decoding_message",
    "unknown_fields",
    "validate",
]
