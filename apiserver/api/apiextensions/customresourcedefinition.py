"""``apiextensions.k8s.io/v1`` CustomResourceDefinition, as far as a reader of the list needs.

Standalone mode serves no custom resources, so it only ever lists none of these; the shape
is the upstream one for the fields that say which kind a definition adds.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..base import APIModel
from ..meta import KindModel


class CustomResourceDefinitionNames(APIModel):
    """The names the custom resource is served under."""

    plural: str = Field(description="The plural name of the resource to serve.")
    singular: str | None = Field(None, description="The singular name of the resource.")
    kind: str = Field(description="The serialized kind of the resource.")
    list_kind: str | None = Field(None, description="The serialized kind of the list.")
    short_names: list[str] | None = Field(None, description="Short names for the resource.")


class CustomResourceDefinitionVersion(APIModel):
    """One version of the custom resource."""

    name: str = Field(description="The version name, e.g. v1.")
    served: bool = Field(description="Whether this version is served by REST APIs.")
    storage: bool = Field(description="Whether this version is the one objects are stored in.")


class CustomResourceDefinitionSpec(APIModel):
    """The kind a definition adds: its group, names, scope and versions."""

    group: str = Field(description="The API group of the defined custom resource.")
    names: CustomResourceDefinitionNames = Field(description="The resource and kind names.")
    scope: Literal["Cluster", "Namespaced"] = Field(
        description="Whether the defined custom resource is cluster- or namespace-scoped."
    )
    versions: list[CustomResourceDefinitionVersion] = Field(
        description="The versions of the defined custom resource.",
        json_schema_extra={"x-kubernetes-list-type": "atomic"},
    )


class CustomResourceDefinition(KindModel):
    """A custom resource to be served by the API server under the given name."""

    spec: CustomResourceDefinitionSpec = Field(description="The custom resource's definition.")
