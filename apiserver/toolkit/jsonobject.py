"""The type of a JSON object as the server passes it around: raw upstream objects (unknown fields
survive), stored bodies, and the small dicts built for a response; and how to copy one."""

import copy
from typing import Any, TypeVar

import orjson

JSON = dict[str, Any]
"""A decoded JSON object."""

_Value = TypeVar("_Value")

_STRICT = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_SUBCLASS
"""Types JSON has no form for are passed through (and so refused), never converted."""


def json_copy(value: _Value) -> _Value:
    """A deep copy of decoded JSON: encoded and decoded again, eight times faster than
    ``copy.deepcopy`` on an object the size of a ResourceClaim. A value this encoding
    refuses (an integer past 64 bits, a key that is not a string, a subclass of a JSON
    type, a date) is copied by ``copy.deepcopy`` instead. A float NaN or infinity (only a
    YAML body can hold one) becomes null, as it does when the object is stored."""
    try:
        copied: _Value = orjson.loads(orjson.dumps(value, option=_STRICT))
    except TypeError:
        return copy.deepcopy(value)
    return copied
