"""Run the server from its options: TLS material, tokens and the admin kubeconfig, the
store, who may do what, the cluster of the mode, then the parts (``assembly``) and uvicorn.
The port is bound before anything is written (``startup``)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from pathlib import Path

import uvicorn

from ..auth import (
    MASTERS,
    AllowAuthenticated,
    Authorizer,
    TokenAuthenticator,
    admin_token,
    generate_token_file,
    read_token_file,
)
from ..auth.delegation import AuthOptions, ModeAuth, auth_for_mode
from ..auth.reviewkinds import review_strategies
from ..auth.reviews import EveryRule, RuleResolver
from ..kubeclient import load_kubeconfig
from ..machinery import ReviewStrategy
from ..machinery.user import UserInfo
from ..storage import Store
from ..storage.options import open_store
from ..toolkit.collector import set_young_threshold
from ..toolkit.options import validated
from .accesslog import enable_access_log
from .app import APIServer, Service, build_app
from .assembly import assemble
from .cluster import Cluster, RateLimit
from .interrupt import interruptible
from .kubeconfig import write_kubeconfig
from .modes import build_cluster, check_upstream, stored_kinds
from .options import ServeOptions
from .rbac import RBACPolicy, RBACService
from .serving import serving_files, uvicorn_config
from .startup import AnnouncingServer, announcement, bind

__all__ = ["ServeOptions", "prepare", "serve"]

log = logging.getLogger("apiserver")


def _upstream_token(options: ServeOptions) -> str | None:
    """Aggregated mode: the bearer token of ``--kubeconfig``, which the kube-apiserver reviews
    for us too, for a kubeconfig that talks to this server directly (tests, debugging)."""
    if not options.cluster.kubeconfig:
        return None
    return load_kubeconfig(options.cluster.kubeconfig).token


def _standalone_tokens(options: ServeOptions) -> list[tuple[str, UserInfo]]:
    """Standalone mode's bearer tokens, from the token file (made when absent); aggregated
    mode has none: the kube-apiserver reviews tokens (TokenReview)."""
    if not options.cluster.standalone:
        return []
    if not options.token_file.exists():
        generate_token_file(options.token_file)
    return read_token_file(options.token_file)


def _delegation(options: ServeOptions) -> AuthOptions:
    """Aggregated mode with ``--kubeconfig``: the kube-apiserver the data comes from also
    reviews tokens and access, unless the delegation flags name another."""
    auth, kubeconfig = options.auth, options.cluster.kubeconfig
    if options.cluster.standalone or not kubeconfig:
        return auth
    return replace(
        auth,
        authentication_kubeconfig=auth.authentication_kubeconfig or kubeconfig,
        authorization_kubeconfig=auth.authorization_kubeconfig or kubeconfig,
    )


def _write_admin_kubeconfig(
    options: ServeOptions, tokens: list[tuple[str, UserInfo]], ca_cert: Path
) -> None:
    """``--kubeconfig-out``: a kubeconfig with an admin's token (standalone: one of the token
    file's in system:masters; aggregated: the ``--kubeconfig``'s own, if it has one)."""
    out = options.serving.kubeconfig_out
    if not out:
        return
    standalone = options.cluster.standalone
    token = admin_token(tokens) if standalone else _upstream_token(options)
    if token is None and standalone:
        raise ValueError(
            f"{options.token_file} has no token of a user in {MASTERS} for the kubeconfig"
        )
    if token is None:
        log.warning(
            "--kubeconfig-out: not written: aggregated mode has no local tokens and the"
            " --kubeconfig has no bearer token to reuse"
        )
        return
    write_kubeconfig(out, options.serving.url, ca_cert, token)


def _store(options: ServeOptions) -> Store:
    """The store, the watch cache in front of every kind the mode keeps in it."""
    cluster = options.cluster
    cached = [
        s.resource.key_prefix()
        for s in stored_kinds(cluster.mode, cluster.group)
        if not isinstance(s, ReviewStrategy)
    ]
    return open_store(options.storage, cached)


@dataclass
class _Access:
    """Who may do what: the authorizer every request meets, the rule resolver of
    SelfSubjectRulesReview, and standalone's RBAC policy when it decides."""

    authorizer: Authorizer
    resolver: RuleResolver
    policy: RBACPolicy | None


def _access(options: ServeOptions, auth: ModeAuth) -> _Access:
    """Standalone decides with its own RBAC (or allows every authenticated user with
    ``--authorization-mode AlwaysAllow``); aggregated mode asks the kube-apiserver."""
    rbac = options.cluster.standalone and options.auth.authorization_mode == "RBAC"
    policy = RBACPolicy() if rbac else None
    if auth.authorizer is not None:
        authorizer: Authorizer = auth.authorizer
    elif policy is not None:
        authorizer = policy.authorizer
    else:
        authorizer = AllowAuthenticated()
    resolver: RuleResolver = policy.authorizer if policy is not None else EveryRule()
    return _Access(authorizer, resolver, policy)


def _cluster(options: ServeOptions, store: Store, auth: ModeAuth, access: _Access) -> Cluster:
    limit = RateLimit(options.pool_status.create_rate, options.pool_status.create_burst)
    return build_cluster(
        options.cluster,
        store,
        authenticator=auth.authenticator,
        authorizer=access.authorizer,
        pool_status_create_limit=limit,
        admission=[access.policy.escalation] if access.policy is not None else [],
        reviews=review_strategies(auth.authenticator, access.authorizer, access.resolver),
    )


def prepare(options: ServeOptions) -> tuple[uvicorn.Config, APIServer]:
    """The uvicorn configuration and the server the options describe: certificates, tokens
    and the admin kubeconfig written, the store opened, every part assembled (nothing
    started: the app's lifespan starts them)."""
    validated(options)
    if not options.cluster.standalone:
        check_upstream(options.cluster.kubeconfig, options.cluster.group)
    files = serving_files(options.serving)
    tokens = _standalone_tokens(options)
    options.auth = _delegation(options)
    auth = auth_for_mode(
        options.cluster.mode,
        options.auth,
        TokenAuthenticator(dict(tokens)) if options.cluster.standalone else None,
    )
    _write_admin_kubeconfig(options, tokens, files.ca_cert)
    store = _store(options)
    access = _access(options, auth)
    cluster = _cluster(options, store, auth, access)
    first: list[Service] = []  # in place before anything else starts
    if access.policy is not None:
        first.append(RBACService(cluster, access.policy, options.cluster.group))
    if auth.service is not None:
        first.append(auth.service)
    server = assemble(options, cluster, store, access.authorizer, first)
    if options.serving.access_log:
        enable_access_log()
    app = build_app(
        server, cluster.authenticator, cluster.authorizer, access_log=options.serving.access_log
    )
    return uvicorn_config(app, options.serving, files, options.auth.ca_files()), server


def serve(options: ServeOptions) -> None:
    """Serve until SIGTERM or Ctrl-C; Ctrl-C, at any point, exits with status 130."""
    with interruptible():
        _serve(options)


def _serve(options: ServeOptions) -> None:
    serving = options.serving
    set_young_threshold(serving.gc_young_threshold)
    listener = bind(serving.bind_address, serving.secure_port)  # before anything is written
    config, _server = prepare(options)
    message = announcement(
        serving.url,
        serving.cert_dir,
        str(options.token_file),
        serving.kubeconfig_out,
        options.storage.storage,
    )
    # Watches end when the server begins to shut down, rather than being cancelled (and
    # logged as failed requests) once the grace period is over.
    server = AnnouncingServer(config, message, on_shutdown=_server.handler.stopping.set)
    server.run(sockets=[listener])
