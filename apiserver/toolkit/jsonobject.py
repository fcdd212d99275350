"""The type of a JSON object as the server passes it around: raw upstream objects (unknown fields
survive), stored bodies, and the small dicts built for a response."""

from typing import Any

JSON = dict[str, Any]
"""A decoded JSON object."""
