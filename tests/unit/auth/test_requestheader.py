"""auth/requestheader.py: the user, groups and extra the front proxy's headers name (extra
keys lower-cased and percent-decoded as Kubernetes does), believed only from a connection
with a verified proxy certificate whose CN is allowed."""

from __future__ import annotations

import pytest

from apiserver.auth import Credentials
from apiserver.auth.requestheader import (
    RequestHeaderAuthenticator,
    RequestHeaderConfig,
    extra_from_headers,
    unescape_extra_key,
    user_from_headers,
)
from apiserver.auth.x509 import CABundle
from apiserver.server.certs import cert_pem, issue_client_cert, make_ca

PROXY_CA = make_ca("front-proxy-ca")
CONFIG = RequestHeaderConfig(
    ca=CABundle.from_pem(cert_pem(PROXY_CA[0])), allowed_names=("front-proxy-client",)
)


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("scopes", "scopes"),
        ("example.com%2fteam", "example.com/team"),
        ("example.com%2Fteam", "example.com/team"),
        ("100%25", "100%"),
        ("a%20b", "a b"),
        ("bad%zzescape", "bad%zzescape"),  # malformed: kept as sent
        ("bad%2", "bad%2"),
        ("%e2%9c%93", "\u2713"),
    ],
)
def test_unescape_extra_key(key: str, expected: str) -> None:
    assert unescape_extra_key(key) == expected


def test_extra_keys_are_lower_cased_then_decoded_values_kept_in_order() -> None:
    headers = [
        ("x-remote-extra-scopes", "view"),
        ("x-remote-extra-scopes", "edit"),
        ("x-remote-extra-example.com%2fteam", "dra"),
        ("x-remote-extra-", "no key"),
        ("x-remote-user", "bob"),
        ("x-other-extra-thing", "ignored"),
    ]
    assert extra_from_headers(headers, ["X-Remote-Extra-"]) == {
        "scopes": ("view", "edit"),
        "example.com/team": ("dra",),
    }


def test_extra_from_several_prefixes() -> None:
    headers = [("x-a-one", "1"), ("x-b-two", "2")]
    assert extra_from_headers(headers, ["X-A-", "X-B-"]) == {"one": ("1",), "two": ("2",)}


def _credentials(headers: list[tuple[str, str]], *pems: str) -> Credentials:
    return Credentials(tuple((k.lower(), v) for k, v in headers), pems)


def test_user_from_the_first_header_with_a_value_groups_from_all() -> None:
    config = RequestHeaderConfig(
        ca=CONFIG.ca,
        username_headers=("X-Remote-User", "X-Other-User"),
        uid_headers=("X-Remote-Uid",),
        group_headers=("X-Remote-Group", "X-Other-Group"),
    )
    credentials = _credentials(
        [
            ("X-Remote-User", ""),
            ("X-Other-User", "bob"),
            ("X-Remote-Uid", "b-1"),
            ("X-Other-Group", "c"),
            ("X-Remote-Group", "a"),
            ("X-Remote-Group", " "),
            ("X-Remote-Group", "b"),
        ]
    )
    user = user_from_headers(credentials, config)
    assert user is not None
    assert (user.name, user.uid, user.groups) == ("bob", "b-1", ("a", "b", "c"))


def test_no_user_header_is_no_user() -> None:
    assert user_from_headers(_credentials([("X-Remote-Group", "a")]), CONFIG) is None


def _proxy(cn: str, ca: object = PROXY_CA) -> str:
    return cert_pem(issue_client_cert(*ca, cn)[0]).decode()  # type: ignore[misc]


HEADERS = [("X-Remote-User", "bob"), ("X-Remote-Group", "dev")]


async def test_verified_allowed_proxy_is_believed() -> None:
    authenticator = RequestHeaderAuthenticator(lambda: CONFIG)
    user = await authenticator.authenticate(_credentials(HEADERS, _proxy("front-proxy-client")))
    assert user is not None
    assert (user.name, user.groups) == ("bob", ("dev",))


@pytest.mark.parametrize(
    "pems",
    [(), (_proxy("front-proxy-client", make_ca("front-proxy-ca")),), (_proxy("someone"),)],
    ids=["no-certificate", "untrusted", "cn-not-allowed"],
)
async def test_headers_are_ignored_without_an_allowed_proxy(pems: tuple[str, ...]) -> None:
    authenticator = RequestHeaderAuthenticator(lambda: CONFIG)
    assert await authenticator.authenticate(_credentials(HEADERS, *pems)) is None


async def test_empty_allowed_names_accept_any_cn_the_ca_signed() -> None:
    config = RequestHeaderConfig(ca=CONFIG.ca)
    authenticator = RequestHeaderAuthenticator(lambda: config)
    user = await authenticator.authenticate(_credentials(HEADERS, _proxy("anything")))
    assert user is not None
    assert user.name == "bob"


async def test_unconfigured_is_nobody() -> None:
    authenticator = RequestHeaderAuthenticator(lambda: None)
    pem = _proxy("front-proxy-client")
    assert await authenticator.authenticate(_credentials(HEADERS, pem)) is None
