"""One search budget per review: how it is shared out over nodes, what each node's search
may spend, the nodes answered "not searched" once it is spent, and a review that stops
when its task is cancelled."""

from __future__ import annotations

import asyncio

import pytest

from apiserver.allocator import NODE_SHARE, Allocator, Budget, ReviewBudget
from apiserver.pools import Node, Pools
from tests.unit.builders import pools_of, slice_obj, wanting

DRIVER = "dra.example.com"
CLASSES = {"dev": {"spec": {}}}
IMPOSSIBLE = f"devices.map(d, d.attributes['{DRIVER}'].id).sum() == -1"
"""No set of devices satisfies it, and only a complete set can tell: a search that
tries every combination."""


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def shared_pool(count: int) -> Pools:
    """One pool that every node reaches, of ``count`` distinct devices."""
    devices = [{"name": f"d{i}", "attributes": {"id": {"int": i}}} for i in range(count)]
    return pools_of(slice_obj("fabric", devices, driver=DRIVER, allNodes=True))


def nodes(count: int) -> list[Node]:
    return [Node(f"node-{i:02}") for i in range(count)]


def test_a_share_is_what_is_left_over_the_nodes_left_but_at_least_a_tenth() -> None:
    clock = FakeClock()
    budget = ReviewBudget(Budget(steps=1000, evaluations=500, seconds=10.0), clock)
    one = budget.share(1)
    assert (one.steps, one.evaluations, one.seconds) == (1000, 500, 10.0)  # a lone node: all
    few = budget.share(4)
    assert (few.steps, few.evaluations, few.seconds) == (250, 125, 2.5)  # fair share
    many = budget.share(40)
    assert (many.steps, many.evaluations, many.seconds) == (
        1000 // NODE_SHARE,
        500 // NODE_SHARE,
        10.0 / NODE_SHARE,
    )  # a tenth, more than a fortieth
    budget.spend(950, 10)
    clock.now += 9.5
    last = budget.share(40)
    assert (last.steps, last.evaluations, last.seconds) == (50, 50, pytest.approx(0.5))
    assert not budget.exhausted
    assert budget.nodes == 1


@pytest.mark.parametrize(
    ("steps", "evaluations", "seconds"),
    [(1000, 0, 0.0), (0, 500, 0.0), (0, 0, 10.0)],
    ids=["steps", "evaluations", "time"],
)
def test_any_limit_spent_exhausts_the_review(steps: int, evaluations: int, seconds: float) -> None:
    clock = FakeClock()
    budget = ReviewBudget(Budget(steps=1000, evaluations=500, seconds=10.0), clock)
    assert not budget.exhausted
    budget.spend(steps, evaluations)
    clock.now += seconds
    assert budget.exhausted


async def test_hard_nodes_share_one_budget_and_the_rest_are_not_searched() -> None:
    """Forty nodes reaching one pool, a claim no set satisfies: each node's search gives
    up on its tenth of the steps, so ten nodes are searched and thirty are not; the
    review never spends more than its budget."""
    budget = Budget(steps=2000, evaluations=10**9, seconds=3600.0, chunk=10)
    allocator = Allocator(shared_pool(24), CLASSES, budget=budget, caches=False)
    review = ReviewBudget(budget)
    results = await allocator.review([wanting(4, IMPOSSIBLE)], nodes(40), review)
    assert [r.node for r in results] == [n.name for n in nodes(40)]
    assert not any(r.feasible for r in results)
    gave_up = [r for r in results if r.reasons[0].startswith("budget exhausted")]
    skipped = [r for r in results if r.reasons[0].startswith("not searched")]
    assert len(gave_up) == NODE_SHARE
    assert len(skipped) == 40 - NODE_SHARE
    assert gave_up == results[:NODE_SHARE]  # in the order given
    assert all(r.steps == 2000 // NODE_SHARE for r in gave_up)
    assert sum(r.steps for r in results) == review.steps == 2000
    assert all(r.steps == 0 for r in skipped)
    assert f"spent on {NODE_SHARE} earlier node(s)" in skipped[0].reasons[0]


async def test_easy_nodes_leave_their_share_to_later_ones() -> None:
    """Nodes that answer at once spend (almost) nothing: a hard node after them still gets
    the whole budget that is left, divided over the nodes that remain."""
    budget = Budget(steps=2000, evaluations=10**9, seconds=3600.0, chunk=10)
    allocator = Allocator(shared_pool(24), CLASSES, budget=budget, caches=False)
    review = ReviewBudget(budget)
    easy = await allocator.review([wanting(1)], nodes(39), review)
    assert all(r.feasible for r in easy)
    left = 2000 - review.steps
    assert left == 2000 - 39  # one step each
    [hard] = await allocator.review([wanting(4, IMPOSSIBLE)], [Node("last")], review)
    assert hard.reasons[0].startswith("budget exhausted")
    # Everything that was left; the search looks at its budget once per chunk of steps.
    assert left <= hard.steps < left + budget.chunk
    assert review.exhausted


async def test_a_review_without_a_budget_shares_the_allocators_own() -> None:
    budget = Budget(steps=300, evaluations=10**9, seconds=3600.0, chunk=10)
    allocator = Allocator(shared_pool(24), CLASSES, budget=budget, caches=False)
    results = await allocator.review([wanting(4, IMPOSSIBLE)], nodes(20))
    assert sum(r.steps for r in results) == 300
    assert results[-1].reasons[0].startswith("not searched")


async def test_a_cancelled_review_stops_searching() -> None:
    """The search pauses between chunks; cancelling the task that awaits the review ends
    it there: no further node is searched and no further step is taken."""
    budget = Budget(steps=10**9, evaluations=10**9, seconds=3600.0, chunk=16)
    allocator = Allocator(shared_pool(40), CLASSES, budget=budget, caches=False)
    review = ReviewBudget(budget)
    task = asyncio.create_task(allocator.review([wanting(6, IMPOSSIBLE)], nodes(40), review))
    for _ in range(50):
        await asyncio.sleep(0)
    assert not task.done()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    spent = review.nodes
    assert spent < 40
    for _ in range(50):
        await asyncio.sleep(0)
    assert review.nodes == spent
