"""Discovery, OpenAPI and Table documents: what kubectl reads to understand the simulator.

Pure functions over the served resource types (duck-typed: ``dsctl_sim.registry.ResourceType``
or anything with ``group``, ``version``, ``kind``, ``plural``, ``namespaced``, ``list_kind``,
``short_names``, ``has_status``; ``versions``, ``singular``, ``verbs``, ``categories`` and
``subresources`` are used when present). Entry points:

- ``api_versions(*, server_address=None)`` → ``/api`` (``APIVersions``).
- ``api_group_list(resources)`` → ``/apis``; ``api_group(resources, group)`` → ``/apis/<g>``.
- ``api_resource_list(resources, group, version)`` → ``/api/v1``, ``/apis/<g>/<v>``, with
  subresources (``pods/status``, ``pods/binding``, ``daemonsets/status``...), verbs,
  ``shortNames`` and ``categories``.
- ``aggregated_discovery(resources, *, core)`` → ``apidiscovery.k8s.io/v2``
  ``APIGroupDiscoveryList`` for ``/api`` (``core=True``) or ``/apis``; serve it with
  ``AGGREGATED_CONTENT_TYPE`` when the ``Accept`` header asks for it.
- ``openapi_v3_root(resources)`` → ``/openapi/v3``; ``openapi_v3_doc(resources, group, version)``
  → ``/openapi/v3/apis/<g>/<v>`` (``group=""`` for ``api/v1``). Enough for strict
  ``kubectl apply`` of built-in kinds and custom resources.
- ``openapi_v2_doc(resources)`` → ``/openapi/v2`` as JSON; ``openapi_v2_protobuf(doc)`` → the
  same as the protobuf message kubectl asks for (``wants_protobuf(accept)``), served as
  ``OPENAPI_V2_PROTOBUF``.
- ``to_table(resource, objects, now, *, include_object="Metadata", include_headers=True,
  printer_columns=None)`` → ``meta.k8s.io/v1`` Table with kubectl's columns; ``now`` is epoch
  seconds; ``printer_columns`` are the CRD version's ``additionalPrinterColumns``.
"""

from dsctl_sim.discovery.apis import (
    AGGREGATED_CONTENT_TYPE,
    aggregated_discovery,
    api_group,
    api_group_list,
    api_resource_list,
    api_versions,
)
from dsctl_sim.discovery.openapi import openapi_v3_doc, openapi_v3_root
from dsctl_sim.discovery.openapiv2 import PROTOBUF_CONTENT_TYPE as OPENAPI_V2_PROTOBUF
from dsctl_sim.discovery.openapiv2 import openapi_v2_doc, wants_protobuf
from dsctl_sim.discovery.openapiv2 import to_protobuf as openapi_v2_protobuf
from dsctl_sim.discovery.printers import human_duration
from dsctl_sim.discovery.tables import jsonpath_first, to_table

__all__ = [
    "AGGREGATED_CONTENT_TYPE",
    "OPENAPI_V2_PROTOBUF",
    "aggregated_discovery",
    "api_group",
    "api_group_list",
    "api_resource_list",
    "api_versions",
    "human_duration",
    "jsonpath_first",
    "openapi_v2_doc",
    "openapi_v2_protobuf",
    "openapi_v3_doc",
    "openapi_v3_root",
    "to_table",
    "wants_protobuf",
]
