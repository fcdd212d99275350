"""The DeviceTaintRule kind over a real SQLite store, through the registry a StandaloneCluster
builds: stored cluster-scoped at resource.k8s.io/v1, the taint's timeAdded set by the server
(kept while the taint is unchanged), and bad input refused naming the field, storing nothing."""

from __future__ import annotations

from typing import Any

import pytest

from apiserver.api.resource import DeviceTaintRuleStatus, validate_device_taint_rule_status
from apiserver.kinds.devicetaintrule import DeviceTaintRuleStrategy
from apiserver.machinery import ListOptions, Registry, WriteOptions
from apiserver.machinery.errors import StatusError
from apiserver.server.cluster import StandaloneCluster
from apiserver.storage.sqlite import SQLiteStore

OPTS = WriteOptions(field_manager="test")


def rule(
    name: str, taint: dict[str, Any], selector: dict[str, Any] | None = None
) -> dict[str, Any]:
    spec: dict[str, Any] = {"taint": taint}
    if selector is not None:
        spec["deviceSelector"] = selector
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceTaintRule",
        "metadata": {"name": name},
        "spec": spec,
    }


TAINT = {"key": "example.com/broken", "value": "yes", "effect": "NoExecute"}


@pytest.fixture
def rules(store: SQLiteStore) -> Registry:
    cluster = StandaloneCluster(store, "resource.k8s.io", authenticator=None, authorizer=None)
    return cluster.registry(DeviceTaintRuleStrategy.upstream().resource)


def test_the_kind_is_upstreams() -> None:
    resource = DeviceTaintRuleStrategy.upstream().resource
    assert (resource.group, resource.version, resource.plural, resource.namespaced) == (
        "resource.k8s.io",
        "v1",
        "devicetaintrules",
        False,
    )


async def test_stored_with_time_added_kept_while_the_taint_is_unchanged(rules: Registry) -> None:
    made = await rules.create(None, rule("r", dict(TAINT), {"driver": "gpu.example.com"}), OPTS)
    stored = made.obj.obj
    added = stored["spec"]["taint"]["timeAdded"]
    assert added
    again = rule("r", dict(TAINT), {"driver": "gpu.example.com", "pool": "p"})
    again["metadata"]["resourceVersion"] = stored["metadata"]["resourceVersion"]
    updated = (await rules.update(None, "r", again, OPTS)).obj.obj
    assert updated["spec"]["taint"]["timeAdded"] == added
    assert updated["spec"]["deviceSelector"]["pool"] == "p"


@pytest.mark.parametrize(
    ("obj", "field"),
    [
        (rule("r", {"effect": "NoSchedule"}), "spec.taint.key"),
        (rule("r", {"key": "a b", "effect": "NoSchedule"}), "spec.taint.key"),
        (rule("r", {"key": "k", "effect": "Sometimes"}), "spec.taint.effect"),
        (rule("r", {"key": "k", "value": "-x-", "effect": "None"}), "spec.taint.value"),
        (rule("r", dict(TAINT), {"driver": "Not_A_Driver"}), "spec.deviceSelector.driver"),
        (rule("r", dict(TAINT), {"pool": "a//b"}), "spec.deviceSelector.pool"),
        (rule("r", dict(TAINT), {"device": "Gpu.0"}), "spec.deviceSelector.device"),
    ],
    ids=["no-key", "bad-key", "bad-effect", "bad-value", "driver", "pool", "device"],
)
async def test_bad_rules_are_refused_naming_the_field(
    rules: Registry, obj: dict[str, Any], field: str
) -> None:
    with pytest.raises(StatusError) as raised:
        await rules.create(None, obj, OPTS)
    err = raised.value
    assert err.code == 422
    assert field in [c.get("field") for c in err.details["causes"]]
    assert (await rules.list(None, ListOptions())).items == []


def test_status_holds_at_most_eight_conditions() -> None:
    def status(count: int) -> DeviceTaintRuleStatus:
        return DeviceTaintRuleStatus.model_validate(
            {
                "conditions": [
                    {
                        "type": f"Type{i}",
                        "status": "True",
                        "reason": "Reason",
                        "message": "",
                        "lastTransitionTime": "2026-01-01T00:00:00Z",
                    }
                    for i in range(count)
                ]
            }
        )

    assert validate_device_taint_rule_status(status(8)) == []
    errs = validate_device_taint_rule_status(status(9))
    assert [(e.field, e.type.reason) for e in errs] == [("status.conditions", "FieldValueTooMany")]
