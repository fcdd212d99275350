"""Raw HTTPS checks of the protocol details real clients depend on: watch-list, metadata-only
and Table views, discovery, OpenAPI, errors as Status, pagination, expiry and authentication.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from .harness import ServerProcess, start_server
from .objects import (
    GROUP,
    MERGE_PATCH,
    METADATA,
    METADATA_LIST,
    RPSR_PATH,
    RSP_PATH,
    TABLE,
    is_status,
    rpsr,
    rsp,
    unique,
)

AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
WATCH_LIST = {
    "watch": "true",
    "sendInitialEvents": "true",
    "allowWatchBookmarks": "true",
    "resourceVersionMatch": "NotOlderThan",
    "timeoutSeconds": "30",
}


def _create(client: httpx.Client, path: str, body: dict[str, Any]) -> dict[str, Any]:
    response = client.post(path, json=body)
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


def _events(
    client: httpx.Client, path: str, params: dict[str, str], headers: dict[str, str] | None = None
) -> Iterator[dict[str, Any]]:
    """Watch events as they arrive; the caller stops reading when it has seen enough."""
    with client.stream("GET", path, params=params, headers=headers or {}) as response:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("application/json")
        for line in response.iter_lines():
            if line.strip():
                yield orjson.loads(line)


def _until_initial_end(events: Iterator[dict[str, Any]]) -> tuple[list[dict[str, Any]], Any]:
    """The events before the initial-events-end bookmark, and that bookmark."""
    before = []
    for event in events:
        if event["type"] == "BOOKMARK":
            annotations = event["object"]["metadata"].get("annotations") or {}
            if annotations.get("k8s.io/initial-events-end") == "true":
                return before, event
            continue
        before.append(event)
    raise AssertionError(f"the stream ended before the initial-events-end bookmark: {before}")


def test_watch_list_sends_state_then_annotated_bookmark(fresh_server: ServerProcess) -> None:
    """A watch-list sends ADDED for each existing object, then a BOOKMARK marked
    k8s.io/initial-events-end at the resourceVersion of that state, then live events."""
    names = sorted(unique("wl") for _ in range(3))
    with fresh_server.client() as client:
        for name in names:
            _create(client, RSP_PATH, rsp(name))
        state_rv = client.get(RSP_PATH).json()["metadata"]["resourceVersion"]
        events = _events(client, RSP_PATH, WATCH_LIST)
        initial, bookmark = _until_initial_end(events)
        assert [e["type"] for e in initial] == ["ADDED"] * 3
        assert sorted(e["object"]["metadata"]["name"] for e in initial) == names
        assert bookmark["object"]["kind"] == "ResourceSlicePatch"
        assert bookmark["object"]["apiVersion"] == f"{GROUP}/v1alpha3"
        assert bookmark["object"]["metadata"]["resourceVersion"] == state_rv
        late = unique("wl")
        _create(client, RSP_PATH, rsp(late))
        live = next(e for e in events if e["type"] != "BOOKMARK")
        assert live["type"] == "ADDED"
        assert live["object"]["metadata"]["name"] == late
        events.close()


def test_watch_list_with_field_selector_sends_only_that_object(server: ServerProcess) -> None:
    """kubectl wait's watch-list (fieldSelector=metadata.name=X) sends just X, then the bookmark."""
    name = unique("wlsel")
    with server.client() as client:
        _create(client, RSP_PATH, rsp(unique("wlother")))
        created = _create(client, RSP_PATH, rsp(name))
        params = {**WATCH_LIST, "fieldSelector": f"metadata.name={name}"}
        events = _events(client, RSP_PATH, params)
        initial, bookmark = _until_initial_end(events)
        events.close()
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in initial] == [("ADDED", name)]
    assert int(bookmark["object"]["metadata"]["resourceVersion"]) >= int(
        created["metadata"]["resourceVersion"]
    )


def test_send_initial_events_without_resource_version_match_is_invalid(
    server: ServerProcess,
) -> None:
    """sendInitialEvents without resourceVersionMatch=NotOlderThan is a 422 Invalid Status."""
    params = {"watch": "true", "sendInitialEvents": "true", "allowWatchBookmarks": "true"}
    with server.client() as client:
        response = client.get(RSP_PATH, params=params)
    assert response.status_code == 422
    body = response.json()
    assert is_status(body, 422)
    assert body["reason"] == "Invalid"
    assert "resourceVersionMatch" in [c.get("field") for c in body["details"]["causes"]]


def test_metadata_only_get_list_and_watch(server: ServerProcess) -> None:
    """as=PartialObjectMetadata[List] answers get, list and watch (bookmarks included) with
    metadata-only objects, as client-go's metadata client needs."""
    name = unique("meta")
    with server.client() as client:
        created = _create(client, RSP_PATH, rsp(name))
        got = client.get(f"{RSP_PATH}/{name}", headers={"Accept": METADATA})
        assert got.status_code == 200
        meta = got.json()
        assert (meta["kind"], meta["apiVersion"]) == ("PartialObjectMetadata", "meta.k8s.io/v1")
        assert meta["metadata"]["uid"] == created["metadata"]["uid"]
        assert "spec" not in meta

        listed = client.get(RSP_PATH, headers={"Accept": METADATA_LIST}).json()
        assert (listed["kind"], listed["apiVersion"]) == (
            "PartialObjectMetadataList",
            "meta.k8s.io/v1",
        )
        assert listed["metadata"]["resourceVersion"]
        item = next(i for i in listed["items"] if i["metadata"]["name"] == name)
        assert item["kind"] == "PartialObjectMetadata"
        assert "spec" not in item

        events = _events(client, RSP_PATH, WATCH_LIST, {"Accept": METADATA})
        initial, bookmark = _until_initial_end(events)
        assert name in [e["object"]["metadata"]["name"] for e in initial]
        assert {e["object"]["kind"] for e in initial} == {"PartialObjectMetadata"}
        assert all("spec" not in e["object"] for e in initial)
        assert bookmark["object"]["kind"] == "PartialObjectMetadata"
        assert bookmark["object"]["apiVersion"] == "meta.k8s.io/v1"
        patched = client.patch(
            f"{RSP_PATH}/{name}",
            content=b'{"metadata":{"labels":{"seen":"yes"}}}',
            headers={"Content-Type": MERGE_PATCH},
        )
        assert patched.status_code == 200
        live = next(
            e for e in events if e["type"] == "MODIFIED" and e["object"]["metadata"]["name"] == name
        )
        # The server was started with --bookmark-interval 1: a progress bookmark follows.
        progress = next((e for e in events if e["type"] == "BOOKMARK"), None)
        events.close()
    assert live["object"]["kind"] == "PartialObjectMetadata"
    assert live["object"]["metadata"]["labels"] == {"seen": "yes"}
    assert progress is not None
    assert progress["object"]["kind"] == "PartialObjectMetadata"
    assert int(progress["object"]["metadata"]["resourceVersion"]) >= int(
        live["object"]["metadata"]["resourceVersion"]
    )


def test_watch_with_label_selector_follows_matching(server: ServerProcess) -> None:
    """With a labelSelector, an object that starts matching arrives as ADDED, a change while
    matching as MODIFIED, and one that stops matching as DELETED."""
    name = unique("sel")
    label = unique("v")
    with server.client() as client:
        created = _create(client, RSP_PATH, rsp(name))
        params = {
            "watch": "true",
            "labelSelector": f"watched={label}",
            "resourceVersion": created["metadata"]["resourceVersion"],
            "timeoutSeconds": "30",
        }
        events = _events(client, RSP_PATH, params)
        for labels in ({"watched": label}, {"watched": label, "more": "x"}, {"watched": None}):
            response = client.patch(
                f"{RSP_PATH}/{name}",
                content=orjson.dumps({"metadata": {"labels": labels}}),
                headers={"Content-Type": MERGE_PATCH},
            )
            assert response.status_code == 200
        seen = [
            (e["type"], e["object"]["metadata"].get("labels"))
            for _, e in zip(range(3), events, strict=False)
        ]
        events.close()
    assert seen == [
        ("ADDED", {"watched": label}),
        ("MODIFIED", {"watched": label, "more": "x"}),
        ("DELETED", {"watched": label, "more": "x"}),
    ]


def test_delete_collection_with_label_selector(server: ServerProcess) -> None:
    """DELETE on the collection with a labelSelector removes exactly the matching objects and
    answers with the list of what was deleted."""
    label = unique("batch")
    doomed = sorted(unique("dc") for _ in range(2))
    kept = unique("dc")
    with server.client() as client:
        for name in [*doomed, kept]:
            body = rsp(name)
            body["metadata"]["labels"] = {"batch": label if name in doomed else "other"}
            _create(client, RSP_PATH, body)
        response = client.delete(RSP_PATH, params={"labelSelector": f"batch={label}"})
        assert response.status_code == 200
        answer = response.json()
        assert answer["kind"] == "ResourceSlicePatchList"
        assert sorted(i["metadata"]["name"] for i in answer["items"]) == doomed
        for name in doomed:
            assert client.get(f"{RSP_PATH}/{name}").status_code == 404
        assert client.get(f"{RSP_PATH}/{kept}").status_code == 200


def test_metadata_client_accept_header_with_protobuf_first(server: ServerProcess) -> None:
    """client-go's metadata client puts protobuf first; the server answers the JSON clause."""
    name = unique("metapb")
    accept = (
        "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,"
        "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
    )
    with server.client() as client:
        _create(client, RSP_PATH, rsp(name))
        response = client.get(RSP_PATH, headers={"Accept": accept})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    assert response.json()["kind"] == "PartialObjectMetadataList"


def test_metadata_list_asked_for_one_object_is_not_acceptable(server: ServerProcess) -> None:
    """Asking for PartialObjectMetadataList on a single object is a 406 Status."""
    name = unique("meta406")
    with server.client() as client:
        _create(client, RSP_PATH, rsp(name))
        response = client.get(f"{RSP_PATH}/{name}", headers={"Accept": METADATA_LIST})
    assert response.status_code == 406
    assert is_status(response.json(), 406)


def test_table_output_has_columns_and_row_metadata(server: ServerProcess) -> None:
    """as=Table answers with columnDefinitions and rows whose object is the row's metadata;
    includeObject=Object embeds the whole object and None leaves it out."""
    name = unique("table")
    with server.client() as client:
        created = _create(client, RPSR_PATH, rpsr(name))
        listed = client.get(RPSR_PATH, headers={"Accept": TABLE})
        assert listed.status_code == 200
        table = listed.json()
        assert (table["kind"], table["apiVersion"]) == ("Table", "meta.k8s.io/v1")
        columns = [c["name"] for c in table["columnDefinitions"]]
        assert columns[:5] == ["Name", "Driver", "Pool", "Complete", "Pools"]
        assert "Age" in columns
        assert table["columnDefinitions"][0]["format"] == "name"
        row = next(r for r in table["rows"] if r["object"]["metadata"]["name"] == name)
        assert len(row["cells"]) == len(columns)
        assert row["cells"][:2] == [name, "example.com/gpu"]
        assert row["object"]["kind"] == "PartialObjectMetadata"
        assert row["object"]["metadata"]["uid"] == created["metadata"]["uid"]

        one = client.get(
            f"{RPSR_PATH}/{name}", params={"includeObject": "Object"}, headers={"Accept": TABLE}
        ).json()
        assert [r["object"]["kind"] for r in one["rows"]] == ["ResourcePoolStatusRequest"]
        assert one["rows"][0]["object"]["spec"]["driver"] == "example.com/gpu"
        bare = client.get(
            f"{RPSR_PATH}/{name}", params={"includeObject": "None"}, headers={"Accept": TABLE}
        ).json()
        assert "object" not in bare["rows"][0]


@pytest.mark.parametrize(
    "path",
    [
        "/apis/",
        f"/apis/{GROUP}/",
        f"/apis/{GROUP}/v1alpha3/",
        f"/apis/{GROUP}/v1alpha1/",
        "/api/",
        "/openapi/v3/",
        f"/openapi/v3/apis/{GROUP}/v1alpha3/",
        f"{RSP_PATH}/",
        "/no/such/path",
        "/apis/no.such.group/v1",
        f"/apis/{GROUP}/v9",
        f"{RSP_PATH}/x/y/z",
    ],
)
def test_no_redirects(server: ServerProcess, path: str) -> None:
    """No path answers with a redirect (the aggregator turns any 3xx into a 502); what is not
    served is a 404 Status."""
    with server.client(follow_redirects=False) as client:
        response = client.get(path)
    assert not 300 <= response.status_code < 400, (response.status_code, response.headers)
    if response.status_code >= 400:
        assert response.status_code == 404
        assert response.headers["content-type"] == "application/json"
        assert is_status(response.json(), 404)
        assert response.json()["reason"] == "NotFound"


def test_every_error_is_a_status(server: ServerProcess) -> None:
    """Every error answer, whatever its cause, is a v1 Status with the HTTP code in it."""
    name = unique("errs")
    with server.client() as client:
        created = _create(client, RSP_PATH, rsp(name))
        stale = {**created, "metadata": {**created["metadata"], "resourceVersion": "1"}}
        cases: list[tuple[int, httpx.Response]] = [
            (404, client.get(f"{RSP_PATH}/{unique('missing')}")),
            (404, client.get("/apis/no.such.group/v1/things")),
            (405, client.delete("/apis")),
            (405, client.post(f"{RSP_PATH}/{name}/status", json=created)),
            (
                400,
                client.post(
                    RSP_PATH, content=b"{not json", headers={"Content-Type": "application/json"}
                ),
            ),
            (400, client.get(RSP_PATH, params={"limit": "many"})),
            (406, client.get(RSP_PATH, headers={"Accept": "application/xml"})),
            (409, client.post(RSP_PATH, json=rsp(name))),
            (409, client.put(f"{RSP_PATH}/{name}", json=stale)),
            (
                415,
                client.patch(
                    f"{RSP_PATH}/{name}",
                    content=b"{}",
                    headers={"Content-Type": "application/cbor-seq"},
                ),
            ),
            (422, client.post(RSP_PATH, json=rsp(unique("bad"), priority=2**40))),
            (422, client.post(RPSR_PATH, json=rpsr(unique("bad"), driver="Not A Driver!"))),
        ]
    with httpx.Client(base_url=server.url, verify=server.ssl_context()) as anonymous:
        cases.append((401, anonymous.get(RSP_PATH)))
    for code, response in cases:
        request = f"{response.request.method} {response.request.url}"
        assert response.status_code == code, (request, response.text)
        assert response.headers["content-type"] == "application/json", request
        body = response.json()
        assert is_status(body, code), (request, body)
        assert body["status"] == "Failure", request
        assert body["reason"], request


def test_aggregated_discovery_with_etag(server: ServerProcess) -> None:
    """Aggregated discovery v2 answers in its own content type, lists both kinds with short
    names and status subresources, and honours If-None-Match with 304."""
    with server.client() as client:
        response = client.get("/apis", headers={"Accept": f"{AGGREGATED},application/json"})
        assert response.status_code == 200
        content_type = response.headers["content-type"].replace(" ", "")
        assert content_type.startswith("application/json;")
        assert {"g=apidiscovery.k8s.io", "v=v2", "as=APIGroupDiscoveryList"} <= set(
            content_type.split(";")
        )
        doc = response.json()
        assert (doc["kind"], doc["apiVersion"]) == (
            "APIGroupDiscoveryList",
            "apidiscovery.k8s.io/v2",
        )
        group = next(i for i in doc["items"] if i["metadata"]["name"] == GROUP)
        resources = {
            v["version"]: {r["resource"]: r for r in v["resources"]} for v in group["versions"]
        }
        patch = resources["v1alpha3"]["resourceslicepatches"]
        request = resources["v1alpha1"]["resourcepoolstatusrequests"]
        assert patch["shortNames"] == ["rsp"]
        assert request["shortNames"] == ["rpsr"]
        for entry, kind in ((patch, "ResourceSlicePatch"), (request, "ResourcePoolStatusRequest")):
            assert entry["scope"] == "Cluster"
            assert entry["responseKind"]["kind"] == kind
            assert "watch" in entry["verbs"]
            assert [s["subresource"] for s in entry["subresources"]] == ["status"]

        tag = response.headers["etag"]
        cached = client.get("/apis", headers={"Accept": AGGREGATED, "If-None-Match": tag})
        assert cached.status_code == 304
        assert cached.content == b""
        changed = client.get("/apis", headers={"Accept": AGGREGATED, "If-None-Match": '"other"'})
        assert changed.status_code == 200

        legacy = client.get("/apis", headers={"Accept": "application/json"}).json()
        assert legacy["kind"] == "APIGroupList"


def test_legacy_discovery_documents(server: ServerProcess) -> None:
    """/apis/<group> and /apis/<group>/<version> describe both kinds and their status."""
    with server.client() as client:
        group = client.get(f"/apis/{GROUP}").json()
        assert group["kind"] == "APIGroup"
        # Standalone, the group also holds the core DRA kinds in v1.
        assert {v["version"] for v in group["versions"]} == {"v1", "v1alpha3", "v1alpha1"}
        listing = client.get(f"/apis/{GROUP}/v1alpha3").json()
        assert listing["kind"] == "APIResourceList"
        names = {r["name"]: r for r in listing["resources"]}
        assert names["resourceslicepatches"]["shortNames"] == ["rsp"]
        assert names["resourceslicepatches"]["namespaced"] is False
        assert sorted(names["resourceslicepatches/status"]["verbs"]) == ["get", "patch", "update"]


def test_openapi_v3_root_and_documents(server: ServerProcess) -> None:
    """The v3 root lists both group-versions with content hashes; each document is served with
    the hash (immutable caching), without it, and with a stale hash (200, never a redirect)."""
    with server.client(follow_redirects=False) as client:
        root = client.get("/openapi/v3").json()
        for version, kind in (("v1alpha3", "ResourceSlicePatch"), ("v1alpha1", None)):
            key = f"apis/{GROUP}/{version}"
            url = root["paths"][key]["serverRelativeURL"]
            assert url.startswith(f"/openapi/v3/{key}?hash=")
            digest = url.split("hash=", 1)[1]
            exact = client.get(url)
            assert exact.status_code == 200
            assert hashlib.sha512(exact.content).hexdigest().upper() == digest
            assert exact.headers["etag"] == f'"{digest}"'
            assert "immutable" in exact.headers["cache-control"]
            doc = exact.json()
            assert doc["openapi"].startswith("3.")
            assert any(p.startswith(f"/{key}/") for p in doc["paths"])
            if kind is not None:
                schemas = doc["components"]["schemas"]
                tagged = [
                    s
                    for s in schemas.values()
                    if {"group": GROUP, "version": version, "kind": kind}
                    in s.get("x-kubernetes-group-version-kind", [])
                ]
                assert len(tagged) == 1
            stale = client.get(f"/openapi/v3/{key}", params={"hash": "0" * 128})
            assert stale.status_code == 200
            assert "immutable" not in stale.headers.get("cache-control", "")
            assert stale.content == exact.content
            plain = client.get(f"/openapi/v3/{key}")
            assert plain.status_code == 200
            revalidated = client.get(url, headers={"If-None-Match": f'"{digest}"'})
            assert revalidated.status_code == 304


def test_openapi_v2_json_advertises_the_patch_types(server: ServerProcess) -> None:
    """/openapi/v2 is Swagger 2.0 JSON with GVK-tagged definitions; PATCH advertises the patch
    types the server implements, strategic merge included."""
    with server.client() as client:
        response = client.get("/openapi/v2", headers={"Accept": "application/json"})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    doc = response.json()
    assert doc["swagger"] == "2.0"
    gvks = [
        g for d in doc["definitions"].values() for g in d.get("x-kubernetes-group-version-kind", [])
    ]
    assert {"group": GROUP, "version": "v1alpha3", "kind": "ResourceSlicePatch"} in gvks
    assert {"group": GROUP, "version": "v1alpha1", "kind": "ResourcePoolStatusRequest"} in gvks
    patch_op = doc["paths"][f"{RSP_PATH}/{{name}}"]["patch"]
    assert "application/merge-patch+json" in patch_op["consumes"]
    assert "application/strategic-merge-patch+json" in patch_op["consumes"]


def test_openapi_v2_protobuf_for_kubectl(server: ServerProcess) -> None:
    """kubectl reads /openapi/v2 only in protobuf: it is served so (with a media type Go can
    parse, and revalidated by ETag), and JSON stays JSON; the CustomResourceDefinition list
    kubectl reads beside it is empty, since this server serves no custom resources."""
    asked = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
    with server.client() as client:
        response = client.get("/openapi/v2", headers={"Accept": asked})
        assert response.status_code == 200
        assert response.headers["content-type"] == (
            "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
        )
        assert response.content.startswith(b"\n\x032.0")  # field 1 (swagger): "2.0"
        again = client.get(
            "/openapi/v2", headers={"Accept": asked, "If-None-Match": response.headers["etag"]}
        )
        assert again.status_code == 304
        as_json = client.get("/openapi/v2", headers={"Accept": "application/json"})
        assert as_json.headers["etag"] != response.headers["etag"]
        refused = client.get("/openapi/v2", headers={"Accept": "application/xml"})
        assert refused.status_code == 406
        crds = client.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions")
        assert crds.status_code == 200
        assert crds.json()["items"] == []
        assert (
            client.post(
                "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json={}
            ).status_code
            == 405
        )
    out = server.kubectl("get", "crds").stderr
    assert "No resources found" in out


def test_unknown_patch_type_is_unsupported_media_type(server: ServerProcess) -> None:
    """A patch in a format the server does not know is a 415 listing the accepted types."""
    name = unique("smp")
    with server.client() as client:
        created = _create(client, RSP_PATH, rsp(name))
        response = client.patch(
            f"{RSP_PATH}/{name}",
            content=b'{"spec":{"devices":{"priority":9}}}',
            headers={"Content-Type": "application/cbor-seq"},
        )
        after = client.get(f"{RSP_PATH}/{name}").json()
    assert response.status_code == 415
    body = response.json()
    assert is_status(body, 415)
    assert body["reason"] == "UnsupportedMediaType"
    assert "application/strategic-merge-patch+json" in body["message"]
    assert after["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


def test_strategic_merge_patch_merges_conditions_by_type(server: ServerProcess) -> None:
    """A strategic merge patch of the status adds a condition next to the existing one
    (merged on its type), where a merge patch would have replaced the list."""
    name = unique("smp")
    condition = {
        "status": "True",
        "reason": "Seen",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
        "message": "",
    }
    smp = {"Content-Type": "application/strategic-merge-patch+json"}
    with server.client() as client:
        _create(client, RSP_PATH, rsp(name))
        first = {"status": {"conditions": [{"type": "A", **condition}]}}
        second = {"status": {"conditions": [{"type": "B", **condition}]}}
        for body in (first, second):
            response = client.patch(
                f"{RSP_PATH}/{name}/status", content=orjson.dumps(body), headers=smp
            )
            assert response.status_code == 200, response.text
        after = client.get(f"{RSP_PATH}/{name}").json()
    assert [c["type"] for c in after["status"]["conditions"]] == ["A", "B"]


def test_pages_cover_everything_once_from_one_snapshot(fresh_server: ServerProcess) -> None:
    """limit/continue pages return every object exactly once, all at the first page's
    resourceVersion; an object created between pages is not in later pages."""
    names = [f"page-{i:02d}" for i in range(7)]
    with fresh_server.client() as client:
        for name in names:
            _create(client, RSP_PATH, rsp(name))
        seen: list[str] = []
        versions: set[str] = set()
        params = {"limit": "3"}
        pages = 0
        while True:
            page = client.get(RSP_PATH, params=params).json()
            pages += 1
            assert len(page["items"]) <= 3
            seen += [i["metadata"]["name"] for i in page["items"]]
            versions.add(page["metadata"]["resourceVersion"])
            token = page["metadata"].get("continue")
            if pages == 1:
                _create(client, RSP_PATH, rsp("page-99"))
            if not token:
                break
            params = {"limit": "3", "continue": token}
        assert seen == names
        assert pages == 3
        assert len(versions) == 1
        everything = client.get(RSP_PATH).json()
    assert [i["metadata"]["name"] for i in everything["items"]] == [*names, "page-99"]


def test_watch_from_compacted_revision_ends_with_410(tmp_path: Path) -> None:
    """A watch from a resourceVersion history no longer holds gets one ERROR event with a
    410 Expired Status, and the stream ends."""
    proc = start_server(tmp_path / "server", ["--watch-history", "5"])
    try:
        name = unique("old")
        with proc.client() as client:
            first = _create(client, RSP_PATH, rsp(name))
            old_rv = first["metadata"]["resourceVersion"]
            for priority in range(150):
                response = client.patch(
                    f"{RSP_PATH}/{name}",
                    content=orjson.dumps({"spec": {"devices": {"priority": priority}}}),
                    headers={"Content-Type": MERGE_PATCH},
                )
                assert response.status_code == 200
            events = list(
                _events(
                    client,
                    RSP_PATH,
                    {"watch": "true", "resourceVersion": old_rv, "timeoutSeconds": "30"},
                )
            )
    finally:
        proc.stop()
    assert len(events) == 1
    assert events[0]["type"] == "ERROR"
    status = events[0]["object"]
    assert is_status(status, 410)
    assert status["reason"] == "Expired"


def test_authentication(server: ServerProcess) -> None:
    """Without a valid token resources are a 401 Status; health and version are open."""
    with httpx.Client(base_url=server.url, verify=server.ssl_context()) as anonymous:
        missing = anonymous.get(RSP_PATH)
        wrong = anonymous.get(RSP_PATH, headers={"Authorization": "Bearer not-the-token"})
        assert anonymous.get("/readyz").status_code == 200
        assert anonymous.get("/healthz").status_code == 200
        assert anonymous.get("/livez").status_code == 200
        assert anonymous.get("/version").status_code == 200
        discovery = anonymous.get("/apis")
    for response in (missing, wrong, discovery):
        assert response.status_code == 401
        body = response.json()
        assert is_status(body, 401)
        assert body["reason"] == "Unauthorized"


def test_version(server: ServerProcess) -> None:
    """/version (and /version/, which client-go and the typed clients ask) answer
    version.Info JSON."""
    with server.client() as client:
        response = client.get("/version")
        slashed = client.get("/version/")
    assert slashed.status_code == 200
    assert slashed.json() == response.json()
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    info = response.json()
    assert info["major"].isdigit()
    assert info["minor"].isdigit()
    assert info["gitVersion"].startswith(f"v{info['major']}.{info['minor']}.")
    for key in ("gitCommit", "gitTreeState", "buildDate", "goVersion", "compiler", "platform"):
        assert key in info
