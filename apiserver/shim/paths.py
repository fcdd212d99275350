"""Where the shim finds what it reads and writes: the upstream kinds at their fixed group
(``resource.k8s.io/v1``, core ``v1``), the server's own kinds under its configured group."""

from __future__ import annotations

from dataclasses import dataclass

UPSTREAM_VERSION = "resource.k8s.io/v1"
UPSTREAM = f"/apis/{UPSTREAM_VERSION}"
OWN_VERSION = "v1alpha3"


@dataclass(frozen=True)
class Paths:
    group: str = "resource.k8s.io"

    @property
    def _own(self) -> str:
        return f"/apis/{self.group}/{OWN_VERSION}"

    @property
    def allocation_reviews(self) -> str:
        return f"{self._own}/allocationreviews"

    def reservation(self, name: str) -> str:
        return f"{self._own}/devicereservations/{name}"

    @staticmethod
    def claims(namespace: str) -> str:
        return f"{UPSTREAM}/namespaces/{namespace}/resourceclaims"

    @staticmethod
    def claim(namespace: str, name: str) -> str:
        return f"{UPSTREAM}/namespaces/{namespace}/resourceclaims/{name}"

    @staticmethod
    def pod(namespace: str, name: str) -> str:
        return f"/api/v1/namespaces/{namespace}/pods/{name}"
