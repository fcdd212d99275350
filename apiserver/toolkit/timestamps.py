"""Timestamps as Kubernetes writes them in objects: RFC 3339, UTC, whole seconds."""

from __future__ import annotations

from datetime import UTC, datetime


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
