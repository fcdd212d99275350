"""Starting to serve: bind the port first, then say what was made and what to type next.

The port is bound before anything else happens (certificates, kubeconfig, storage), so a
port already in use is one clear line and leaves nothing behind; the announcement comes
after the application started and the port listens, so everything it says is true.
"""

from __future__ import annotations

import errno
import shutil
import socket
import sys
from collections.abc import Callable
from pathlib import Path

import uvicorn

from ..api.resource import DRA_GROUP


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host``:``port``; ValueError with one line to show if not."""
    where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        sock = socket.socket(family, kind, proto)
    except OSError as exc:
        raise ValueError(f"cannot listen on {where}: {exc.strerror or exc}") from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise ValueError(
                f"cannot listen on {where}: the address is already in use (is the server"
                " already running? stop it, or choose another port with --secure-port)"
            ) from None
        raise ValueError(f"cannot listen on {where}: {exc.strerror or exc}") from None
    sock.set_inheritable(True)
    return sock


def announcement(
    url: str, cert_dir: str, token_file: str, kubeconfig: str | None, storage: str
) -> str:
    """What the server made and what to type next, for the person who started it."""
    certs = Path(cert_dir).resolve()
    lines = [
        f"DRA extension API server: serving {url} (storage {storage})",
        f"  certificates: {certs}/ (CA certificate {certs / 'ca.crt'})",
        f"  tokens:       {Path(token_file).resolve()}",
    ]
    if kubeconfig:
        config = Path(kubeconfig).resolve()
        lines.append(f"  kubeconfig:   {config} (an admin in system:masters)")
        lines.append("Next, in another terminal:")
        lines.append(f"  export KUBECONFIG={config}")
        kubectl = Path(sys.executable).parent / "kubectl"
        if shutil.which("kubectl") is None and kubectl.exists():
            lines.append(f"  alias kubectl={kubectl}")
        lines.append(f"  kubectl api-resources --api-group={DRA_GROUP}")
    else:
        lines.append("  no kubeconfig written (pass --kubeconfig-out PATH for one)")
    lines.append("Stop with Ctrl-C.")
    return "\n".join(lines)


class AnnouncingServer(uvicorn.Server):
    """uvicorn's server, printing ``message`` once it has started to serve, and calling
    ``on_shutdown`` as soon as it begins to shut down (before it waits for connections)."""

    def __init__(
        self,
        config: uvicorn.Config,
        message: str,
        on_shutdown: Callable[[], None] = lambda: None,
    ) -> None:
        super().__init__(config)
        self.message = message
        self.on_shutdown = on_shutdown

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        self.on_shutdown()
        await super().shutdown(sockets=sockets)

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        if not self.should_exit:
            print(self.message, file=sys.stderr, flush=True)
