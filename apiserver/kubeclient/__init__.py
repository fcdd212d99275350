"""The one client of Kubernetes API servers: configuration from a kubeconfig or the Pod's
ServiceAccount (TLS, bearer tokens, client certificates), JSON calls with typed ``Status``
errors, paged lists, NDJSON watches resumed from their resourceVersion, and the reflector
loop over a collection (backoff, bookmarks, 410 Gone → list again). The sources, delegated
authentication and authorization, the scheduler shim, the stand-in scheduler and the example
controller all reach an API server through it."""

from ..toolkit import JSON, MERGE_PATCH
from .client import PAGE_SIZE, KubeClient, Listing, json_body
from .collection import Collection
from .config import (
    ClusterConfig,
    KubeconfigError,
    config_for,
    in_cluster_config,
    load_kubeconfig,
)
from .errors import APIError, Conflict, Gone, NotFound, error_of
from .events import ClientEventRecorder, ClientEventWriter
from .listwatch import ListWatch, unexpected_event
from .ndjson import lines, objects
from .transport import network

__all__ = [
    "JSON",
    "MERGE_PATCH",
    "PAGE_SIZE",
    "APIError",
    "ClientEventRecorder",
    "ClientEventWriter",
    "ClusterConfig",
    "Collection",
    "Conflict",
    "Gone",
    "KubeClient",
    "KubeconfigError",
    "ListWatch",
    "Listing",
    "NotFound",
    "config_for",
    "error_of",
    "in_cluster_config",
    "json_body",
    "lines",
    "load_kubeconfig",
    "network",
    "objects",
    "unexpected_event",
]
