"""Generic Kubernetes REST semantics (DESIGN §4), written once and driven by a per-kind strategy.

This is the package's face: other layers import what they use from here, never from its modules
(an import-linter contract keeps it so). Two modules are vocabularies read as namespaces and
imported as such: ``errors`` (the ``Status`` errors, ``errors.bad_request(...)``) and ``user``
(who is asking; light, so the scheduler shim can name a user without loading the store). Inside
the package, modules import their siblings directly.
"""

from ..toolkit import MERGE_PATCH
from .action import ActionSubresource
from .admission import CREATE, DELETE, UPDATE, AdmissionChain, AdmissionPlugin, AdmissionRequest
from .computed import ComputedResource
from .conversion import Conversion, ConvertingStore
from .discovery import V2_CONTENT_TYPE, ActionEntry, Discovery, wants_aggregated
from .discovery import etag as discovery_etag
from .handlers import MAX_BODY_BYTES, ResourceHandler, json_response, status_response
from .openapi import ServedKind, v2_document, v3_document
from .openapi import encode as encode_openapi
from .openapiproto import MEDIA_TYPES as OPENAPI_V2_PROTOBUF
from .openapiproto import encode_document as encode_openapi_v2_protobuf
from .patching import APPLY_PATCH, JSON_PATCH, STRATEGIC_MERGE_PATCH
from .registry import DeleteOptions, ListOptions, Registry, WriteOptions
from .requestinfo import RequestInfo, parse_request
from .resource import READ_ONLY_VERBS, ResourceType
from .rest import Resource
from .review import ReviewResource, ReviewStrategy
from .selectors import (
    FieldGetter,
    FieldRequirement,
    LabelRequirement,
    parse_field_selector,
    parse_label_selector,
)
from .status import StatusSubresource, StatusUpdate
from .strategy import Action, ExclusiveKey, Strategy
from .table import AGE_COLUMN, NAME_COLUMN, Column, human_age, human_duration, path, string_at
from .watch import ABORT_EXTENSION, WatchItem, WatchRequest, WatchStream

__all__ = [
    "ABORT_EXTENSION",
    "AGE_COLUMN",
    "APPLY_PATCH",
    "CREATE",
    "DELETE",
    "JSON_PATCH",
    "MAX_BODY_BYTES",
    "MERGE_PATCH",
    "NAME_COLUMN",
    "OPENAPI_V2_PROTOBUF",
    "READ_ONLY_VERBS",
    "STRATEGIC_MERGE_PATCH",
    "UPDATE",
    "V2_CONTENT_TYPE",
    "Action",
    "ActionEntry",
    "ActionSubresource",
    "AdmissionChain",
    "AdmissionPlugin",
    "AdmissionRequest",
    "Column",
    "ComputedResource",
    "Conversion",
    "ConvertingStore",
    "DeleteOptions",
    "Discovery",
    "ExclusiveKey",
    "FieldGetter",
    "FieldRequirement",
    "LabelRequirement",
    "ListOptions",
    "Registry",
    "RequestInfo",
    "Resource",
    "ResourceHandler",
    "ResourceType",
    "ReviewResource",
    "ReviewStrategy",
    "ServedKind",
    "StatusSubresource",
    "StatusUpdate",
    "Strategy",
    "WatchItem",
    "WatchRequest",
    "WatchStream",
    "WriteOptions",
    "discovery_etag",
    "encode_openapi",
    "encode_openapi_v2_protobuf",
    "human_age",
    "human_duration",
    "json_response",
    "parse_field_selector",
    "parse_label_selector",
    "parse_request",
    "path",
    "status_response",
    "string_at",
    "v2_document",
    "v3_document",
    "wants_aggregated",
]
