"""Mutation fuzzing against the real server process: valid objects from ``examples/`` with
fields dropped, duplicated or retyped, huge strings, deep nesting, unicode and nulls, sent
through create, update, every patch type, apply and the status subresource.

Whatever the server makes of a request, it never answers 5xx; every error is a ``Status``
whose ``code`` is the HTTP status; and a rejected request stores nothing (the collection for
a create, the object for any other write, are the same before and after). Hypothesis runs
derandomized with a fixed number of examples per operation, so a run is bounded and
repeatable (about a minute in all)."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .harness import REPO, ServerProcess, start_server

EXAMPLES_PER_OPERATION = 250
NAMESPACE = "default"
DEEP = "\x00deep\x00"
"""Stands in for a deeply nested value, spliced into the JSON text (too deep for ``json``)."""


@dataclass(frozen=True)
class Kind:
    kind: str
    collection: str
    """The collection's path (in ``default`` for a namespaced kind)."""
    has_status: bool
    example: dict[str, Any]


ROUTES = {
    "DeviceClass": ("/apis/resource.k8s.io/v1/deviceclasses", False),
    "Node": ("/api/v1/nodes", True),
    "ResourceSlice": ("/apis/resource.k8s.io/v1/resourceslices", False),
    "ResourceClaim": (f"/apis/resource.k8s.io/v1/namespaces/{NAMESPACE}/resourceclaims", True),
    "ResourceClaimTemplate": (
        f"/apis/resource.k8s.io/v1/namespaces/{NAMESPACE}/resourceclaimtemplates",
        False,
    ),
    "ResourceSlicePatch": ("/apis/resource.k8s.io/v1alpha3/resourceslicepatches", True),
}


def example_kinds() -> list[Kind]:
    """The first example of every kind in ``examples/``."""
    found: dict[str, dict[str, Any]] = {}
    for path in sorted((REPO / "examples").glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if isinstance(doc, dict) and doc.get("kind") in ROUTES:
                found.setdefault(doc["kind"], doc)
    assert sorted(found) == sorted(ROUTES)
    return [Kind(k, ROUTES[k][0], ROUTES[k][1], found[k]) for k in sorted(found)]


KINDS = example_kinds()

# -- mutations -------------------------------------------------------------------------

JSON_LEAVES = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
# Keys are printable ASCII: the name of an unknown field comes back in a Warning header,
# which does not escape other characters yet (a 500, or a dropped connection, for now).
KEYS = st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=8)
JSON_VALUES = st.recursive(
    JSON_LEAVES,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3),
    max_leaves=8,
)
REPLACEMENTS = st.one_of(
    JSON_VALUES,  # retyped
    st.none(),
    st.just("x" * 300_000),  # huge string
    st.text(alphabet=st.characters(min_codepoint=0x80), min_size=1, max_size=40),  # unicode
    st.just(DEEP),
)


def paths(node: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every path into a JSON value (the root included)."""
    yield prefix
    if isinstance(node, dict):
        for key, value in node.items():
            yield from paths(value, (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from paths(value, (*prefix, index))


def parent_of(obj: Any, path: tuple[Any, ...]) -> Any:
    for step in path[:-1]:
        obj = obj[step]
    return obj


@dataclass(frozen=True)
class Mutation:
    action: str
    path: tuple[Any, ...]
    value: Any = None

    def apply(self, obj: dict[str, Any]) -> dict[str, Any]:
        out = copy.deepcopy(obj)
        if not self.path:
            return out if self.action != "retype" else {"value": self.value}
        parent, last = parent_of(out, self.path), self.path[-1]
        if self.action == "drop":
            del parent[last]
        elif self.action == "duplicate":
            if isinstance(parent, list):
                parent.insert(last, copy.deepcopy(parent[last]))
            else:
                parent[f"{last}Copy"] = copy.deepcopy(parent[last])
                parent[last] = [parent[last], copy.deepcopy(parent[last])]
        else:
            parent[last] = self.value
        return out

    def json_patch(self) -> list[dict[str, Any]]:
        pointer = "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in self.path)
        if self.action == "drop":
            return [{"op": "remove", "path": pointer}]
        if self.action == "duplicate":
            return [{"op": "copy", "from": pointer, "path": pointer + "Copy"}]
        return [{"op": "replace", "path": pointer, "value": self.value}]


@st.composite
def mutations(draw: st.DrawFn, obj: dict[str, Any]) -> list[Mutation]:
    every = list(paths(obj))
    chosen = []
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(every))
        action = draw(st.sampled_from(["drop", "duplicate", "retype"]))
        value = draw(REPLACEMENTS) if action == "retype" else None
        chosen.append(Mutation(action, path, value))
    return chosen


def mutate(obj: dict[str, Any], changes: list[Mutation]) -> dict[str, Any]:
    for change in changes:
        try:
            obj = change.apply(obj)
        except (KeyError, IndexError, TypeError):
            continue  # an earlier change removed the path
    return obj


def encode(body: Any, depth: int) -> bytes:
    text = json.dumps(body, ensure_ascii=False)
    return text.replace(json.dumps(DEEP), "[" * depth + "]" * depth).encode()


# -- the server and its checks ---------------------------------------------------------


@pytest.fixture(scope="module")
def fuzz_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    proc = start_server(tmp_path_factory.mktemp("fuzz"))
    yield proc
    proc.stop()


@pytest.fixture(scope="module")
def client(fuzz_server: ServerProcess) -> Iterator[httpx.Client]:
    with fuzz_server.client(timeout=60.0) as c:
        yield c


def seeded(client: httpx.Client, kind: Kind) -> dict[str, Any]:
    """The kind's seed object (created from the example on first use), as stored now."""
    name = f"fuzz-seed-{kind.kind.lower()}"
    got = client.get(f"{kind.collection}/{name}")
    if got.status_code == 200:
        return dict(got.json())
    body = copy.deepcopy(kind.example)
    body["metadata"] = {"name": name}
    created = client.post(kind.collection, json=body)
    assert created.status_code == 201, created.text
    return dict(created.json())


def collection(client: httpx.Client, kind: Kind) -> list[tuple[str, str]]:
    items = client.get(kind.collection).json()["items"]
    return sorted((i["metadata"]["name"], i["metadata"]["resourceVersion"]) for i in items)


def check(response: httpx.Response) -> bool:
    """No 5xx; an error is a Status carrying the HTTP code. True if the write was refused."""
    assert response.status_code < 500, response.text[:2000]
    if response.status_code < 400:
        return False
    status = response.json()
    assert status["kind"] == "Status", status
    assert status["code"] == response.status_code, status
    return True


PATCH_TYPES = {
    "json-patch": "application/json-patch+json",
    "merge-patch": "application/merge-patch+json",
    "strategic-merge-patch": "application/strategic-merge-patch+json",
}
OPERATIONS = ["create", "update", *PATCH_TYPES, "apply", "status"]
FUZZ_SETTINGS = settings(
    max_examples=EXAMPLES_PER_OPERATION,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.mark.parametrize("operation", OPERATIONS)
@FUZZ_SETTINGS
@given(data=st.data(), depth=st.sampled_from([8, 200, 5000]))
def test_mutated_writes(
    client: httpx.Client, operation: str, data: st.DataObject, depth: int
) -> None:
    kinds = [k for k in KINDS if k.has_status] if operation == "status" else KINDS
    kind = data.draw(st.sampled_from(kinds), label="kind")
    if operation == "create":
        body = copy.deepcopy(kind.example)
        body["metadata"] = {"generateName": "fuzz-"}
        changes = data.draw(mutations(body), label="mutations")
        before = collection(client, kind)
        response = client.post(
            kind.collection,
            content=encode(mutate(body, changes), depth),
            headers={"Content-Type": "application/json"},
        )
        if check(response):
            assert collection(client, kind) == before
        return

    # Mutations are drawn over the example (what is drawn must not depend on the server's
    # state) and applied to the seed as stored now; a path the seed lacks is skipped.
    template = copy.deepcopy(kind.example)
    template["metadata"] = {"name": "", "resourceVersion": ""}
    changes = data.draw(mutations(template), label="mutations")
    seed = seeded(client, kind)
    name = seed["metadata"]["name"]
    url = f"{kind.collection}/{name}"
    mutated = mutate(seed, changes)
    if operation == "update":
        response = client.put(
            url, content=encode(mutated, depth), headers={"Content-Type": "application/json"}
        )
    elif operation == "status":
        response = client.put(
            f"{url}/status",
            content=encode(mutated, depth),
            headers={"Content-Type": "application/json"},
        )
    elif operation == "apply":
        response = client.patch(
            url,
            params={"fieldManager": "fuzz", "force": "true"},
            content=encode(mutated, depth),
            headers={"Content-Type": "application/apply-patch+yaml"},
        )
    else:
        patch: Any = (
            [op for change in changes for op in change.json_patch()]
            if operation == "json-patch"
            else mutated
        )
        response = client.patch(
            url, content=encode(patch, depth), headers={"Content-Type": PATCH_TYPES[operation]}
        )
    if check(response):
        assert client.get(url).json() == seed
