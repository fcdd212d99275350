"""HeldReservations, the one owner of held devices: what the reservation source says plus
this replica's own new reservations, lapsed ones holding nothing, and listeners told the
pools each change and each lapse touches."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from apiserver.api.resource import DeviceID
from apiserver.pools import HeldReservations, PoolKey
from apiserver.sources import MemorySource
from devtools.waiting import eventually
from tests.unit.builders import DRIVER, reservation_obj


def _at(seconds: float) -> str:
    return (datetime.now(UTC) + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


async def test_own_reservations_are_held_before_the_source_has_them() -> None:
    source = MemorySource("devicereservations")
    await source.start()
    held = HeldReservations(source)
    told: list[set[PoolKey]] = []
    held.on_change(told.append)

    own = reservation_obj("mine", "n1", "g0", "g1")
    own["metadata"]["resourceVersion"] = "100"
    held.made(own)
    assert held.held() == {DeviceID(DRIVER, "n1", "g0"), DeviceID(DRIVER, "n1", "g1")}
    assert held.held_in((DRIVER, "n1")) == {"g0", "g1"}
    assert told == [{(DRIVER, "n1")}]

    source.put(reservation_obj("theirs", "n2", "g0"))
    assert held.by_pool() == {(DRIVER, "n1"): {"g0", "g1"}, (DRIVER, "n2"): {"g0"}}
    assert told[-1] == {(DRIVER, "n2")}
    held.forget("mine")
    assert held.held() == {DeviceID(DRIVER, "n2", "g0")}
    source.remove("theirs")
    assert held.held() == set()
    assert told[-1] == {(DRIVER, "n2")}
    held.close()


async def test_a_lapsed_reservation_holds_nothing_and_its_pools_are_told() -> None:
    source = MemorySource("devicereservations")
    await source.start()
    held = HeldReservations(source)
    told: list[set[PoolKey]] = []
    held.on_change(told.append)
    source.put(reservation_obj("old", "n1", "g0", expires="2020-01-01T00:00:00Z"))
    assert held.held() == set()
    source.put(reservation_obj("soon", "n2", "g0", expires=_at(1.5)))
    assert held.held() == {DeviceID(DRIVER, "n2", "g0")}
    told.clear()
    # No event: the lapse alone frees the device and tells the listeners.
    await eventually(lambda: (DRIVER, "n2") in set().union(*told), "the lapse", timeout=10)
    assert held.held() == set()
    held.close()


async def test_each_lapse_is_told_in_turn_whatever_order_they_came_in() -> None:
    """A reservation lapsing sooner than the one the timer waits for moves the timer up;
    one that goes leaves it early, and the early wake looks again."""
    source = MemorySource("devicereservations")
    await source.start()
    held = HeldReservations(source)
    told: list[set[PoolKey]] = []
    held.on_change(told.append)
    source.put(reservation_obj("late", "n1", "g0", expires=_at(6.5)))  # seconds after soon
    source.put(reservation_obj("gone", "n3", "g0", expires=_at(0.5)))
    source.put(reservation_obj("soon", "n2", "g0", expires=_at(1.5)))
    source.remove("gone")
    told.clear()
    await eventually(lambda: (DRIVER, "n2") in set().union(*told), "the first lapse", timeout=10)
    assert held.held() == {DeviceID(DRIVER, "n1", "g0")}
    await eventually(lambda: (DRIVER, "n1") in set().union(*told), "the second", timeout=15)
    assert held.held() == set()
    held.close()


async def test_count_by_counts_a_users_current_reservations() -> None:
    source = MemorySource("devicereservations")
    await source.start()
    held = HeldReservations(source)
    for name, user, expires in (
        ("a1", "alice", _at(600)),
        ("a2", "alice", _at(600)),
        ("a3", "alice", "2020-01-01T00:00:00Z"),
        ("b1", "bob", _at(600)),
    ):
        obj = reservation_obj(name, "n1", name, expires=expires)
        obj["spec"]["username"] = user
        source.put(obj)
    assert (held.count_by("alice"), held.count_by("bob"), held.count_by("carol")) == (2, 1, 0)
    held.close()


async def test_released_after_names_the_devices_of_deletes_past_a_revision() -> None:
    source = MemorySource("devicereservations")
    await source.start()
    held = HeldReservations(source)
    source.put(reservation_obj("early", "n1", "g0"))
    source.put(reservation_obj("late", "n1", "g1"))
    source.remove("early")
    early_gone = source.revision
    source.remove("late")
    assert held.held() == set()
    assert held.released_after(0) == {DeviceID(DRIVER, "n1", "g0"), DeviceID(DRIVER, "n1", "g1")}
    # A claim cache at the first delete: only the later one may not be in it yet.
    assert held.released_after(early_gone) == {DeviceID(DRIVER, "n1", "g1")}
    assert held.released_after(source.revision) == set()
    held.close()
