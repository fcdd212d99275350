"""Content negotiation: which representation of an object, list or watch a client asked for.

kubectl asks for ``as=Table``, client-go's metadata client for
``as=PartialObjectMetadata[List]``; everyone else for plain JSON. The first clause of the
``Accept`` header we can satisfy wins; if none can be, the answer is 406.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from enum import Enum

from . import errors


class Shape(Enum):
    OBJECT = "Object"
    TABLE = "Table"
    METADATA = "PartialObjectMetadata"


@dataclass(frozen=True)
class MediaRange:
    type: str
    params: dict[str, str]


def parse_accept(header: str) -> list[MediaRange]:
    ranges = []
    for clause in header.split(","):
        parts = [p.strip() for p in clause.split(";")]
        if not parts[0]:
            continue
        params = {}
        for p in parts[1:]:
            if "=" in p:
                k, v = p.split("=", 1)
                params[k.strip().lower()] = v.strip().strip('"')
        ranges.append(MediaRange(parts[0].lower(), params))
    return ranges


_JSON_TYPES = ("application/json", "application/*", "*/*")
_META_VERSIONS = ("v1", "v1beta1")


@functools.lru_cache(maxsize=256)
def negotiate(header: str | None, *, collection: bool, watch: bool = False) -> Shape:
    """The representation to answer with. ``collection`` for list and watch requests.
    Worked out once per Accept header (clients send the same few with every request)."""
    ranges = parse_accept(header or "") or [MediaRange("application/json", {})]
    for media in ranges:
        if media.type not in _JSON_TYPES:
            continue
        as_kind = media.params.get("as")
        if as_kind is None:
            return Shape.OBJECT
        if media.params.get("g") != "meta.k8s.io" or media.params.get("v") not in _META_VERSIONS:
            continue
        if as_kind == "Table":
            return Shape.TABLE
        if as_kind == "PartialObjectMetadata" and (not collection or watch):
            return Shape.METADATA
        if as_kind == "PartialObjectMetadataList" and collection and not watch:
            return Shape.METADATA
    raise errors.not_acceptable(
        "only the following media types are accepted: application/json, "
        "application/json;as=Table;g=meta.k8s.io;v=v1, "
        "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1, "
        "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
    )
