"""What a request presents to authenticate: its headers and its TLS client certificates.

Read once from the ASGI scope. The certificate chain is the one the ASGI TLS extension
carries (``scope["extensions"]["tls"]["client_cert_chain"]``, PEM, the client's own
certificate first), when the server hands it to the application.
"""

from __future__ import annotations

from dataclasses import dataclass

from starlette.types import Scope


@dataclass(frozen=True)
class Credentials:
    headers: tuple[tuple[str, str], ...]
    """Every request header, names lower-cased, in the order sent."""
    client_cert_chain: tuple[str, ...] = ()

    @classmethod
    def from_scope(cls, scope: Scope) -> Credentials:
        headers = tuple(
            (k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in scope["headers"]
        )
        tls = (scope.get("extensions") or {}).get("tls") or {}
        chain = tuple(str(c) for c in tls.get("client_cert_chain") or ())
        return cls(headers, chain)

    def header(self, name: str) -> str | None:
        """The first value of a header (``name`` lower-case)."""
        return next((v for k, v in self.headers if k == name), None)

    def header_values(self, name: str) -> list[str]:
        """Every value of a header sent several times (``name`` lower-case)."""
        return [v for k, v in self.headers if k == name]
