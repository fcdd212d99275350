"""Content negotiation: the first Accept clause we can satisfy wins, otherwise 406."""

from __future__ import annotations

import pytest

from apiserver.machinery.errors import StatusError
from apiserver.machinery.negotiation import MediaRange, Shape, negotiate, parse_accept

TABLE = "application/json;as=Table;g=meta.k8s.io;v=v1"
TABLE_BETA = "application/json;as=Table;g=meta.k8s.io;v=v1beta1"
POM = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
POM_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
PROTOBUF = "application/vnd.kubernetes.protobuf"


def test_parse_accept_keeps_order_and_parameters() -> None:
    ranges = parse_accept(f'{TABLE}, application/json; q=0.9, ,text/plain;as="x"')
    assert ranges == [
        MediaRange("application/json", {"as": "Table", "g": "meta.k8s.io", "v": "v1"}),
        MediaRange("application/json", {"q": "0.9"}),
        MediaRange("text/plain", {"as": "x"}),
    ]


def test_parse_accept_lowercases_types_and_parameter_names() -> None:
    assert parse_accept("Application/JSON;AS=Table") == [
        MediaRange("application/json", {"as": "Table"})
    ]


@pytest.mark.parametrize(
    ("accept", "shape"),
    [
        (None, Shape.OBJECT),
        ("", Shape.OBJECT),
        ("application/json", Shape.OBJECT),
        ("application/*", Shape.OBJECT),
        ("*/*", Shape.OBJECT),
        ("application/json;q=0.9", Shape.OBJECT),
        ("text/html,application/xhtml+xml,*/*;q=0.8", Shape.OBJECT),
        (f"{PROTOBUF}, application/json", Shape.OBJECT),
        (TABLE, Shape.TABLE),
        (TABLE_BETA, Shape.TABLE),
        # kubectl get: the Table first, plain JSON as a fallback.
        (f"{TABLE},{TABLE_BETA},application/json", Shape.TABLE),
        # A Table we cannot give falls through to the next clause.
        ("application/json;as=Table;g=meta.k8s.io;v=v2, application/json", Shape.OBJECT),
        ("application/json;as=Table;v=v1, application/json", Shape.OBJECT),
        ("application/json;as=Unknown;g=meta.k8s.io;v=v1, application/json", Shape.OBJECT),
        (POM, Shape.METADATA),
        (f"{POM_LIST}, {POM}", Shape.METADATA),
    ],
)
def test_negotiate_single_object(accept: str | None, shape: Shape) -> None:
    assert negotiate(accept, collection=False) is shape


@pytest.mark.parametrize(
    ("accept", "shape"),
    [
        ("application/json", Shape.OBJECT),
        (TABLE, Shape.TABLE),
        (POM_LIST, Shape.METADATA),
        (f"{POM}, {POM_LIST}", Shape.METADATA),
        (f"{POM}, application/json", Shape.OBJECT),
    ],
)
def test_negotiate_list(accept: str, shape: Shape) -> None:
    assert negotiate(accept, collection=True) is shape


@pytest.mark.parametrize(
    ("accept", "shape"),
    [
        ("application/json", Shape.OBJECT),
        (TABLE, Shape.TABLE),
        # Watch events carry single objects, so a watch asks for PartialObjectMetadata.
        (POM, Shape.METADATA),
        (f"{POM_LIST}, {POM}", Shape.METADATA),
    ],
)
def test_negotiate_watch(accept: str, shape: Shape) -> None:
    assert negotiate(accept, collection=True, watch=True) is shape


@pytest.mark.parametrize(
    ("accept", "collection", "watch"),
    [
        (PROTOBUF, False, False),
        ("application/yaml", False, False),
        ("text/html", True, False),
        ("application/json;as=Table;g=meta.k8s.io;v=v2", False, False),
        ("application/json;as=Table;g=example.com;v=v1", True, False),
        (POM_LIST, False, False),  # a list shape for a single object
        (POM, True, False),  # a single-object shape for a list
        (POM_LIST, True, True),  # a list shape for a watch
    ],
)
def test_nothing_acceptable_is_a_406(accept: str, collection: bool, watch: bool) -> None:
    with pytest.raises(StatusError) as info:
        negotiate(accept, collection=collection, watch=watch)
    assert info.value.code == 406
    assert info.value.reason == "NotAcceptable"
    assert "application/json;as=Table;g=meta.k8s.io;v=v1" in info.value.message
