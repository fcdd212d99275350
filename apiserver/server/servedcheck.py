"""The start-up check of aggregated mode: is a group-version we would serve already served
by the kube-apiserver itself?

Kubernetes 1.36+ serves ``resource.k8s.io/v1alpha3`` when an administrator enables that
alpha version, and registers a local APIService (no ``spec.service``) for it. The aggregator
never merges a local and a remote implementation of one group-version, so serving ours
there would hide one of the two. A version is taken when its APIService is local, or when
no APIService names it but the kube-apiserver's discovery lists it (a server without the
aggregation layer). An APIService that points at a Service is the registration that routes
to us, and is no clash — unless the kube-apiserver manages it (the automanaged label): then
it is a built-in one that was pointed at a Service, and the kube-apiserver puts it back.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..api.resource.group import OTHER_GROUP
from ..kubeclient import KubeClient, json_body

APISERVICES = "/apis/apiregistration.k8s.io/v1/apiservices"
AUTOMANAGED = "kube-aggregator.kubernetes.io/automanaged"


class UpstreamCheckError(ValueError):
    """The kube-apiserver could not be asked, or a group-version we serve is taken."""


async def taken_versions(client: KubeClient, group_versions: Iterable[str]) -> list[str]:
    """One sentence per group-version in ``group_versions`` that the kube-apiserver serves
    itself, naming the APIService; empty when every one is free."""
    answer = await client.exchange("GET", APISERVICES)
    status, body = answer.status_code, json_body(answer)
    if status == 404:  # no aggregation layer: discovery alone says what is served
        apiservices: dict[str, Any] = {}
    elif status == 200 and isinstance(body, dict):
        apiservices = {
            str((item.get("metadata") or {}).get("name")): item for item in body.get("items") or ()
        }
    else:
        raise UpstreamCheckError(
            f"cannot list APIServices on the kube-apiserver (HTTP {status}); the server needs"
            " list on apiservices.apiregistration.k8s.io to check what the cluster serves"
        )
    taken: list[str] = []
    for group_version in sorted(set(group_versions)):
        group, version = group_version.split("/", 1)
        name = f"{version}.{group}"
        apiservice = apiservices.get(name)
        if apiservice is not None:
            spec = apiservice.get("spec") or {}
            labels = (apiservice.get("metadata") or {}).get("labels") or {}
            if not spec.get("service"):
                how = f", {AUTOMANAGED}={labels[AUTOMANAGED]}" if AUTOMANAGED in labels else ""
                taken.append(
                    f"{group_version} is served by the kube-apiserver itself"
                    f" (APIService {name} is local{how})"
                )
            elif AUTOMANAGED in labels:
                # A built-in's APIService pointed at a Service: the kube-apiserver resets
                # it to local at its next start.
                taken.append(
                    f"{group_version} is served by the kube-apiserver itself (APIService"
                    f" {name} is {AUTOMANAGED}={labels[AUTOMANAGED]}; its next start makes it"
                    " local again)"
                )
            continue
        discovery = await client.exchange("GET", f"/apis/{group}/{version}")
        if discovery.status_code == 200:
            taken.append(
                f"{group_version} is served by the kube-apiserver itself (its discovery"
                f" lists it; an APIService {name} would clash)"
            )
    return taken


async def check_served_versions(
    client: KubeClient, group: str, group_versions: Iterable[str]
) -> None:
    """Refuse (``UpstreamCheckError``) when a group-version we would serve is taken."""
    taken = await taken_versions(client, group_versions)
    if taken:
        other = OTHER_GROUP if group != OTHER_GROUP else f"dra.{OTHER_GROUP}"
        raise UpstreamCheckError(
            "refusing to start in aggregated mode: "
            + "; ".join(taken)
            + f". Serve our kinds under another group, e.g. --group {other}, and apply the"
            " APIServices of that group."
        )
