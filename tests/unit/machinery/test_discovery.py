"""Discovery documents: version order, legacy group/resource lists and aggregated discovery v2."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from apiserver.kinds import strategies
from apiserver.machinery import (
    V2_CONTENT_TYPE,
    ActionEntry,
    Discovery,
    ResourceType,
    wants_aggregated,
)
from apiserver.machinery import discovery_etag as etag
from apiserver.machinery.discovery import SUBRESOURCE_VERBS, VERBS, version_priority

GROUP = "resource.k8s.io"


def test_version_priority_orders_like_kubernetes() -> None:
    versions = ["v1alpha1", "v1beta1", "foo", "v1", "v1alpha3", "v1beta2", "v2", "v2beta1"]
    ordered = sorted(versions, key=version_priority, reverse=True)
    assert ordered == ["v2", "v1", "v2beta1", "v1beta2", "v1beta1", "v1alpha3", "v1alpha1", "foo"]


def resource(
    version: str, kind: str, *, group: str = GROUP, namespaced: bool = False, **extra: Any
) -> ResourceType:
    plural = kind.lower() + "s"
    return ResourceType(group, version, kind, plural, kind.lower(), namespaced, **extra)


@pytest.fixture
def discovery() -> Discovery:
    served = [(s.resource, s.has_status) for s in strategies(standalone=False)]
    served += [
        (resource("v1", "ResourceClaim", namespaced=True, categories=("dra",)), True),
        (resource("v1beta2", "ResourceClaim", namespaced=True), True),
        (resource("v1beta1", "ResourceClaim", namespaced=True), True),
        (resource("v1", "Event", group="", namespaced=True, short_names=("ev",)), False),
    ]
    return Discovery(served)


def test_group_versions_are_in_priority_order(discovery: Discovery) -> None:
    """Kubernetes' order, except that v1alpha1 stores ResourcePoolStatusRequests that
    v1alpha3 serves converted: the storage version comes first, so a client that names no
    version (``kubectl get rpsr``) reads the stored shape."""
    assert discovery.groups[GROUP] == ["v1", "v1beta2", "v1beta1", "v1alpha1", "v1alpha3"]
    group = orjson.loads(discovery.group(GROUP) or b"")
    assert group["kind"] == "APIGroup"
    assert group["name"] == GROUP
    assert [v["version"] for v in group["versions"]] == discovery.groups[GROUP]
    assert group["preferredVersion"] == {"groupVersion": f"{GROUP}/v1", "version": "v1"}
    assert discovery.group("unknown.example.com") is None


def test_api_group_list_holds_named_groups_only(discovery: Discovery) -> None:
    doc = orjson.loads(discovery.api_group_list)
    assert doc["kind"] == "APIGroupList"
    assert [g["name"] for g in doc["groups"]] == [GROUP]


def test_core_versions(discovery: Discovery) -> None:
    doc = orjson.loads(discovery.api_versions)
    assert doc["kind"] == "APIVersions"
    assert doc["versions"] == ["v1"]


def test_resource_list_of_a_group_version(discovery: Discovery) -> None:
    doc = orjson.loads(discovery.resource_list(GROUP, "v1alpha3") or b"")
    assert doc["kind"] == "APIResourceList"
    assert doc["groupVersion"] == f"{GROUP}/v1alpha3"
    by_name = {r["name"]: r for r in doc["resources"]}
    assert set(by_name) == {
        "allocationreviews",
        "devicereservations",
        "devices",
        "resourcepools",
        "resourcepoolstatusrequests",
        "resourcepoolstatusrequests/status",
        "resourceslicepatches",
        "resourceslicepatches/status",
    }
    main = by_name["resourceslicepatches"]
    assert main["kind"] == "ResourceSlicePatch"
    assert main["singularName"] == "resourceslicepatch"
    assert main["namespaced"] is False
    assert main["shortNames"] == ["rsp"]
    assert main["verbs"] == list(VERBS)
    assert main["storageVersionHash"]
    assert by_name["resourceslicepatches/status"]["verbs"] == SUBRESOURCE_VERBS
    assert discovery.resource_list(GROUP, "v9") is None


def test_a_resource_served_in_two_versions_is_listed_in_both_with_one_storage_hash(
    discovery: Discovery,
) -> None:
    """ResourcePoolStatusRequest: stored as v1alpha1, served as v1alpha1 and v1alpha3. Both
    lists name it; the storage version hash is the same (clients use it to tell that two
    versions are one resource), and differs from another kind's."""

    def entry(version: str, name: str) -> dict[str, Any]:
        doc = orjson.loads(discovery.resource_list(GROUP, version) or b"")
        found: dict[str, Any] = next(r for r in doc["resources"] if r["name"] == name)
        return found

    v1alpha1 = entry("v1alpha1", "resourcepoolstatusrequests")
    v1alpha3 = entry("v1alpha3", "resourcepoolstatusrequests")
    assert v1alpha1["kind"] == v1alpha3["kind"] == "ResourcePoolStatusRequest"
    assert v1alpha1["shortNames"] == v1alpha3["shortNames"] == ["rpsr"]
    assert v1alpha1["storageVersionHash"] == v1alpha3["storageVersionHash"]
    assert (
        v1alpha3["storageVersionHash"]
        != entry("v1alpha3", "resourceslicepatches")["storageVersionHash"]
    )
    [group] = orjson.loads(discovery.aggregated_apis)["items"]
    served_in = {
        v["version"]
        for v in group["versions"]
        if any(r["resource"] == "resourcepoolstatusrequests" for r in v["resources"])
    }
    assert served_in == {"v1alpha1", "v1alpha3"}


def test_a_read_only_resource_offers_get_list_and_watch(discovery: Discovery) -> None:
    doc = orjson.loads(discovery.resource_list(GROUP, "v1alpha3") or b"")
    devices = next(r for r in doc["resources"] if r["name"] == "devices")
    assert devices["kind"] == "Device"
    assert devices["verbs"] == ["get", "list", "watch"]
    pools = next(r for r in doc["resources"] if r["name"] == "resourcepools")
    assert (pools["kind"], pools["namespaced"]) == ("ResourcePool", False)
    assert pools["verbs"] == ["get", "list", "watch"]
    aggregated = orjson.loads(discovery.aggregated_apis)
    [group] = aggregated["items"]
    v1alpha3 = next(v for v in group["versions"] if v["version"] == "v1alpha3")
    entry = next(r for r in v1alpha3["resources"] if r["resource"] == "devices")
    assert entry["verbs"] == ["get", "list", "watch"]
    assert "subresources" not in entry


def test_a_stored_kind_only_the_server_writes_offers_its_served_verbs(
    discovery: Discovery,
) -> None:
    doc = orjson.loads(discovery.resource_list(GROUP, "v1alpha3") or b"")
    reservations = next(r for r in doc["resources"] if r["name"] == "devicereservations")
    assert reservations["verbs"] == ["delete", "get", "list", "watch"]


def test_namespaced_resource_and_categories(discovery: Discovery) -> None:
    doc = orjson.loads(discovery.resource_list(GROUP, "v1") or b"")
    claim = next(r for r in doc["resources"] if r["name"] == "resourceclaims")
    assert claim["namespaced"] is True
    assert claim["categories"] == ["dra"]
    core = orjson.loads(discovery.resource_list("", "v1") or b"")
    assert core["groupVersion"] == "v1"
    assert core["resources"][0]["shortNames"] == ["ev"]


def test_aggregated_discovery(discovery: Discovery) -> None:
    doc = orjson.loads(discovery.aggregated_apis)
    assert doc["kind"] == "APIGroupDiscoveryList"
    assert doc["apiVersion"] == "apidiscovery.k8s.io/v2"
    [group] = doc["items"]
    assert group["metadata"]["name"] == GROUP
    versions = [v["version"] for v in group["versions"]]
    assert versions == ["v1", "v1beta2", "v1beta1", "v1alpha1", "v1alpha3"]  # storage first
    v1alpha1 = next(v for v in group["versions"] if v["version"] == "v1alpha1")
    assert v1alpha1["freshness"] == "Current"
    [rpsr] = v1alpha1["resources"]
    assert rpsr["resource"] == "resourcepoolstatusrequests"
    assert rpsr["scope"] == "Cluster"
    assert rpsr["shortNames"] == ["rpsr"]
    assert rpsr["responseKind"] == {
        "group": GROUP,
        "version": "v1alpha1",
        "kind": "ResourcePoolStatusRequest",
    }
    assert rpsr["subresources"] == [
        {"subresource": "status", "responseKind": rpsr["responseKind"], "verbs": SUBRESOURCE_VERBS}
    ]
    core = orjson.loads(discovery.aggregated_core)
    [core_group] = core["items"]
    assert core_group["metadata"]["name"] == ""
    [event] = core_group["versions"][0]["resources"]
    assert event["scope"] == "Namespaced"
    assert "subresources" not in event


def test_aggregated_core_is_empty_without_core_resources() -> None:
    only_group = Discovery([(s.resource, s.has_status) for s in strategies(standalone=False)])
    assert orjson.loads(only_group.aggregated_core)["items"] == []
    assert orjson.loads(only_group.api_versions)["versions"] == []


@pytest.mark.parametrize(
    ("accept", "expected"),
    [
        (None, False),
        ("application/json", False),
        (V2_CONTENT_TYPE, True),
        (f"{V2_CONTENT_TYPE},application/json", True),
        (f"application/json,{V2_CONTENT_TYPE}", False),
        (
            "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,"
            "application/json",
            False,
        ),
        (
            "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,"
            f"{V2_CONTENT_TYPE}",
            True,
        ),
        (f"application/vnd.kubernetes.protobuf,{V2_CONTENT_TYPE}", True),
    ],
)
def test_wants_aggregated(accept: str | None, expected: bool) -> None:
    assert wants_aggregated(accept) is expected


def test_etag_is_a_quoted_hash_that_follows_the_content() -> None:
    tag = etag(b"a")
    assert tag.startswith('"')
    assert tag.endswith('"')
    assert tag == etag(b"a")
    assert tag != etag(b"b")


def test_action_subresources_are_listed_as_kubernetes_lists_pods_binding() -> None:
    """``pods/binding`` is in ``/api/v1`` and in aggregated discovery, create only, with
    Binding as its kind, beside ``pods/status``."""
    kinds = strategies(standalone=True)
    discovery = Discovery(
        ((s.resource, s.has_status) for s in kinds),
        (
            ActionEntry(s.resource, a.subresource, a.group_version, a.kind)
            for s in kinds
            for a in s.actions
        ),
    )
    legacy = orjson.loads(discovery.resource_list("", "v1") or b"{}")["resources"]
    [binding] = [r for r in legacy if r["name"] == "pods/binding"]
    assert binding == {
        "name": "pods/binding",
        "singularName": "",
        "namespaced": True,
        "kind": "Binding",
        "verbs": ["create"],
    }
    assert any(r["name"] == "pods/status" for r in legacy)
    [core] = orjson.loads(discovery.aggregated_core)["items"]
    [pods] = [r for r in core["versions"][0]["resources"] if r["resource"] == "pods"]
    assert [s["subresource"] for s in pods["subresources"]] == ["status", "binding"]
    assert pods["subresources"][1]["responseKind"] == {
        "group": "",
        "version": "v1",
        "kind": "Binding",
    }
    assert pods["subresources"][1]["verbs"] == ["create"]
