"""The shim's HTTPS endpoints, as a kube-scheduler extender configuration names them:
``POST /filter``, ``/prioritize`` and ``/bind`` (``urlPrefix`` is the shim's URL),
``GET /healthz``, and ``GET /metrics`` (Prometheus, the shim's own registry). A request the
scheduler would not send is a 400 carrying the protocol's ``Error``. ``run_shim`` serves the
verbs without FastAPI's layers around them (``DirectVerbs``), behind the shim's door
(shim/door.py): only the scheduler gets through."""

from __future__ import annotations

import contextlib
import functools
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import orjson
import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import Response
from fastapi.routing import APIRoute
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.types import Receive, Scope, Send

from ..api.resource.group import DRA_GROUP
from ..kubeclient import APIError, KubeClient, config_for
from ..server.certs import ensure_serving_certs
from ..server.tlspeer import PeerCertificateProtocol, ssl_context_factory
from ..toolkit.collector import set_young_threshold
from ..toolkit.options import (
    comma_list,
    gc_young_threshold_option,
    log_level_option,
    non_negative,
    option,
    port_number,
)
from .binding import ATTACH_TIMEOUT, Binder
from .door import SCHEDULER_USER, SchedulerOnly, ShimDoor, laptop_client_ca, shim_authenticator
from .extender import (
    BindArgs,
    FilterArgs,
    FilterResult,
    ProtocolError,
    bind_result,
    host_priorities,
)
from .metrics import BAD_REQUEST, ERROR, OK, ShimMetrics
from .paths import Paths
from .scheduling import Scheduler

log = logging.getLogger(__name__)


class _Answer(Response):
    """An extender answer that remembers whether it carries an ``Error`` (for the metrics,
    without decoding what was just encoded)."""

    failed = False


def _json(body: Any, code: int = 200) -> Response:
    answer = _Answer(orjson.dumps(body), status_code=code, media_type="application/json")
    answer.failed = isinstance(body, dict) and bool(body.get("Error"))
    return answer


async def _body(request: Request) -> Any:
    try:
        return orjson.loads(await request.body())
    except orjson.JSONDecodeError as err:
        raise ProtocolError(f"the request body is not JSON: {err}") from err


Verb = Callable[[Request], Awaitable[Response]]
Args = TypeVar("Args")


def _parsed(
    parse: Callable[[Any], Args], refused: Callable[[str], Any]
) -> Callable[[Callable[[Args], Awaitable[Response]]], Verb]:
    """The verb called with its parsed arguments; a body the protocol does not allow is a
    400 carrying ``refused(why)``, the verb's own answer shape."""

    def wrap(verb: Callable[[Args], Awaitable[Response]]) -> Verb:
        # Not functools.wraps: FastAPI reads the endpoint's signature, which must stay
        # (request: Request), not the verb's.
        async def parsed(request: Request) -> Response:
            try:
                args = parse(await _body(request))
            except ProtocolError as err:
                return _json(refused(str(err)), 400)
            return await verb(args)

        return parsed

    return wrap


def _outcome(response: Response) -> str:
    if response.status_code == 400:
        return BAD_REQUEST
    if response.status_code >= 500:
        return ERROR
    return ERROR if isinstance(response, _Answer) and response.failed else OK


def _counted(metrics: ShimMetrics, verb: str) -> Callable[[Verb], Verb]:
    """The verb's calls counted by outcome and timed."""

    def wrap(handler: Verb) -> Verb:
        @functools.wraps(handler)
        async def counted(request: Request) -> Response:
            began = time.perf_counter()
            response = await handler(request)
            metrics.call(verb, _outcome(response), time.perf_counter() - began)
            return response

        return counted

    return wrap


def build_app(
    api: KubeClient,
    paths: Paths,
    *,
    attach_timeout: float = ATTACH_TIMEOUT,
    metrics: ShimMetrics | None = None,
) -> FastAPI:
    metrics = metrics if metrics is not None else ShimMetrics()
    scheduler = Scheduler(api, paths)
    binder = Binder(
        api, paths, attach_timeout=attach_timeout, metrics=metrics, filtered=scheduler.memory
    )

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        await api.aclose()

    app = FastAPI(title="DRA scheduler shim", lifespan=lifespan, openapi_url=None)

    @app.post("/filter")
    @_counted(metrics, "filter")
    @_parsed(FilterArgs.parse, lambda why: FilterResult(error=why).wire(None))
    async def filter_nodes(args: FilterArgs) -> Response:
        return _json((await scheduler.filter(args)).wire(args))

    @app.post("/prioritize")
    @_counted(metrics, "prioritize")
    @_parsed(FilterArgs.parse, lambda why: {"Error": why})
    async def prioritize(args: FilterArgs) -> Response:
        try:
            scores = await scheduler.prioritize(args)
        except APIError as err:
            return _json({"Error": f"allocation review failed: {err}"}, 500)
        return _json(host_priorities(scores, args.node_names))

    @app.post("/bind")
    @_counted(metrics, "bind")
    @_parsed(BindArgs.parse, bind_result)
    async def bind(args: BindArgs) -> Response:
        return _json(bind_result(await binder.bind(args)))

    @app.get("/healthz")
    async def healthz() -> Response:
        return Response("ok", media_type="text/plain")

    @app.get("/metrics")
    async def metrics_endpoint() -> Response:
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    return app


VERBS = ("/filter", "/prioritize", "/bind")


class DirectVerbs:
    """The extender's verbs go straight to their endpoints; everything else (health,
    metrics, a wrong method or path) to the FastAPI app they are declared on.

    kube-scheduler calls the verbs three times per pod, and FastAPI's and Starlette's
    middleware and routing cost a fifth of the shim's CPU, as they did for the server's
    resource requests (server/app.py). An endpoint answers every failure it knows; anything
    else becomes a 500 carrying the protocol's ``Error``."""

    def __init__(self, app: FastAPI) -> None:
        self.app = app
        self.verbs: dict[str, Verb] = {
            route.path: route.endpoint
            for route in app.routes
            if isinstance(route, APIRoute)
            and route.path in VERBS
            and "POST" in (route.methods or ())
        }

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        verb = None
        if scope["type"] == "http" and scope["method"] == "POST":
            verb = self.verbs.get(scope["path"])
        if verb is None:
            await self.app(scope, receive, send)
            return
        try:
            response = await verb(Request(scope, receive))
        except Exception as exc:
            log.exception("%s failed", scope["path"])
            response = _json({"Error": f"internal error: {type(exc).__name__}: {exc}"}, 500)
        await response(scope, receive, send)


@dataclass
class ShimOptions:
    kubeconfig: str | None = option(
        "--kubeconfig",
        None,
        "credentials for the API server (default: the pod's ServiceAccount, in a cluster)",
    )
    server: str | None = option(
        "--server", None, "the API server's URL (default: the kubeconfig's)"
    )
    group: str = option("--group", DRA_GROUP, "API group of the server's own kinds")
    bind_address: str = option("--bind-address", "127.0.0.1", "address to listen on")
    port: int = option("--port", 8888, "HTTPS port", check=port_number)
    cert_dir: str = option(
        "--cert-dir",
        "certs/shim",
        "where a self-signed serving certificate is made when no --tls-cert-file is given",
    )
    tls_cert_file: str | None = option("--tls-cert-file", None, "serving certificate")
    tls_private_key_file: str | None = option(
        "--tls-private-key-file", None, "key of --tls-cert-file"
    )
    tls_san: list[str] = option("--tls-san", [], "extra name for the certificate", action="append")
    attach_timeout: float = option(
        "--attach-timeout",
        ATTACH_TIMEOUT,
        "seconds a bind waits for fabric devices to be attached before it fails",
        check=non_negative,
    )
    client_ca_file: str | None = option(
        "--client-ca-file",
        None,
        "CA of the scheduler's client certificate (default: with a self-made serving"
        " certificate, the CA of --cert-dir, which also signs <cert-dir>/scheduler.crt;"
        " otherwise none, and only bearer tokens checked by TokenReview are accepted)",
    )
    allowed_users: list[str] = option(
        "--allowed-users",
        [SCHEDULER_USER],
        "the users (client certificate CN or TokenReview user name) that may call"
        " filter, prioritize and bind, comma-separated",
        parse=comma_list,
    )
    allowed_groups: list[str] = option(
        "--allowed-groups",
        [],
        "the groups that may call filter, prioritize and bind, comma-separated",
        parse=comma_list,
    )
    log_level: str = log_level_option()
    gc_young_threshold: int = gc_young_threshold_option()


def run_shim(options: ShimOptions) -> None:
    set_young_threshold(options.gc_young_threshold)
    config = config_for(options.kubeconfig, hint="give --kubeconfig", server=options.server)
    client_ca = options.client_ca_file
    if options.tls_cert_file and options.tls_private_key_file:
        cert, key = options.tls_cert_file, options.tls_private_key_file
    else:
        files = ensure_serving_certs(options.cert_dir, [options.bind_address, *options.tls_san])
        cert, key = str(files.cert), str(files.key)
        if client_ca is None:
            client_ca = str(laptop_client_ca(options.cert_dir))
    if client_ca is None:
        log.warning("no --client-ca-file: only bearer tokens (checked by TokenReview) get in")
    api = KubeClient(config, user_agent="dra-scheduler-shim")
    app = ShimDoor(
        DirectVerbs(build_app(api, Paths(options.group), attach_timeout=options.attach_timeout)),
        shim_authenticator(client_ca, api),
        SchedulerOnly(options.allowed_users, options.allowed_groups),
    )
    uvicorn.run(
        app,
        host=options.bind_address,
        port=options.port,
        ssl_certfile=cert,
        ssl_keyfile=key,
        log_level=options.log_level,
        access_log=False,
        proxy_headers=False,  # no proxy in front: the door reads the peer's certificate
        # The client certificate asked for in the handshake and put into the scope; the
        # door verifies it against the client CA (an untrusted one is a 401).
        http=PeerCertificateProtocol,
        ssl_context_factory=ssl_context_factory([client_ca] if client_ca else []),
    )
