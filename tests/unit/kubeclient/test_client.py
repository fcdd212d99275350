"""kubeclient: paged lists, NDJSON watches, typed Status errors, configuration, and the
reviews' retry schedule, against an in-process collection (tests/unit/kubeclient/fakekube.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import orjson
import pytest

from apiserver.kubeclient import (
    APIError,
    ClusterConfig,
    Conflict,
    Gone,
    KubeClient,
    NotFound,
    in_cluster_config,
    json_body,
    lines,
    load_kubeconfig,
)
from apiserver.kubeclient.client import KNOWN_URLS
from apiserver.toolkit import Backoff
from tests.unit.kubeclient.fakekube import PATH, FakeKube, status


def _kube(count: int) -> FakeKube:
    kube = FakeKube()
    for i in range(count):
        kube.put(f"w{i:02d}", size=i)
    return kube


async def test_a_list_reads_every_page_of_one_snapshot() -> None:
    kube = _kube(7)
    async with kube.client() as client:
        listing = await client.list(PATH, {"labelSelector": "a=b"}, page_size=3)
    assert [o["metadata"]["name"] for o in listing.items] == [f"w{i:02d}" for i in range(7)]
    assert listing.resource_version == "7"
    assert [(q.get("limit"), q.get("continue")) for q in kube.requests] == [
        ("3", None),
        ("3", "3:7"),
        ("3", "6:7"),
    ]
    assert all(q.get("labelSelector") == "a=b" for q in kube.requests)
    # Items of a list come without their type; the client fills it in from the list's.
    assert {(o["apiVersion"], o["kind"]) for o in listing.items} == {("example.com/v1", "Widget")}


async def test_a_continue_token_that_expired_starts_the_list_over() -> None:
    kube = _kube(5)
    kube.expire_continue = 1
    async with kube.client() as client:
        listing = await client.list(PATH, page_size=2)
    assert len(listing.items) == 5  # nothing twice from the abandoned first page
    assert len({o["metadata"]["name"] for o in listing.items}) == 5
    assert [q.get("continue") for q in kube.requests] == [None, "2:5", None, "2:5", "4:5"]


async def test_a_first_page_answered_410_is_gone() -> None:
    kube = _kube(1)
    kube.failures = [410]
    async with kube.client() as client:
        with pytest.raises(Gone):
            await client.list(PATH)


async def test_a_watch_decodes_lines_cut_across_chunks_of_any_size() -> None:
    kube = _kube(2)
    big = "x" * 200_000  # one line far longer than a line reader's usual limit
    kube.put("big", blob=big)
    kube.remove("w00")
    kube.chunk = 4096
    async with kube.client() as client:
        events = [e async for e in client.watch(PATH, resource_version="2")]
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events[:2]] == [
        ("ADDED", "big"),
        ("DELETED", "w00"),
    ]
    assert events[0]["object"]["spec"]["blob"] == big
    assert events[-1]["type"] == "BOOKMARK"
    [query] = kube.watches()
    assert (query.get("resourceVersion"), query.get("allowWatchBookmarks")) == ("2", "true")


@pytest.mark.parametrize("as_event", [False, True], ids=["answer", "error-event"])
async def test_a_watch_from_a_compacted_revision_is_gone(as_event: bool) -> None:
    kube = _kube(3)
    kube.compacted, kube.gone_as_event = 3, as_event
    async with kube.client() as client:
        with pytest.raises(Gone) as raised:
            _ = [e async for e in client.watch(PATH, resource_version="1")]
    assert raised.value.code == 410
    assert raised.value.reason == "Expired"


async def test_another_error_event_raises_its_status() -> None:
    async def handle(request: httpx.Request) -> httpx.Response:
        line = orjson.dumps({"type": "ERROR", "object": status(500, "InternalError", "boom")})
        return httpx.Response(200, content=line + b"\n")

    async with KubeClient(
        ClusterConfig("https://kube.test"), transport=httpx.MockTransport(handle)
    ) as client:
        with pytest.raises(APIError) as raised:
            _ = [e async for e in client.watch(PATH)]
    assert (type(raised.value), raised.value.code, raised.value.message) == (APIError, 500, "boom")


@pytest.mark.parametrize(
    ("code", "kind"), [(404, NotFound), (409, Conflict), (410, Gone), (403, APIError)]
)
async def test_a_status_answer_raises_its_typed_error(code: int, kind: type[APIError]) -> None:
    kube = _kube(0)
    kube.failures = [code]
    async with kube.client() as client:
        with pytest.raises(APIError) as raised:
            await client.get(f"{PATH}/w")
    assert type(raised.value) is kind
    assert (raised.value.code, raised.value.reason) == (code, "InternalError")
    assert raised.value.status["code"] == code


async def test_an_answer_that_is_not_json_is_an_error_with_its_code() -> None:
    async def handle(request: httpx.Request) -> httpx.Response:
        return httpx.Response(502, text="<html>bad gateway</html>")

    transport = httpx.MockTransport(handle)
    async with KubeClient(ClusterConfig("https://kube.test"), transport=transport) as client:
        with pytest.raises(APIError) as raised:
            await client.get(PATH)
        assert raised.value.code == 502
        assert raised.value.retryable
        assert "bad gateway" in raised.value.message
        answer = await client.exchange("GET", PATH)
        assert (answer.status_code, json_body(answer)) == (502, None)


async def test_an_unreachable_server_is_code_0_and_retryable() -> None:
    kube = _kube(0)
    kube.failures = [None, None]
    async with kube.client() as client:
        with pytest.raises(APIError) as raised:
            await client.create(PATH, {"metadata": {"name": "w"}})
    assert (raised.value.code, raised.value.retryable) == (0, True)
    assert len(kube.requests) == 1  # a write is never sent twice


async def _chunks(*parts: bytes) -> AsyncIterator[bytes]:
    for part in parts:
        yield part


async def test_ndjson_lines_skip_blanks_and_keep_a_last_line_without_newline() -> None:
    got = [line async for line in lines(_chunks(b'{"a"', b':1}\n\n  \n{"b":2}\n{"c"', b":3}"))]
    assert got == [b'{"a":1}', b'{"b":2}', b'{"c":3}']


def _kubeconfig(path: Path, user: dict[str, object]) -> Path:
    path.write_text(
        orjson.dumps(
            {
                "clusters": [{"name": "c", "cluster": {"server": "https://kube:6443/"}}],
                "users": [{"name": "u", "user": user}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        ).decode()
    )
    return path


def test_a_server_given_replaces_the_kubeconfigs(tmp_path: Path) -> None:
    path = _kubeconfig(tmp_path / "kc", {"token": "t"})
    assert load_kubeconfig(path).server == "https://kube:6443"
    assert load_kubeconfig(path, "https://other:443/").server == "https://other:443"
    assert load_kubeconfig(path).token == "t"


def test_in_cluster_configuration_names_the_hint_outside_a_pod(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(ValueError, match="give --some-flag"):
        in_cluster_config(directory=tmp_path, hint="give --some-flag")
    (tmp_path / "token").write_text("sa\n")
    (tmp_path / "ca.crt").write_bytes(b"pem")
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    config = in_cluster_config(directory=tmp_path)
    assert (config.server, config.ca_pem) == ("https://10.0.0.1:443", b"pem")
    assert config.token_file == tmp_path / "token"


def test_the_retry_schedule_grows_without_jitter_and_leaves_the_backoff_as_it_was() -> None:
    backoff = Backoff(0.5, 2.0, 1.5, jitter=0.0)
    assert backoff.delays(5) == [0.5, 0.75, 1.125, 1.6875, 2.0]
    assert backoff.delay() == 0.5  # delays() took nothing from the backoff itself
    assert backoff.delay() == 0.75


async def test_a_watch_line_that_is_not_json_is_an_api_error() -> None:
    async def handle(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=b'{"type":"ADDED","object":{}}\n{"type": nope}\n')

    seen: list[str] = []

    async def read(client: KubeClient) -> None:
        async for event in client.watch(PATH):
            seen.append(event["type"])

    transport = httpx.MockTransport(handle)
    async with KubeClient(ClusterConfig("https://kube.test"), transport=transport) as client:
        with pytest.raises(APIError) as raised:
            await read(client)
    assert seen == ["ADDED"]
    assert raised.value.reason == "InvalidResponse"


async def test_a_url_asked_again_is_parsed_once_and_a_new_one_is_not_mistaken() -> None:
    def handle(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200, json={"path": request.url.path, "query": request.url.query.decode()}
        )

    transport = httpx.MockTransport(handle)
    async with KubeClient(ClusterConfig("https://kube.test"), transport=transport) as client:
        url = f"https://kube.test{PATH}"
        first = json_body(await client.exchange("GET", PATH))
        parsed = client._url(url)
        again = json_body(await client.exchange("GET", PATH))
        assert client._url(url) is parsed  # kept, not parsed again
        other = json_body(await client.exchange("GET", PATH, params={"limit": "1"}))
        for i in range(KNOWN_URLS + 1):  # more than are kept: the oldest are let go
            await client.exchange("GET", f"{PATH}-{i}")
        assert client._url(url) is not parsed
        last = json_body(await client.exchange("GET", PATH))
    assert first == again == last == {"path": PATH, "query": ""}
    assert other == {"path": PATH, "query": "limit=1"}
