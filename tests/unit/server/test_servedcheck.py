"""The start-up check of aggregated mode over a kube-apiserver's answers (an in-process
stand-in for its APIService list and discovery)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from apiserver.kinds import strategies
from apiserver.kubeclient import ClusterConfig, KubeClient
from apiserver.server.modes import served_group_versions, upstream_client
from apiserver.server.servedcheck import (
    APISERVICES,
    UpstreamCheckError,
    check_served_versions,
    taken_versions,
)

OURS = ["resource.k8s.io/v1alpha1", "resource.k8s.io/v1alpha3"]


class Upstream(KubeClient):
    """Answers GETs from a table of path → (status, body), in process; records what was
    asked."""

    def __init__(self, answers: dict[str, tuple[int, Any]]) -> None:
        self.answers = answers
        self.asked: list[str] = []
        super().__init__(
            ClusterConfig("https://unused"), transport=httpx.MockTransport(self._answer)
        )

    def _answer(self, request: httpx.Request) -> httpx.Response:
        assert request.method == "GET"
        self.asked.append(request.url.path)
        status, body = self.answers.get(request.url.path, (404, None))
        return httpx.Response(status, json=body) if body is not None else httpx.Response(status)


def apiservice(name: str, service: dict[str, Any] | None, **labels: str) -> dict[str, Any]:
    version, group = name.split(".", 1)
    spec: dict[str, Any] = {"group": group, "version": version}
    if service is not None:
        spec["service"] = service
    return {"metadata": {"name": name, "labels": labels}, "spec": spec}


def listed(*items: dict[str, Any]) -> tuple[int, Any]:
    return 200, {"kind": "APIServiceList", "items": list(items)}


def test_our_group_versions_are_the_ones_the_apiservices_register() -> None:
    assert served_group_versions("resource.k8s.io") == OURS
    assert served_group_versions("resource.x-k8s.io") == [
        "resource.x-k8s.io/v1alpha1",
        "resource.x-k8s.io/v1alpha3",
    ]


def test_every_version_a_kind_is_served_in_is_checked() -> None:
    """ResourcePoolStatusRequest is served in upstream's v1alpha3 as well as in the v1alpha1
    it is stored in: both are versions the check asks about, so a cluster serving its own
    v1alpha3 ResourcePoolStatusRequests (Kubernetes 1.36+) is never claimed."""
    served = {
        s.resource.group_version
        for s in strategies("resource.k8s.io", standalone=False)
        if s.resource.plural == "resourcepoolstatusrequests"
    }
    assert served == {"resource.k8s.io/v1alpha1", "resource.k8s.io/v1alpha3"}
    assert served <= set(served_group_versions("resource.k8s.io"))


async def test_a_local_apiservice_is_a_clash_named_with_the_flag_to_use() -> None:
    """Kubernetes 1.36+ with resource.k8s.io/v1alpha3 enabled: a local, automanaged
    APIService. The refusal names it and the flag."""
    upstream = Upstream(
        {
            APISERVICES: listed(
                apiservice(
                    "v1alpha3.resource.k8s.io",
                    None,
                    **{"kube-aggregator.kubernetes.io/automanaged": "onstart"},
                ),
                apiservice("v1.resource.k8s.io", None),
            )
        }
    )
    with pytest.raises(UpstreamCheckError) as refused:
        await check_served_versions(upstream, "resource.k8s.io", OURS)
    message = str(refused.value)
    assert "APIService v1alpha3.resource.k8s.io is local" in message
    assert "automanaged=onstart" in message
    assert "--group resource.x-k8s.io" in message
    assert "v1alpha1" not in message  # that one is free
    assert "/apis/resource.k8s.io/v1alpha3" not in upstream.asked  # the APIService said it


async def test_apiservices_that_route_to_a_service_are_no_clash() -> None:
    """Our own registration (after the first install) routes to our Service."""
    service = {"name": "dra-apiserver", "namespace": "dra-system", "port": 443}
    upstream = Upstream(
        {
            APISERVICES: listed(
                apiservice("v1alpha3.resource.k8s.io", service),
                apiservice("v1alpha1.resource.k8s.io", service),
            ),
            # Discovery proxies to the registration; it must not be mistaken for a clash.
            "/apis/resource.k8s.io/v1alpha3": (200, {"kind": "APIResourceList"}),
        }
    )
    assert await taken_versions(upstream, OURS) == []
    assert upstream.asked == [APISERVICES]


async def test_a_built_in_apiservice_pointed_at_a_service_is_still_a_clash() -> None:
    """Applying our APIService over the kube-apiserver's own keeps its automanaged label;
    the kube-apiserver makes it local again at its next start."""
    service = {"name": "dra-apiserver", "namespace": "dra-system", "port": 443}
    upstream = Upstream(
        {
            APISERVICES: listed(
                apiservice(
                    "v1alpha3.resource.k8s.io",
                    service,
                    **{"kube-aggregator.kubernetes.io/automanaged": "onstart"},
                ),
                apiservice("v1alpha1.resource.k8s.io", service),
            )
        }
    )
    [taken] = await taken_versions(upstream, OURS)
    assert "APIService v1alpha3.resource.k8s.io" in taken
    assert "local again" in taken


async def test_without_apiservices_discovery_decides() -> None:
    """A server with no aggregation layer (this server standalone): what its discovery lists
    is taken, the rest is free."""
    upstream = Upstream(
        {
            APISERVICES: (404, None),
            "/apis/resource.k8s.io/v1alpha3": (200, {"kind": "APIResourceList"}),
        }
    )
    taken = await taken_versions(upstream, OURS)
    assert len(taken) == 1
    assert "resource.k8s.io/v1alpha3" in taken[0]
    assert "APIService v1alpha3.resource.k8s.io would clash" in taken[0]
    assert await taken_versions(upstream, ["resource.x-k8s.io/v1alpha3"]) == []


async def test_a_refused_apiservice_list_refuses_to_start_and_says_what_is_missing() -> None:
    upstream = Upstream({APISERVICES: (403, {"kind": "Status", "code": 403})})
    with pytest.raises(UpstreamCheckError, match=r"HTTP 403.*list on apiservices"):
        await check_served_versions(upstream, "resource.k8s.io", OURS)


async def test_no_kubeconfig_and_no_cluster_is_refused_with_the_flag(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(ValueError, match="pass --kubeconfig"):
        upstream_client(None)
