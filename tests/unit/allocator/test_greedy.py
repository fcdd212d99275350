"""The greedy path's answers kept per node and claims shape (``allocator.greedy``): over
random sequences of allocations changing one pool at a time, devices reserved by the review,
and claims of a few shapes under fresh names, a review that replays kept answers says exactly
what an allocator without caches says (feasibility, score, allocations, reasons, and the
server's entry for each node), one asked for an answer only (results shared between
reviews) the same entries, and one asked without the claims' outcomes the same
feasibility, scores and reasons; after one pool changes, only the nodes reaching it are
answered anew."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from typing import Any

import orjson
import pytest

from apiserver.allocator import Allocator, NodeResult, SharedCaches, parse_claim
from apiserver.allocator.claims import Claim
from apiserver.allocator.explain import Explainer
from apiserver.allocator.greedy import Greedy
from apiserver.api.resource import DeviceID
from apiserver.pools import Node, Pools, PoolState
from apiserver.server.allocation import _Answer, _node_answer
from tests.unit.allocator.check import answer
from tests.unit.builders import pools_of, slice_obj

DRIVER = "dra.example.com"
NODES = [Node(f"n{i}", {"zone": "a" if i % 2 else "b"}) for i in range(6)]
CLASSES: dict[str, Any] = {
    "dev": {"metadata": {"name": "dev", "uid": "u", "resourceVersion": "1"}, "spec": {}},
}


def _pools() -> Pools:
    slices = [
        slice_obj(
            node.name,
            [{"name": f"d{i}", "attributes": {"mem": {"int": 8 * (i % 3 + 1)}}} for i in range(4)],
            driver=DRIVER,
            nodeName=node.name,
        )
        for node in NODES
    ]
    fabric = [{"name": f"f{i}", "attributes": {"mem": {"int": 64}}} for i in range(2)]
    slices.append(slice_obj("fabric", fabric, driver=DRIVER, allNodes=True))
    return pools_of(*slices)


def _request(name: str, count: int, selector: str | None = None) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": "dev", "count": count}
    if selector:
        exactly["selectors"] = [{"cel": {"expression": selector}}]
    return {"name": name, "exactly": exactly}


BIG = 'device.attributes["dra.example.com"].mem >= 16'
SHAPES: list[list[dict[str, Any]]] = [
    [_request("gpu", 1)],
    [_request("gpu", 2)],
    [_request("a", 1, BIG), _request("b", 2)],
    [_request("many", 5)],  # more than a node has alone: the fabric pool decides
]


def _claims(rng: random.Random, step: int) -> list[Claim]:
    """One or two claims of the shapes above, named anew each step (as each pod's are);
    some with the same shape under other request names, some with a configuration of their
    own (the allocation results kept with an answer must not carry another claim's)."""
    picked = [rng.randrange(len(SHAPES)) for _ in range(rng.choice([1, 1, 2]))]
    out = []
    for i, shape in enumerate(picked):
        requests = SHAPES[shape]
        if rng.random() < 0.3:
            requests = [{**r, "name": f"{r['name']}-{rng.randrange(2)}"} for r in requests]
        devices: dict[str, Any] = {"requests": requests}
        if rng.random() < 0.3:
            parameters = {"mode": rng.choice(["a", "b"])}
            devices["config"] = [{"opaque": {"driver": DRIVER, "parameters": parameters}}]
        out.append(parse_claim(f"ns/pod-{step}-{i}", {"devices": devices}))
    return out


def _reallocate(rng: random.Random, pools: Pools) -> Pools:
    """``pools`` with one pool's allocated and reserved devices drawn again."""
    state = rng.choice(list(pools.states.values()))
    names = sorted(state.gathered.devices)
    allocated = frozenset(n for n in names if rng.random() < 0.4)
    reserved = frozenset(n for n in names if n not in allocated and rng.random() < 0.2)
    return pools.updated({state.key: PoolState(state.gathered, allocated, reserved)})


def _scores(result: NodeResult) -> tuple[Any, ...]:
    return (result.node, result.feasible, result.score, result.reasons)


@pytest.mark.parametrize("seed", range(8))
def test_replayed_answers_equal_an_allocator_without_caches(seed: int) -> None:
    rng = random.Random(seed)
    pools = _pools()
    shared: SharedCaches | None = None
    replayed = 0
    for step in range(30):
        if rng.random() < 0.6:
            pools = _reallocate(rng, pools)
        reserved: set[DeviceID] = set()
        if rng.random() < 0.2:  # devices this review must leave alone (a reserving review's)
            state = rng.choice(list(pools.states.values()))
            reserved = {DeviceID(*state.key, rng.choice(sorted(state.gathered.devices)))}
        shared = SharedCaches.for_inputs(shared, pools, CLASSES)
        kept = Allocator(pools, CLASSES, reserved=reserved)
        shared.attach(kept)
        claims = _claims(rng, step)
        results = asyncio.run(kept.review(claims, NODES))
        scratch = Allocator(Pools(pools.states.values()), CLASSES, reserved=reserved, caches=False)
        expected = asyncio.run(scratch.review(claims, NODES))
        assert [answer(r) for r in results] == [answer(r) for r in expected]
        # And as the server answers them (its entries kept, encoded, with the answers they
        # replay), read back.
        served = orjson.loads(orjson.dumps(_Answer(set(), []).of(results)))
        assert served == [_node_answer(r) for r in expected]
        replayed += kept.greedy.replayed
        # Asked for an answer only (``shared``, as the server's plain reviews ask): results
        # shared with earlier reviews' give the same entries.
        answering = Allocator(pools, CLASSES, reserved=reserved)
        shared.attach(answering)
        only = asyncio.run(answering.review(claims, NODES, shared=True))
        served = orjson.loads(orjson.dumps(_Answer(set(), []).of(only)))
        assert served == [_node_answer(r) for r in expected]
        # Asked without outcomes (a scores-only caller): the same feasibility, scores and
        # reasons.
        bare = Allocator(pools, CLASSES, reserved=reserved)
        shared.attach(bare)
        scores = asyncio.run(bare.review(claims, NODES, outcomes=False))
        assert [_scores(r) for r in scores] == [_scores(r) for r in expected]
    assert replayed > 0  # answers did outlive the review that made them


def test_a_changed_pool_recomputes_only_its_nodes() -> None:
    pools = _pools()
    shared = SharedCaches.for_inputs(None, pools, CLASSES)
    claim = [parse_claim("ns/first", {"devices": {"requests": SHAPES[0]}})]
    first = Allocator(pools, CLASSES)
    shared.attach(first)
    before = {r.node: r for r in asyncio.run(first.review(claim, NODES))}
    (shape,) = shared.answered  # one shape of claims so far
    made = dict(shared.answered[shape])
    assert len(made) == len(NODES)

    state = pools.states[(DRIVER, "n0")]
    pools = pools.updated({state.key: PoolState(state.gathered, frozenset({"d0"}))})
    shared = SharedCaches.for_inputs(shared, pools, CLASSES)
    second = Allocator(pools, CLASSES)
    shared.attach(second)
    other = [parse_claim("ns/second", {"devices": {"requests": SHAPES[0]}})]
    results = {r.node: r for r in asyncio.run(second.review(other, NODES))}

    changed = [key for key, entry in made.items() if shared.answered[shape][key] is not entry]
    assert changed == [NODES[0].key]
    assert second.greedy.replayed == len(NODES) - 1
    # The replayed answers are the second claim's, with the devices chosen before.
    assert results["n1"].claims[0].name == "ns/second"
    assert results["n1"].devices == before["n1"].devices
    assert results["n1"].claims[0].allocation == before["n1"].claims[0].allocation


def _reviewer(*, shared: bool = False) -> Callable[[str, str], list[NodeResult]]:
    """Reviews of one one-device claim over the same pools, each by an allocator of its
    own over caches they all share: ``review(claim name, request name)``."""
    pools = _pools()
    caches = SharedCaches.for_inputs(None, pools, CLASSES)

    def review(name: str, request: str) -> list[NodeResult]:
        allocator = Allocator(pools, CLASSES)
        caches.attach(allocator)
        claim = parse_claim(name, {"devices": {"requests": [_request(request, 1)]}})
        return asyncio.run(allocator.review([claim], NODES, shared=shared))

    return review


def test_a_kept_answer_makes_each_claim_s_allocation_result_once() -> None:
    """Claims of one shape with the same request names and configuration share the result
    made for a node's kept answer; another request name gets a result naming it."""
    review = _reviewer()
    first = review("ns/a", "gpu")
    second = review("ns/b", "gpu")
    renamed = review("ns/c", "other")
    for one, two, three in zip(first, second, renamed, strict=True):
        assert one.claims[0].allocation is two.claims[0].allocation
        results = three.claims[0].allocation["devices"]["results"]
        assert [r["request"] for r in results] == ["other"]
        assert results[0]["device"] == one.claims[0].allocation["devices"]["results"][0]["device"]


def test_results_for_an_answer_only_are_shared_by_claims_with_the_same_request_names() -> None:
    """Reviews asking for an answer only (``shared``) get one result per node's kept answer
    and request names, whatever the claims are called; another request name gets its own,
    with the same devices."""
    review = _reviewer(shared=True)
    made = review("ns/a", "gpu")  # answered anew: kept for the reviews below
    first = review("ns/b", "gpu")
    second = review("ns/c", "gpu")
    renamed = review("ns/d", "other")
    for fresh, one, two, three in zip(made, first, second, renamed, strict=True):
        assert one is two
        assert one is not fresh
        assert three is not one
        assert one.devices == two.devices == three.devices == fresh.devices
        assert [r["request"] for r in three.claims[0].allocation["devices"]["results"]] == ["other"]


def test_why_a_node_is_short_is_made_once_and_told_of_each_claim(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A node with too few free devices for claims of one shape is explained once while its
    answer stands; a later claim of that shape, its request named otherwise, is told the
    same reason about itself, as an allocator without caches tells it."""
    pools = _pools()
    state = pools.states[(DRIVER, "n0")]
    pools = pools.updated({state.key: PoolState(state.gathered, frozenset({"d0", "d1"}))})
    caches = SharedCaches.for_inputs(None, pools, CLASSES)

    def n0(name: str, request: str, *, cached: bool = True) -> NodeResult:
        allocator = Allocator(pools, CLASSES, caches=cached)
        if cached:
            caches.attach(allocator)
        claim = parse_claim(name, {"devices": {"requests": [_request(request, 5)]}})
        [result] = [r for r in asyncio.run(allocator.review([claim], NODES)) if r.node == "n0"]
        return result

    first = n0("ns/a", "many")
    assert not first.feasible
    assert first.reasons
    monkeypatch.setattr(Explainer, "short", _never)
    second = n0("ns/b", "other")
    monkeypatch.undo()
    expected = n0("ns/b", "other", cached=False)
    assert second.explanations == expected.explanations
    assert second.reasons[0].startswith("claim ns/b request other: ")


def test_a_kept_short_answer_is_replayed_in_the_loop_over_nodes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Once every node's answer is kept, a review of another claim of that shape answers
    them all from the replay loop, the node that is short too (told of the new claim), and
    none node by node."""
    pools = _pools()
    state = pools.states[(DRIVER, "n0")]
    pools = pools.updated({state.key: PoolState(state.gathered, frozenset({"d0", "d1"}))})
    caches = SharedCaches.for_inputs(None, pools, CLASSES)

    def review(name: str, *, cached: bool = True) -> list[NodeResult]:
        allocator = Allocator(pools, CLASSES, caches=cached)
        if cached:
            caches.attach(allocator)
        claim = parse_claim(name, {"devices": {"requests": [_request("gpu", 5)]}})
        return asyncio.run(allocator.review([claim], NODES, outcomes=False))

    first = review("ns/a")
    assert [r.feasible for r in first] == [False, True, True, True, True, True]
    monkeypatch.setattr(Greedy, "answer", _by_node)
    second = review("ns/b")
    monkeypatch.undo()
    expected = review("ns/b", cached=False)
    assert [(r.node, r.feasible, r.score) for r in second] == [
        (r.node, r.feasible, r.score) for r in expected
    ]
    assert second[0].explanations == expected[0].explanations
    assert second[0].reasons[0].startswith("claim ns/b request gpu: ")


def _never(*_: Any) -> Any:
    raise AssertionError("explained again")


def _by_node(*_: Any) -> Any:
    raise AssertionError("answered node by node")
