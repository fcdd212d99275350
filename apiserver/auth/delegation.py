"""Authentication and authorization built from the command line's options, for both modes.

``AuthOptions`` holds Kubernetes' flags of the same names. Standalone mode adds to its token
file the client certificates of ``--client-ca-file`` and, when configured, front-proxy
authentication (``certificate_authenticators``). Aggregated mode (``delegated``) builds
Kubernetes' delegating chain: front proxy, then client certificates, then bearer tokens by
TokenReview, each CA from its flag or else from the ``extension-apiserver-authentication``
ConfigMap; and authorization by ``system:masters``, the always-allowed paths, then
SubjectAccessReview. The result is a service (its clients and the ConfigMap reader start
and stop with the server).
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import Any

from ..kubeclient import ClusterConfig, KubeClient, config_for
from ..toolkit.options import non_negative, option, string_slice, switch
from .authconfigmap import AuthenticationConfigMap
from .authenticator import Authenticator, AuthenticatorChain
from .authorizer import Authorizer
from .cache import Clock
from .requestheader import (
    DEFAULT_EXTRA_PREFIXES,
    DEFAULT_GROUP_HEADERS,
    DEFAULT_USERNAME_HEADERS,
    RequestHeaderAuthenticator,
    RequestHeaderConfig,
    RequestHeaderSource,
)
from .subjectaccessreview import SubjectAccessReviewAuthorizer
from .tokenreview import TokenReviewAuthenticator
from .union import AlwaysAllowGroups, AlwaysAllowPaths, AuthorizerChain
from .x509 import CASource, CertificateVerifier, ClientCertAuthenticator, FileCA

DEFAULT_ALWAYS_ALLOW_PATHS = ("/healthz", "/readyz", "/livez")


def _seconds(name: str, help: str) -> Any:
    """A cache or resync period: Kubernetes' 10 seconds unless given."""
    return option(name, 10.0, help, check=non_negative)


AUTHORIZATION_MODES = ("RBAC", "AlwaysAllow")


@dataclass
class AuthOptions:
    """Kubernetes' authentication and authorization flags of the same names, and standalone
    mode's token file and authorization mode."""

    token_auth_file: str | None = option(
        "--token-auth-file",
        None,
        "CSV of token,user,uid[,groups]; generated in --cert-dir if absent",
    )
    authorization_mode: str = option(
        "--authorization-mode",
        "RBAC",
        "RBAC: roles and bindings decide; AlwaysAllow: any authenticated user",
        choices=AUTHORIZATION_MODES,
    )
    client_ca_file: str | None = option(
        "--client-ca-file",
        None,
        "CA bundle: a client certificate it signed authenticates as CN (user) and O"
        " (groups); in aggregated mode read from the extension-apiserver-authentication"
        " ConfigMap when absent",
    )
    requestheader_client_ca_file: str | None = option(
        "--requestheader-client-ca-file",
        None,
        "CA bundle of the front proxy (kube-apiserver's --proxy-client-cert-file): only a"
        " connection with a certificate it signed may name the user in headers",
    )
    requestheader_allowed_names: list[str] = string_slice(
        "--requestheader-allowed-names",
        [],
        "CNs the front proxy's certificate may have (comma-separated; empty: any)",
    )
    requestheader_username_headers: list[str] = string_slice(
        "--requestheader-username-headers",
        list(DEFAULT_USERNAME_HEADERS),
        "headers that carry the username",
    )
    requestheader_group_headers: list[str] = string_slice(
        "--requestheader-group-headers", list(DEFAULT_GROUP_HEADERS), "headers that carry the group"
    )
    requestheader_uid_headers: list[str] = string_slice(
        "--requestheader-uid-headers", [], "headers that carry the uid"
    )
    requestheader_extra_headers_prefix: list[str] = string_slice(
        "--requestheader-extra-headers-prefix",
        list(DEFAULT_EXTRA_PREFIXES),
        "header prefixes of the user's extra values",
    )
    authentication_kubeconfig: str | None = option(
        "--authentication-kubeconfig",
        None,
        "kubeconfig of the kube-apiserver for TokenReview and the ConfigMap (aggregated"
        " mode; default: the in-cluster ServiceAccount)",
    )
    authorization_kubeconfig: str | None = option(
        "--authorization-kubeconfig",
        None,
        "kubeconfig of the kube-apiserver for SubjectAccessReview (aggregated mode;"
        " default: the in-cluster ServiceAccount)",
    )
    authentication_skip_lookup: bool = switch(
        "--authentication-skip-lookup",
        "do not read the extension-apiserver-authentication ConfigMap",
    )
    authentication_token_webhook_cache_ttl: float = _seconds(
        "--authentication-token-webhook-cache-ttl", "seconds a TokenReview answer is kept"
    )
    authentication_config_resync: float = _seconds(
        "--authentication-config-resync-period",
        "seconds between readings of the extension-apiserver-authentication ConfigMap",
    )
    authorization_webhook_cache_authorized_ttl: float = _seconds(
        "--authorization-webhook-cache-authorized-ttl",
        "seconds an allowing SubjectAccessReview answer is kept",
    )
    authorization_webhook_cache_unauthorized_ttl: float = _seconds(
        "--authorization-webhook-cache-unauthorized-ttl",
        "seconds a refusing SubjectAccessReview answer is kept",
    )
    authorization_always_allow_paths: list[str] = string_slice(
        "--authorization-always-allow-paths",
        list(DEFAULT_ALWAYS_ALLOW_PATHS),
        "paths allowed without a SubjectAccessReview; a final * makes a prefix",
    )

    def ca_files(self) -> list[str]:
        """The CA files the flags name (the TLS layer's fallback trust, see server/tlspeer)."""
        return [f for f in (self.client_ca_file, self.requestheader_client_ca_file) if f]


def _ca_file(path: str, flag: str, clock: Clock = time.monotonic) -> FileCA:
    try:
        return FileCA(path, clock=clock)
    except (OSError, ValueError) as exc:
        raise ValueError(f"{flag} {path}: {exc}") from exc


def request_header_of_flags(
    options: AuthOptions, clock: Clock = time.monotonic
) -> RequestHeaderSource | None:
    """The front-proxy settings of the flags, their CA file re-read when it changes."""
    if not options.requestheader_client_ca_file:
        return None
    ca = _ca_file(options.requestheader_client_ca_file, "--requestheader-client-ca-file", clock)
    config = RequestHeaderConfig(
        ca=ca.bundle,
        allowed_names=tuple(options.requestheader_allowed_names),
        username_headers=tuple(options.requestheader_username_headers),
        uid_headers=tuple(options.requestheader_uid_headers),
        group_headers=tuple(options.requestheader_group_headers),
        extra_prefixes=tuple(options.requestheader_extra_headers_prefix),
    )

    def current() -> RequestHeaderConfig:
        nonlocal config
        bundle = ca()
        if bundle is not None and bundle is not config.ca:
            config = dataclasses.replace(config, ca=bundle)
        return config

    return current


def certificate_authenticators(
    client_ca: CASource | None, request_header: RequestHeaderSource | None
) -> list[Authenticator]:
    """Front proxy first, then client certificates (Kubernetes' order); one verifier cache."""
    verifier = CertificateVerifier()
    methods: list[Authenticator] = []
    if request_header is not None:
        methods.append(RequestHeaderAuthenticator(request_header, verifier))
    if client_ca is not None:
        methods.append(ClientCertAuthenticator(client_ca, verifier))
    return methods


def standalone_certificate_authenticators(options: AuthOptions) -> list[Authenticator]:
    """The certificate methods the flags configure, for standalone mode (no ConfigMap)."""
    client_ca = (
        _ca_file(options.client_ca_file, "--client-ca-file") if options.client_ca_file else None
    )
    return certificate_authenticators(client_ca, request_header_of_flags(options))


class DelegatedAuth:
    """Aggregated mode's authenticator and authorizer, and what they need running."""

    def __init__(self, options: AuthOptions) -> None:
        authn_config = self._config(options.authentication_kubeconfig)
        same = options.authorization_kubeconfig == options.authentication_kubeconfig
        self.authn_client = KubeClient(authn_config, timeout=10.0)
        self.authz_client = (
            self.authn_client
            if same
            else KubeClient(self._config(options.authorization_kubeconfig), timeout=10.0)
        )
        self.configmap: AuthenticationConfigMap | None = None

        request_header_source = request_header_of_flags(options)
        client_ca_source: CASource | None = None
        if options.client_ca_file:
            client_ca_source = _ca_file(options.client_ca_file, "--client-ca-file")
        if not options.authentication_skip_lookup and (
            request_header_source is None or client_ca_source is None
        ):
            self.configmap = AuthenticationConfigMap(
                self.authn_client, options.authentication_config_resync
            )
            if request_header_source is None:
                request_header_source = self.configmap.request_header
            if client_ca_source is None:
                client_ca_source = self.configmap.client_ca
        self.authenticator = AuthenticatorChain(
            [
                *certificate_authenticators(client_ca_source, request_header_source),
                TokenReviewAuthenticator(
                    self.authn_client, options.authentication_token_webhook_cache_ttl
                ),
            ]
        )
        self.authorizer = AuthorizerChain(
            [
                AlwaysAllowGroups(),
                AlwaysAllowPaths(options.authorization_always_allow_paths),
                SubjectAccessReviewAuthorizer(
                    self.authz_client,
                    options.authorization_webhook_cache_authorized_ttl,
                    options.authorization_webhook_cache_unauthorized_ttl,
                ),
            ]
        )

    @staticmethod
    def _config(kubeconfig: str | None) -> ClusterConfig:
        return config_for(
            kubeconfig, hint="give --authentication-kubeconfig and --authorization-kubeconfig"
        )

    async def start(self) -> None:
        if self.configmap is not None:
            await self.configmap.start()

    async def close(self) -> None:
        if self.configmap is not None:
            await self.configmap.close()
        await self.authn_client.aclose()
        if self.authz_client is not self.authn_client:
            await self.authz_client.aclose()

    def readiness(self) -> dict[str, bool]:
        return {}


@dataclass
class ModeAuth:
    """Who may call the server in one mode, and the service that keeps it working."""

    authenticator: Authenticator
    authorizer: Authorizer | None
    service: DelegatedAuth | None = None


def auth_for_mode(mode: str, options: AuthOptions, tokens: Authenticator | None) -> ModeAuth:
    """Standalone: the token file (``tokens``), then the certificate methods of the flags,
    every authenticated user allowed; aggregated: the delegating chain and authorizer."""
    if mode == "aggregated":
        delegated = DelegatedAuth(options)
        return ModeAuth(delegated.authenticator, delegated.authorizer, delegated)
    methods = [tokens] if tokens is not None else []
    return ModeAuth(
        AuthenticatorChain([*methods, *standalone_certificate_authenticators(options)]), None
    )
