"""The command line's authentication flags: Kubernetes' names, lists comma-separated or
repeated, a given list replacing the default."""

from __future__ import annotations

from apiserver.auth.delegation import AuthOptions
from apiserver.cli import build_parser
from apiserver.server.serve import ServeOptions
from apiserver.toolkit.options import from_args


def _options(*flags: str) -> AuthOptions:
    return from_args(ServeOptions, build_parser().parse_args(["serve", *flags])).auth


def test_defaults_are_kubernetes_defaults() -> None:
    options = _options()
    assert options.requestheader_username_headers == ["X-Remote-User"]
    assert options.requestheader_group_headers == ["X-Remote-Group"]
    assert options.requestheader_extra_headers_prefix == ["X-Remote-Extra-"]
    assert options.requestheader_uid_headers == []
    assert options.requestheader_allowed_names == []
    assert options.authorization_always_allow_paths == ["/healthz", "/readyz", "/livez"]
    assert options.authentication_token_webhook_cache_ttl == 10.0
    assert options.authorization_webhook_cache_authorized_ttl == 10.0
    assert options.authorization_webhook_cache_unauthorized_ttl == 10.0
    assert not options.authentication_skip_lookup


def test_lists_comma_separated_and_repeated_replace_the_default() -> None:
    options = _options(
        "--requestheader-allowed-names",
        "front-proxy-client,aggregator",
        "--requestheader-allowed-names",
        "other",
        "--requestheader-username-headers",
        "X-User",
        "--authorization-always-allow-paths",
        "/healthz,/metrics/*",
        "--authorization-webhook-cache-unauthorized-ttl",
        "2.5",
    )
    assert options.requestheader_allowed_names == ["front-proxy-client", "aggregator", "other"]
    assert options.requestheader_username_headers == ["X-User"]
    assert options.authorization_always_allow_paths == ["/healthz", "/metrics/*"]
    assert options.authorization_webhook_cache_unauthorized_ttl == 2.5
