"""The server as it was before client certificates reached the app: the baseline of bench.tlspeer.

``python -m bench.stockserve serve ...`` runs ``python -m apiserver serve ...`` with uvicorn's
stock httptools protocol and its default server TLS context (no certificate requested), all
else the same.
"""

from __future__ import annotations

from typing import Any

from apiserver import cli
from apiserver.server import serve

_prepare = serve.prepare


def _stock_prepare(options: Any) -> Any:
    config, server = _prepare(options)
    config.http = "httptools"
    config.ssl_context_factory = None
    return config, server


if __name__ == "__main__":
    serve.prepare = _stock_prepare
    cli.main()
