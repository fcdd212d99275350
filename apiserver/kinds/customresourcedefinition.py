"""``apiextensions.k8s.io/v1`` CustomResourceDefinition (standalone mode): read-only, and
always an empty list, because this server serves no custom resources.

kubectl asks for it: before creating a kind with no PATCH operation (a review such as
AllocationReview or SubjectAccessReview) with its default ``--validate=strict``, it lists
the CRDs to learn whether the kind is a custom resource, and refuses the create when the
list cannot be read. Answering it truthfully (none) lets ``kubectl create -f`` of a review
work without flags, as it does against a kube-apiserver.
"""

from __future__ import annotations

from typing import ClassVar

from ..api.apiextensions import CustomResourceDefinition
from ..machinery import READ_ONLY_VERBS, Column, Strategy, string_at

GROUP = "apiextensions.k8s.io"


class CustomResourceDefinitionStrategy(Strategy[CustomResourceDefinition]):
    model = CustomResourceDefinition
    version = "v1"
    kind = "CustomResourceDefinition"
    plural = "customresourcedefinitions"
    singular = "customresourcedefinition"
    short_names = ("crd", "crds")
    categories = ("api-extensions",)
    verbs = READ_ONLY_VERBS
    columns: ClassVar[tuple[Column, ...]] = (
        Column("Group", "string", string_at("spec", "group"), "The API group of the resource."),
    )

    @classmethod
    def upstream(cls) -> CustomResourceDefinitionStrategy:
        return cls(GROUP)
