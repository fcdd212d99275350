"""Typed models of every kind we serve, with their validation and defaults. No I/O here.

This is the package's face for what every group shares (the model base, object metadata, field
errors, name rules, the protobuf envelope); each group's kinds answer through their own face:
``api.resource``, ``api.core``, ``api.rbac``, ``api.authentication``, ``api.authorization``,
``api.apiextensions``. Other layers import from these faces, never from the modules behind them
(an import-linter contract keeps it so); ``field`` is a vocabulary read as a namespace
(``field.invalid(...)``) and imported as such. Inside the package, modules import their siblings
directly.
"""

from .base import APIModel
from .field import ErrorType, FieldError, Path, shorten
from .meta import (
    CONDITION_MESSAGE_WRITTEN_MAX,
    Condition,
    DeleteOptions,
    KindModel,
    ObjectMeta,
    Preconditions,
)
from .metavalidation import (
    TOTAL_ANNOTATION_SIZE_LIMIT,
    validate_annotations,
    validate_conditions,
    validate_labels,
    validate_object_meta,
)
from .names import (
    dns1123_label_errors,
    dns1123_subdomain_errors,
    label_value_errors,
    qualified_name_errors,
)
from .protobuf import MAGIC as PROTOBUF_MAGIC
from .protobuf import Message, ProtobufError
from .protobuf import decode as decode_protobuf
from .protobuf import envelope as protobuf_envelope

__all__ = [
    "CONDITION_MESSAGE_WRITTEN_MAX",
    "PROTOBUF_MAGIC",
    "TOTAL_ANNOTATION_SIZE_LIMIT",
    "APIModel",
    "Condition",
    "DeleteOptions",
    "ErrorType",
    "FieldError",
    "KindModel",
    "Message",
    "ObjectMeta",
    "Path",
    "Preconditions",
    "ProtobufError",
    "decode_protobuf",
    "dns1123_label_errors",
    "dns1123_subdomain_errors",
    "label_value_errors",
    "protobuf_envelope",
    "qualified_name_errors",
    "shorten",
    "validate_annotations",
    "validate_conditions",
    "validate_labels",
    "validate_object_meta",
]
