"""A response's head goes out with its body's first bytes in one write; a head with no body
in the same turn of the event loop (a watch before its first event) goes out at the next
turn; closing writes what is held first. Against a transport that records its writes."""

from __future__ import annotations

import asyncio
from typing import Any

from apiserver.server.onewrite import HeadWithBody, OneWriteProtocol, OneWriteResponses
from apiserver.server.protocol import BoundedHttpToolsProtocol
from apiserver.server.tlspeer import PeerCertificateProtocol


class Recording:
    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def get_extra_info(self, name: str) -> Any:
        return f"extra {name}"


def _turn() -> Any:
    return asyncio.sleep(0)


def test_the_head_and_the_body_go_in_one_write() -> None:
    async def run() -> list[bytes]:
        recording = Recording()
        transport = HeadWithBody(recording, asyncio.get_running_loop())  # type: ignore[arg-type]
        transport.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n")
        transport.write(b"{}")
        await _turn()
        return recording.writes

    assert asyncio.run(run()) == [b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}"]


def test_a_head_without_a_body_goes_out_at_the_next_turn_and_later_writes_follow() -> None:
    async def run() -> list[list[bytes]]:
        recording = Recording()
        transport = HeadWithBody(recording, asyncio.get_running_loop())  # type: ignore[arg-type]
        transport.write(b"head")
        seen = [list(recording.writes)]
        await _turn()
        seen.append(list(recording.writes))
        transport.write(b"event 1")
        transport.write(b"event 2")
        seen.append(list(recording.writes))
        return seen

    before, after_turn, events = asyncio.run(run())
    assert before == []
    assert after_turn == [b"head"]
    assert events == [b"head", b"event 1", b"event 2"]


def test_closing_writes_the_held_head_first_and_nothing_after() -> None:
    async def run() -> Recording:
        recording = Recording()
        transport = HeadWithBody(recording, asyncio.get_running_loop())  # type: ignore[arg-type]
        transport.write(b"head")
        transport.close()
        await _turn()  # the scheduled write finds nothing held
        return recording

    recording = asyncio.run(run())
    assert recording.writes == [b"head"]
    assert recording.closed


def test_a_head_held_when_the_connection_closed_is_dropped() -> None:
    async def run() -> list[bytes]:
        recording = Recording()
        transport = HeadWithBody(recording, asyncio.get_running_loop())  # type: ignore[arg-type]
        transport.write(b"head")
        recording.closed = True  # the peer went away (an abort)
        await _turn()
        return recording.writes

    assert asyncio.run(run()) == []


def test_everything_else_is_the_transports() -> None:
    loop = asyncio.new_event_loop()
    try:
        transport = HeadWithBody(Recording(), loop)  # type: ignore[arg-type]
        assert transport.get_extra_info("peername") == "extra peername"
        assert not transport.is_closing()
    finally:
        loop.close()


def test_the_server_and_the_shim_write_responses_so() -> None:
    assert issubclass(BoundedHttpToolsProtocol, OneWriteResponses)
    assert issubclass(PeerCertificateProtocol, OneWriteProtocol)


class _Cycle:
    def __init__(self, transport: Any) -> None:
        self.transport = transport


class _Protocol:
    """uvicorn's protocol as the mixin sees it: a new cycle per request, none for an
    upgrade."""

    def __init__(self, upgrade: bool) -> None:
        self.upgrade = upgrade
        self.transport = Recording()
        self.loop = asyncio.new_event_loop()
        self.cycle: _Cycle | None = None

    def on_headers_complete(self) -> None:
        if not self.upgrade:
            self.cycle = _Cycle(self.transport)


class _OneWrite(OneWriteResponses, _Protocol):
    pass


def test_each_new_cycle_writes_through_it_and_an_upgrade_is_left_alone() -> None:
    plain = _OneWrite(upgrade=False)
    upgrade = _OneWrite(upgrade=True)
    try:
        plain.on_headers_complete()
        assert plain.cycle is not None
        assert isinstance(plain.cycle.transport, HeadWithBody)
        upgrade.on_headers_complete()  # no cycle was made: nothing to wrap, no error
        assert upgrade.cycle is None
    finally:
        plain.loop.close()
        upgrade.loop.close()
