"""The HTTP server protocol's connection helpers. Paired writes
(``gateway.ingress.protocol._Paired``): a
response's head and the body written right after it leave in one send; a write nothing
follows leaves at the end of the event loop's turn; closing sends what is held first.
``Leaving``: a connection's end told to the requests that asked, once."""

from __future__ import annotations

import asyncio
from typing import Any

from toolgate.gateway.ingress.protocol import Leaving, _Paired


class Recorder:
    def __init__(self) -> None:
        self.sent: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        self.sent.append(data)

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def get_extra_info(self, name: str) -> Any:
        return f"info:{name}"


async def test_a_head_and_its_body_leave_in_one_send() -> None:
    raw = Recorder()
    paired = _Paired(raw, asyncio.get_running_loop())  # type: ignore[arg-type]
    paired.write(b"HTTP/1.1 200 OK\r\n\r\n")
    paired.write(b"body")
    paired.write(b"")  # nothing to send: nothing sent
    paired.write(b"more")
    assert raw.sent == [b"HTTP/1.1 200 OK\r\n\r\nbody"]  # the pair, at once
    await asyncio.sleep(0)  # the turn ends: what is held leaves
    assert raw.sent == [b"HTTP/1.1 200 OK\r\n\r\nbody", b"more"]


async def test_a_lone_write_leaves_at_the_end_of_the_turn_and_close_sends_it_first() -> None:
    raw = Recorder()
    paired = _Paired(raw, asyncio.get_running_loop())  # type: ignore[arg-type]
    paired.write(b"event")
    assert raw.sent == []
    await asyncio.sleep(0)
    assert raw.sent == [b"event"]
    paired.write(b"last")
    paired.close()
    assert raw.sent == [b"event", b"last"] and raw.closed
    await asyncio.sleep(0)  # the scheduled flush finds nothing left
    assert raw.sent == [b"event", b"last"]
    assert paired.get_extra_info("peername") == "info:peername"


def test_leaving_tells_each_waiting_request_once_and_forgets_those_that_stopped() -> None:
    leaving = Leaving()
    told: list[str] = []
    leaving.when(lambda: told.append("first"))
    forget = leaving.when(lambda: told.append("stopped watching"))
    leaving.when(lambda: told.append("second"))
    forget()
    forget()  # twice: nothing more to take back
    assert told == []
    leaving.closed()
    assert (told, leaving.left) == (["first", "second"], True)
    leaving.closed()  # told once
    assert told == ["first", "second"]
    leaving.when(lambda: told.append("late"))  # the connection is gone already: at once
    assert told == ["first", "second", "late"]
