"""What a served resource is: its group, version, kind, names, scope and storage keys."""

from __future__ import annotations

from dataclasses import dataclass

VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
"""Every verb of a stored kind, in Kubernetes' alphabetical order."""
READ_ONLY_VERBS = ("get", "list", "watch")
"""A computed kind's verbs."""
CREATE_ONLY_VERBS = ("create",)
"""A review kind's verb: answered at once, never stored."""


@dataclass(frozen=True)
class ResourceType:
    group: str
    version: str
    kind: str
    plural: str
    singular: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    verbs: tuple[str, ...] = VERBS
    """The verbs served (and advertised by discovery); any other is 405."""
    returns_deleted_object: bool = False
    """A delete answers with the object's last state rather than a ``Status`` (the
    ``ReturnDeletedObject`` of Kubernetes' store, which generated clients expect)."""
    storage_version: str = ""
    """The version objects are stored in, when it is not this one (a kind served in
    several versions, converted at the edge: ``machinery.conversion``)."""

    @property
    def stored_version(self) -> str:
        return self.storage_version or self.version

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    @property
    def qualified_name(self) -> str:
        """``plural.group``, the form Kubernetes uses in messages."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def key_prefix(self, namespace: str | None = None) -> str:
        """Storage prefix of the collection, or of one namespace of it.

        The version is not part of the key: like Kubernetes, one stored form per
        group-resource, whatever version served it.
        """
        base = f"/{self.group or 'core'}/{self.plural}/"
        return f"{base}{namespace}/" if self.namespaced and namespace else base

    def key(self, namespace: str | None, name: str) -> str:
        return f"{self.key_prefix(namespace)}{name}"
