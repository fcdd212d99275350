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
from dataclasses import dataclass, field

from ..kubeclient import ClusterConfig, KubeClient, config_for
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


@dataclass
class AuthOptions:
    client_ca_file: str | None = None
    requestheader_client_ca_file: str | None = None
    requestheader_allowed_names: list[str] = field(default_factory=list)
    requestheader_username_headers: list[str] = field(
        default_factory=lambda: list(DEFAULT_USERNAME_HEADERS)
    )
    requestheader_uid_headers: list[str] = field(default_factory=list)
    requestheader_group_headers: list[str] = field(
        default_factory=lambda: list(DEFAULT_GROUP_HEADERS)
    )
    requestheader_extra_headers_prefix: list[str] = field(
        default_factory=lambda: list(DEFAULT_EXTRA_PREFIXES)
    )
    authentication_kubeconfig: str | None = None
    authorization_kubeconfig: str | None = None
    authentication_skip_lookup: bool = False
    authentication_token_webhook_cache_ttl: float = 10.0
    authentication_config_resync: float = 10.0
    authorization_webhook_cache_authorized_ttl: float = 10.0
    authorization_webhook_cache_unauthorized_ttl: float = 10.0
    authorization_always_allow_paths: list[str] = field(
        default_factory=lambda: list(DEFAULT_ALWAYS_ALLOW_PATHS)
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
