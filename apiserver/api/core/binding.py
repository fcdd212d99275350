"""Core ``v1`` Binding: the body of ``pods/binding``, naming the node a pod is bound to."""

from __future__ import annotations

from pydantic import Field

from ..base import APIModel
from ..meta import KindModel


class ObjectReference(APIModel):
    """The object a binding points to (a Node)."""

    kind: str | None = Field(None, description="Kind of the referent.")
    name: str | None = Field(None, description="Name of the referent.")
    namespace: str | None = Field(None, description="Namespace of the referent.")
    api_version: str | None = Field(None, description="API version of the referent.")
    uid: str | None = Field(None, description="UID of the referent.")


class Binding(KindModel):
    """Ties a pod to a node: ``metadata.name`` is the pod's, ``target`` the node."""

    target: ObjectReference = Field(description="The target object to bind to.")
