"""A computed kind: get, list and watch over a readable store of its own (a view the server
keeps, such as the Device kind over the device view). It has no writes: the handler answers
them with 405."""

from __future__ import annotations

from .reader import StoreReader


class ComputedResource(StoreReader):
    """Reads as any resource reads; nothing else."""
