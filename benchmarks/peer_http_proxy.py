"""The least any relay written in Python can cost: an HTTP/1.1 reverse proxy on plain
asyncio streams that copies each request to one backend and its response back, byte for
byte (kept-open backend connections, chunked or sized bodies, long-lived SSE streams).
It reads no JSON and knows nothing of MCP: no sessions, ids, policy or disclosure. It is
the floor ``bench_gateway.py`` measures the MCP-aware relays against.
Run: ``python benchmarks/peer_http_proxy.py BACKEND_URL --port N``.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
from urllib.parse import urlsplit

_HOP = (b"connection", b"keep-alive", b"host")


class Pool:
    """Kept-open connections to the backend; one request at a time on each."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []

    async def take(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        while self.idle:
            reader, writer = self.idle.pop()
            if not writer.is_closing() and not reader.at_eof():
                return reader, writer
        return await asyncio.open_connection(self.host, self.port)

    def give(self, conn: tuple[asyncio.StreamReader, asyncio.StreamWriter]) -> None:
        self.idle.append(conn)


async def read_head(reader: asyncio.StreamReader) -> tuple[bytes, list[tuple[bytes, bytes]]]:
    """The start line and the headers of one HTTP message."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head[:-4].split(b"\r\n")
    headers = []
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        headers.append((name.strip().lower(), value.strip()))
    return lines[0], headers


async def copy_body(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, headers: list[tuple[bytes, bytes]]
) -> None:
    """Copy one message body as it arrives: chunked framing kept, or a sized body."""
    fields = dict(headers)
    if fields.get(b"transfer-encoding", b"").lower() == b"chunked":
        while True:
            size_line = await reader.readuntil(b"\r\n")
            size = int(size_line.split(b";")[0], 16)
            chunk = await reader.readexactly(size + 2)
            writer.write(size_line + chunk)
            await writer.drain()
            if size == 0:
                return
    length = int(fields.get(b"content-length", b"0"))
    if length:
        writer.write(await reader.readexactly(length))
        await writer.drain()


def head_bytes(start: bytes, headers: list[tuple[bytes, bytes]], host: bytes) -> bytes:
    lines = [start, b"host: " + host] if host else [start]
    lines += [name + b": " + value for name, value in headers if name not in _HOP]
    return b"\r\n".join(lines) + b"\r\n\r\n"


async def handle(
    pool: Pool, host: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    try:
        while True:
            try:
                start, headers = await read_head(reader)
            except (asyncio.IncompleteReadError, ConnectionError):
                return
            up_reader, up_writer = await pool.take()
            up_writer.write(head_bytes(start, headers, host))
            await copy_body(reader, up_writer, headers)
            status, back = await read_head(up_reader)
            writer.write(head_bytes(status, back, b""))
            await copy_body(up_reader, writer, back)
            if dict(back).get(b"connection", b"").lower() == b"close":
                up_writer.close()
            else:
                pool.give((up_reader, up_writer))
    except (asyncio.IncompleteReadError, ConnectionError):
        return
    finally:
        writer.close()


async def main(url: str, port: int) -> None:
    parts = urlsplit(url)
    pool = Pool(parts.hostname or "127.0.0.1", parts.port or 80)
    host = parts.netloc.encode()

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await handle(pool, host, reader, writer)

    server = await asyncio.start_server(on_connect, "127.0.0.1", port)
    # SIGINT too, explicitly: started in the background, a process inherits it ignored
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        asyncio.get_running_loop().add_signal_handler(sig, stop.set)
    await stop.wait()
    # not ``wait_closed``: a relayed SSE stream whose client is gone would hold it;
    # asyncio.run cancels the connections' tasks after this
    server.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("--port", type=int, required=True)
    ns = parser.parse_args()
    asyncio.run(main(ns.url, ns.port))
