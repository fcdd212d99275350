"""Core v1 Events in standalone mode: kubectl get events, field selectors, kubectl describe."""

from __future__ import annotations

import orjson
import yaml

from .harness import ServerProcess
from .objects import rsp, unique


def _event(name: str, namespace: str, about: dict[str, str], reason: str, message: str) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": about,
            "reason": reason,
            "message": message,
            "type": "Warning",
            "source": {"component": "dra-apiserver"},
            "firstTimestamp": "2026-01-01T00:00:00Z",
            "lastTimestamp": "2026-01-01T00:00:00Z",
            "count": 1,
        }
    )


def _patch_with_event(server: ServerProcess) -> tuple[str, str]:
    name = unique("evt")
    server.kubectl("create", "-f", "-", input=orjson.dumps(rsp(name)).decode())
    uid = server.kubectl("get", "rsp", name, "-o", "jsonpath={.metadata.uid}").stdout
    about = {
        "apiVersion": "resource.k8s.io/v1alpha3",
        "kind": "ResourceSlicePatch",
        "name": name,
        "uid": uid,
    }
    reason = "FaultySelector"
    message = f"selector #0 of {name} failed: no such key: model"
    server.kubectl(
        "create", "-f", "-", input=_event(f"{name}.1", "default", about, reason, message)
    )
    return name, message


def test_kubectl_get_events_prints_kubectl_columns(server: ServerProcess) -> None:
    """`kubectl get events` shows LAST SEEN, TYPE, REASON, OBJECT and MESSAGE for the event."""
    name, message = _patch_with_event(server)
    out = server.kubectl("get", "events", "-n", "default").stdout
    header = out.splitlines()[0].split()
    assert header[:6] == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    row = next(line for line in out.splitlines() if f"resourceslicepatch/{name}" in line)
    assert "Warning" in row
    assert "FaultySelector" in row
    assert message in row


def test_describe_shows_the_events_of_an_object(server: ServerProcess) -> None:
    """`kubectl describe rsp NAME` lists the events whose involvedObject is that patch."""
    name, message = _patch_with_event(server)
    other, _ = _patch_with_event(server)
    out = server.kubectl("describe", "rsp", name).stdout
    events = out.split("Events:", 1)[1]
    assert message in events
    assert other not in events


def test_field_selector_on_involved_object(server: ServerProcess) -> None:
    """Events can be selected by involvedObject fields, as kubectl describe does."""
    name, _ = _patch_with_event(server)
    _patch_with_event(server)
    with server.client() as client:
        body = client.get(
            "/api/v1/events",
            params={
                "fieldSelector": f"involvedObject.name={name},involvedObject.kind=ResourceSlicePatch"
            },
        ).json()
    assert [e["involvedObject"]["name"] for e in body["items"]] == [name]


def test_event_namespace_must_match_its_object(server: ServerProcess) -> None:
    """An event about an object in namespace a cannot be stored in namespace b (422)."""
    about = {"kind": "ResourceClaim", "name": "c", "namespace": "a"}
    result = server.kubectl(
        "create",
        "-f",
        "-",
        input=_event(unique("bad"), "b", about, "Mismatch", "namespaces differ"),
        check=False,
    )
    assert result.returncode != 0
    assert "involvedObject.namespace" in result.stderr
