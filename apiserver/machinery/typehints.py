"""Reading the type annotations of pydantic fields: the one type behind ``Annotated`` and
``Optional`` wrappers, which both the field-path rendering of decode errors and the merge
schema of server-side apply need."""

from __future__ import annotations

import types
import typing
from typing import Any, Union, get_args, get_origin


def unwrap_optional(tp: Any) -> Any:
    """``tp`` without ``Annotated`` metadata and, when it is ``X | None``, without the
    ``None``, at any depth; a union of several types is returned as it is."""
    origin = get_origin(tp)
    if origin is typing.Annotated:
        return unwrap_optional(get_args(tp)[0])
    if origin in (Union, types.UnionType):
        args = [a for a in get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return unwrap_optional(args[0])
    return tp


def is_union(tp: Any) -> bool:
    """Whether ``tp`` is a union (``X | Y`` or ``Union[X, Y]``)."""
    return get_origin(tp) in (Union, types.UnionType)
