"""auth/authconfigmap.py and auth/union.py: the extension-apiserver-authentication ConfigMap
read into CAs and header names (last good reading kept), and authorizers asked in turn."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from apiserver.auth import UserInfo
from apiserver.auth.authconfigmap import AuthenticationConfigMap, parse_configmap
from apiserver.auth.authorizer import Authorization, Decision, RequestAttributes, request_attributes
from apiserver.auth.union import AlwaysAllowGroups, AlwaysAllowPaths, AuthorizerChain
from apiserver.kubeclient import ClusterConfig, KubeClient
from apiserver.server.certs import cert_pem, make_ca

CA_A = cert_pem(make_ca("a")[0]).decode()
CA_B = cert_pem(make_ca("b")[0]).decode()


def test_parse_full_configmap() -> None:
    parsed = parse_configmap(
        {
            "client-ca-file": CA_A,
            "requestheader-client-ca-file": CA_B,
            "requestheader-allowed-names": '["front-proxy-client"]',
            "requestheader-username-headers": '["X-Remote-User"]',
            "requestheader-uid-headers": '["X-Remote-Uid"]',
            "requestheader-group-headers": '["X-Remote-Group"]',
            "requestheader-extra-headers-prefix": '["X-Remote-Extra-"]',
        }
    )
    assert parsed.client_ca is not None
    assert parsed.client_ca.certificates[0].subject.rfc4514_string() == "CN=a"
    header = parsed.request_header
    assert header is not None
    assert header.ca.certificates[0].subject.rfc4514_string() == "CN=b"
    assert header.allowed_names == ("front-proxy-client",)
    assert header.uid_headers == ("X-Remote-Uid",)


def test_parse_without_front_proxy_and_defaults() -> None:
    assert parse_configmap({"client-ca-file": CA_A}).request_header is None
    header = parse_configmap({"requestheader-client-ca-file": CA_B}).request_header
    assert header is not None
    assert (header.allowed_names, header.username_headers, header.group_headers) == (
        (),
        ("X-Remote-User",),
        ("X-Remote-Group",),
    )
    assert header.extra_prefixes == ("X-Remote-Extra-",)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {"requestheader-client-ca-file": CA_B, "requestheader-allowed-names": "front-proxy"},
            "requestheader-allowed-names is not a JSON list of strings",
        ),
        (
            {"requestheader-client-ca-file": CA_B, "requestheader-group-headers": "[1]"},
            "requestheader-group-headers is not a JSON list of strings",
        ),
        ({"client-ca-file": "not a PEM"}, "client-ca-file holds no PEM certificates"),
    ],
)
def test_malformed_configmap_names_the_key(data: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_configmap(data)


async def test_refresh_keeps_the_last_good_reading() -> None:
    answers: list[httpx.Response] = [
        httpx.Response(200, json={"data": {"client-ca-file": CA_A}}),
        httpx.Response(403, json={"kind": "Status"}),
        httpx.Response(200, json={"data": {"client-ca-file": "garbage"}}),
        httpx.Response(200, json={"data": {"client-ca-file": CA_B}}),
    ]
    paths: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        paths.append(request.url.path)
        return answers.pop(0)

    client = KubeClient(ClusterConfig("https://kube"), transport=httpx.MockTransport(handler))
    configmap = AuthenticationConfigMap(client)
    assert configmap.client_ca() is None
    assert await configmap.refresh()
    first = configmap.client_ca()
    assert first is not None
    assert not await configmap.refresh()
    assert not await configmap.refresh()
    assert configmap.client_ca() is first
    assert await configmap.refresh()
    assert configmap.client_ca() not in (None, first)
    assert (
        paths[0] == "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication"
    )


class Fixed:
    def __init__(self, decision: Decision, reason: str = "") -> None:
        self.answer = Authorization(decision, reason)
        self.asked = 0

    async def authorize(self, attributes: RequestAttributes) -> Authorization:
        self.asked += 1
        return self.answer


def _attributes(user: UserInfo, path: str = "/apis/resource.k8s.io/v1/resourceslices") -> Any:
    return request_attributes(user, "GET", path, "")


async def test_first_opinion_decides() -> None:
    deny, allow = Fixed(Decision.DENY, "no"), Fixed(Decision.ALLOW)
    chain = AuthorizerChain([Fixed(Decision.NO_OPINION, "a"), deny, allow])
    assert (await chain.authorize(_attributes(UserInfo("u")))).decision is Decision.DENY
    assert allow.asked == 0
    unsure = AuthorizerChain([Fixed(Decision.NO_OPINION, "a"), Fixed(Decision.NO_OPINION, "b")])
    answer = await unsure.authorize(_attributes(UserInfo("u")))
    assert (answer.decision, answer.reason) == (Decision.NO_OPINION, "a, b")


async def test_masters_are_always_allowed() -> None:
    groups = AlwaysAllowGroups()
    master = UserInfo("root", groups=("system:masters",))
    assert (await groups.authorize(_attributes(master))).allowed
    assert not (await groups.authorize(_attributes(UserInfo("u", groups=("dev",))))).allowed


@pytest.mark.parametrize(
    ("path", "allowed"),
    [
        ("/healthz", True),
        ("/healthz/ping", False),
        ("/metrics", True),
        ("/debug/pprof/heap", True),
        ("/debug", False),
        ("/apis/resource.k8s.io/v1/resourceslices", False),
    ],
)
async def test_always_allowed_paths(path: str, allowed: bool) -> None:
    paths = AlwaysAllowPaths(["/healthz", "/metrics", "/debug/*"])
    assert (await paths.authorize(_attributes(UserInfo("u"), path))).allowed is allowed
