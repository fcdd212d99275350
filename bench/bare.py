"""The ceiling: a bare Starlette app under uvicorn, answering bytes prepared in advance.

Started like the server (same TLS certificate, uvloop, httptools, one worker) as
``python -m bench.bare --port P --cert C --key K --routes FILE``, where FILE is JSON
mapping each GET path to the file holding its response body.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Awaitable, Callable
from pathlib import Path

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route


def build(bodies: dict[str, bytes]) -> Starlette:
    def answer(body: bytes) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(_request: Request) -> Response:
            return Response(body, media_type="application/json")

        return endpoint

    async def readyz(_request: Request) -> Response:
        return PlainTextResponse("ok")

    routes = [Route("/readyz", readyz)]
    routes += [Route(path, answer(body), methods=["GET"]) for path, body in bodies.items()]
    return Starlette(routes=routes)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.bare")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--routes", required=True)
    args = parser.parse_args()
    routes = json.loads(Path(args.routes).read_text())
    bodies = {path: Path(file).read_bytes() for path, file in routes.items()}
    uvicorn.run(
        build(bodies),
        host="127.0.0.1",
        port=args.port,
        ssl_certfile=args.cert,
        ssl_keyfile=args.key,
        log_level="warning",
        access_log=False,
        loop="uvloop",
        http="httptools",
        lifespan="off",
    )


if __name__ == "__main__":
    main()
