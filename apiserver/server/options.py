"""Every option of ``serve``: one object per concern, each declared beside what it
configures (``toolkit.options``); ``python -m apiserver serve --help`` is made from them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..auth.delegation import AuthOptions
from ..storage.options import StorageOptions
from ..toolkit.options import nested
from .allocation import AllocationOptions
from .app import ServerSettings
from .deviceview import DeviceViewOptions
from .modes import ClusterOptions
from .poolstatus import PoolStatusOptions
from .poolview import PoolViewOptions
from .serving import ServingOptions


@dataclass
class ServeOptions:
    """Every option of ``serve``, one object per concern."""

    serving: ServingOptions = nested(
        ServingOptions, "serving", "where and how the server listens, and what it logs"
    )
    cluster: ClusterOptions = nested(
        ClusterOptions, "mode", "where the cluster's objects come from, and our API group"
    )
    settings: ServerSettings = nested(ServerSettings, "requests", "limits and timings of requests")
    storage: StorageOptions = nested(
        StorageOptions, "storage", "where objects are kept, and watched"
    )
    auth: AuthOptions = nested(
        AuthOptions,
        "authentication and authorization",
        "client certificates in both modes; in aggregated mode front-proxy headers, and"
        " bearer tokens (TokenReview) and every request (SubjectAccessReview) checked by the"
        " kube-apiserver",
    )
    device_view: DeviceViewOptions = nested(
        DeviceViewOptions, "device view", "the Device kind and ResourceSlicePatch status"
    )
    pools: PoolViewOptions = nested(PoolViewOptions, "pools", "the live ResourcePool kind")
    pool_status: PoolStatusOptions = nested(
        PoolStatusOptions, "pool status", "ResourcePoolStatusRequests (KEP-5677)"
    )
    allocation: AllocationOptions = nested(
        AllocationOptions, "allocation", "AllocationReviews and the DeviceReservations they hold"
    )

    @property
    def token_file(self) -> Path:
        """``--token-auth-file``, else ``tokens.csv`` in ``--cert-dir``."""
        return Path(self.auth.token_auth_file or Path(self.serving.cert_dir) / "tokens.csv")
