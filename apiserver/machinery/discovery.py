"""Discovery documents: legacy (``/api``, ``/apis``, ``/apis/<g>[/<v>]``) and aggregated v2.

All documents are computed once from the served resources and kept as bytes; aggregated
discovery carries an ETag so the aggregator and kubectl can revalidate with 304.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import orjson

from .negotiation import parse_accept
from .resource import VERBS as VERBS
from .resource import ResourceType

SUBRESOURCE_VERBS = ["get", "patch", "update"]
V2_CONTENT_TYPE = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

_VERSION = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def version_priority(version: str) -> tuple[int, int, int]:
    """Kube-like version order key: GA before beta before alpha, higher numbers first."""
    m = _VERSION.match(version)
    if not m:
        return (-1, 0, 0)
    stage = {"alpha": 0, "beta": 1, None: 2}[m.group(2)]
    return (stage, int(m.group(1)), int(m.group(3) or 0))


@dataclass(frozen=True)
class ActionEntry:
    """An action subresource as discovery lists it (``pods/binding``: create, a Binding)."""

    parent: ResourceType
    subresource: str
    group_version: str
    kind: str

    def response_kind(self) -> dict[str, str]:
        group, _, version = self.group_version.rpartition("/")
        return {"group": group, "version": version, "kind": self.kind}


class Discovery:
    def __init__(
        self, served: Iterable[tuple[ResourceType, bool]], actions: Iterable[ActionEntry] = ()
    ) -> None:
        """``served``: each resource and whether it has a status subresource; ``actions``:
        the action subresources (created with a POST, never read)."""
        self._by_gv: dict[tuple[str, str], list[tuple[ResourceType, bool]]] = defaultdict(list)
        for resource, has_status in served:
            self._by_gv[(resource.group, resource.version)].append((resource, has_status))
        self._actions: dict[tuple[str, str, str], list[ActionEntry]] = defaultdict(list)
        for action in actions:
            parent = action.parent
            self._actions[(parent.group, parent.version, parent.plural)].append(action)
        self.groups: dict[str, list[str]] = defaultdict(list)
        for group, version in self._by_gv:
            if version not in self.groups[group]:
                self.groups[group].append(version)
        for group, versions in self.groups.items():
            versions.sort(key=version_priority, reverse=True)
            _storage_versions_first(versions, self._conversions(group))
        self._resource_lists = {gv: orjson.dumps(self._resource_list(*gv)) for gv in self._by_gv}
        named = sorted(g for g in self.groups if g)
        self.api_group_list = orjson.dumps(
            {"kind": "APIGroupList", "apiVersion": "v1", "groups": [self._group(g) for g in named]}
        )
        self._groups = {g: orjson.dumps(self._group(g)) for g in named}
        self.api_versions = orjson.dumps(
            {
                "kind": "APIVersions",
                "versions": self.groups.get("", []),
                "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": ""}],
            }
        )
        self.aggregated_apis = orjson.dumps(self._aggregated(named))
        self.aggregated_core = orjson.dumps(self._aggregated([""] if "" in self.groups else []))

    def _conversions(self, group: str) -> list[tuple[str, str]]:
        """(storage version, served version) of each resource of ``group`` served in a
        version it is not stored in."""
        return [
            (resource.stored_version, resource.version)
            for (g, _), served in self._by_gv.items()
            if g == group
            for resource, _ in served
            if resource.stored_version != resource.version
        ]

    def _actions_of(self, resource: ResourceType) -> list[ActionEntry]:
        return self._actions.get((resource.group, resource.version, resource.plural), [])

    def resource_list(self, group: str, version: str) -> bytes | None:
        return self._resource_lists.get((group, version))

    def group(self, group: str) -> bytes | None:
        return self._groups.get(group)

    def _group(self, group: str) -> dict[str, Any]:
        versions = [{"groupVersion": f"{group}/{v}", "version": v} for v in self.groups[group]]
        return {
            "kind": "APIGroup",
            "apiVersion": "v1",
            "name": group,
            "versions": versions,
            "preferredVersion": versions[0],
        }

    def _resource_list(self, group: str, version: str) -> dict[str, Any]:
        resources = []
        for resource, has_status in sorted(
            self._by_gv[(group, version)], key=lambda r: r[0].plural
        ):
            entry: dict[str, Any] = {
                "name": resource.plural,
                "singularName": resource.singular,
                "namespaced": resource.namespaced,
                "kind": resource.kind,
                "verbs": list(resource.verbs),
                "storageVersionHash": _storage_version_hash(resource),
            }
            if resource.short_names:
                entry["shortNames"] = list(resource.short_names)
            if resource.categories:
                entry["categories"] = list(resource.categories)
            resources.append(entry)
            if has_status:
                resources.append(
                    {
                        "name": f"{resource.plural}/status",
                        "singularName": "",
                        "namespaced": resource.namespaced,
                        "kind": resource.kind,
                        "verbs": [v for v in SUBRESOURCE_VERBS if v in resource.verbs],
                    }
                )
            for action in self._actions_of(resource):
                resources.append(
                    {
                        "name": f"{resource.plural}/{action.subresource}",
                        "singularName": "",
                        "namespaced": resource.namespaced,
                        "kind": action.kind,
                        "verbs": ["create"],
                    }
                )
        return {
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": f"{group}/{version}" if group else version,
            "resources": resources,
        }

    def _aggregated(self, groups: list[str]) -> dict[str, Any]:
        items = []
        for group in groups:
            versions = []
            for version in self.groups[group]:
                resources = []
                for resource, has_status in sorted(
                    self._by_gv[(group, version)], key=lambda r: r[0].plural
                ):
                    kind = {"group": group, "version": version, "kind": resource.kind}
                    entry: dict[str, Any] = {
                        "resource": resource.plural,
                        "responseKind": kind,
                        "scope": "Namespaced" if resource.namespaced else "Cluster",
                        "singularResource": resource.singular,
                        "verbs": list(resource.verbs),
                    }
                    if resource.short_names:
                        entry["shortNames"] = list(resource.short_names)
                    if resource.categories:
                        entry["categories"] = list(resource.categories)
                    subresources = [
                        {
                            "subresource": action.subresource,
                            "responseKind": action.response_kind(),
                            "verbs": ["create"],
                        }
                        for action in self._actions_of(resource)
                    ]
                    if has_status:
                        subresources.insert(
                            0,
                            {
                                "subresource": "status",
                                "responseKind": kind,
                                "verbs": [v for v in SUBRESOURCE_VERBS if v in resource.verbs],
                            },
                        )
                    if subresources:
                        entry["subresources"] = subresources
                    resources.append(entry)
                versions.append(
                    {"version": version, "resources": resources, "freshness": "Current"}
                )
            items.append(
                {"metadata": {"name": group, "creationTimestamp": None}, "versions": versions}
            )
        return {
            "kind": "APIGroupDiscoveryList",
            "apiVersion": "apidiscovery.k8s.io/v2",
            "metadata": {},
            "items": items,
        }


def _storage_versions_first(versions: list[str], conversions: list[tuple[str, str]]) -> None:
    """Move a storage version ahead of the versions that convert into it, in place.

    Clients that name no version (kubectl, for a short name) take a resource in the first
    version of its group that serves it; as in Kubernetes, where a group's version priority
    puts the storage version first, that is the version the object is stored in. Versions
    are otherwise left in ``version_priority`` order."""
    for stored, served in conversions:
        if stored in versions and served in versions:
            at = versions.index(served)
            if versions.index(stored) > at:
                versions.remove(stored)
                versions.insert(at, stored)


def wants_aggregated(accept: str | None) -> bool:
    """True if the first satisfiable Accept clause asks for aggregated discovery v2."""
    for media in parse_accept(accept or ""):
        if media.type not in ("application/json", "application/*", "*/*"):
            continue
        if media.params.get("as") == "APIGroupDiscoveryList":
            if media.params.get("g") == "apidiscovery.k8s.io" and media.params.get("v") == "v2":
                return True
            continue
        if "as" not in media.params:
            return False
    return False


def etag(body: bytes) -> str:
    return '"' + hashlib.sha512(body).hexdigest().upper() + '"'


def _storage_version_hash(resource: ResourceType) -> str:
    """The same for every version of a resource: it names the version it is stored in."""
    digest = hashlib.sha256(
        f"{resource.group}/{resource.stored_version}/{resource.kind}".encode()
    ).digest()
    return base64.b64encode(digest[:8]).decode()
