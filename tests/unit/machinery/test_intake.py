"""The one reading of a written body (``machinery.intake``), and that a stored kind's create,
a review and an action subresource all answer a bad body the same way through it."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from apiserver.kinds.pod import PodBinding, PodStrategy
from apiserver.machinery import ActionSubresource, Registry, WriteOptions
from apiserver.machinery.decoding import FieldValidation
from apiserver.machinery.errors import StatusError
from apiserver.machinery.intake import BodyType, check_names, check_type_meta, parse_written
from apiserver.storage.sqlite import SQLiteStore

WIDGET = BodyType("example.com/v1", "Widget")


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    size: int


class _Widget(BaseModel):
    model_config = ConfigDict(extra="forbid")
    apiVersion: str | None = None
    kind: str | None = None
    metadata: dict[str, Any] = {}
    spec: _Spec


def _error(call: Any, *args: Any, **kwargs: Any) -> StatusError:
    with pytest.raises(StatusError) as info:
        call(*args, **kwargs)
    return info.value


def test_body_type_splits_group_and_version() -> None:
    assert (WIDGET.group, WIDGET.version) == ("example.com", "v1")
    assert (BodyType("v1", "Binding").group, BodyType("v1", "Binding").version) == ("", "v1")


@pytest.mark.parametrize(
    ("body", "code", "named"),
    [
        ({"apiVersion": "example.com/v2"}, 400, "example.com/v2"),
        ({"kind": "Gadget"}, 400, "Gadget"),
        ({"metadata": "w"}, 422, "metadata"),
        ({"metadata": ["w"]}, 422, "metadata"),
    ],
)
def test_type_meta_names_what_is_wrong(body: dict[str, Any], code: int, named: str) -> None:
    err = _error(check_type_meta, body, WIDGET)
    assert err.code == code
    fields = [c["field"] for c in (err.details or {}).get("causes", [])]
    assert named in err.message or named in fields


def test_type_meta_is_set_when_absent_and_required_for_apply() -> None:
    body: dict[str, Any] = {"metadata": {"name": "w"}}
    check_type_meta(body, WIDGET)
    assert (body["apiVersion"], body["kind"]) == ("example.com/v1", "Widget")
    assert _error(check_type_meta, {"metadata": {}}, WIDGET, required=True).code == 400


@pytest.mark.parametrize(
    ("meta", "namespace", "name", "namespaced", "refused"),
    [
        ({"name": "a"}, None, "a", False, False),
        ({"name": "b"}, None, "a", False, True),
        ({}, None, "a", False, False),
        ({"name": "a", "namespace": "x"}, "y", "a", True, True),
        ({"name": "a", "namespace": "x"}, "y", "a", False, False),
        ({"name": "b"}, "y", None, True, False),
    ],
)
def test_names_must_be_the_urls(
    meta: dict[str, Any], namespace: str | None, name: str | None, namespaced: bool, refused: bool
) -> None:
    body = {"metadata": meta}
    if refused:
        assert _error(check_names, body, namespace, name, namespaced=namespaced).code == 400
    else:
        check_names(body, namespace, name, namespaced=namespaced)


@pytest.mark.parametrize(
    ("validation", "warnings"),
    [
        (FieldValidation.WARN, ['unknown field "spec.colour"', 'unknown field "extra"']),
        (FieldValidation.IGNORE, []),
    ],
)
def test_unknown_fields_are_dropped_and_warned_per_field_validation(
    validation: FieldValidation, warnings: list[str]
) -> None:
    body = {"metadata": {"name": "w"}, "spec": {"size": 1, "colour": "red"}, "extra": 1}
    model, warned = parse_written(body, _Widget, WIDGET, validation)
    assert model.spec.size == 1
    assert sorted(warned) == sorted(warnings)
    assert body == {"metadata": {"name": "w"}, "spec": {"size": 1}}


def test_strict_names_every_unknown_field_before_type_errors() -> None:
    body = {"metadata": {"name": "w"}, "spec": {"size": "x", "colour": "red"}, "extra": 1}
    err = _error(parse_written, body, _Widget, WIDGET, FieldValidation.STRICT)
    assert err.code == 400
    assert 'unknown field "spec.colour"' in err.message
    assert 'unknown field "extra"' in err.message


def test_type_errors_are_422_naming_each_field() -> None:
    body = {"metadata": {"name": "w"}, "spec": {"size": "x"}}
    err = _error(parse_written, body, _Widget, WIDGET, FieldValidation.WARN)
    assert (err.code, err.reason) == (422, "Invalid")
    assert [c["field"] for c in (err.details or {})["causes"]] == ["spec.size"]


# -- the same answer from every door -----------------------------------------------------


async def test_a_stored_kind_and_an_action_refuse_a_foreign_kind_alike(
    store: SQLiteStore,
) -> None:
    """A create and a ``pods/binding`` both answer a body of another kind with the
    400 of ``check_type_meta``, naming the kind sent."""
    pods = Registry(PodStrategy.core(), store)
    binding = ActionSubresource(pods, PodBinding())
    opts = WriteOptions()
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }
    await pods.create("default", pod, opts)
    foreign = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "p"}}
    for call in (
        pods.create("default", dict(foreign), opts),
        binding.create_named("default", "p", dict(foreign), opts),
    ):
        with pytest.raises(StatusError) as info:
            await call
        assert info.value.code == 400
        assert "the kind in the data (Service)" in info.value.message

    strict = WriteOptions(field_validation=FieldValidation.STRICT)
    body = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "p"},
        "target": {"kind": "Node", "name": "n"},
        "bogus": 1,
    }
    with pytest.raises(StatusError) as info:
        await binding.create_named("default", "p", body, strict)
    assert info.value.code == 400
    assert 'Binding in version "v1" cannot be handled as a Binding' in info.value.message
    assert 'unknown field "bogus"' in info.value.message
    assert "nodeName" not in (await pods.get("default", "p")).obj["spec"]
