"""A real MCP client on a private event loop, for synchronous hypothesis properties.

Hypothesis runs (and shrinks) a property as a plain function; an MCP client's task
group must stay in the one task that entered it. ``Driven`` owns that task and runs
each request in it, bounded in time, so a property can drive a connected client and a
hang fails the example instead of the suite.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any, Generic, TypeVar

C = TypeVar("C")
T = TypeVar("T")

Job = tuple[Callable[[], Awaitable[Any]], "asyncio.Future[Any]"]


class Driven(Generic[C]):
    """``connect()`` entered in a task of a private loop; ``run`` sends work to it."""

    def __init__(self, connect: Callable[[], AbstractAsyncContextManager[C]]) -> None:
        self.loop = asyncio.new_event_loop()
        self.jobs: asyncio.Queue[Job | None] = asyncio.Queue()
        ready: asyncio.Future[C] = self.loop.create_future()
        self.task = self.loop.create_task(self._serve(connect, ready))
        self.client = self.loop.run_until_complete(ready)

    async def _serve(
        self, connect: Callable[[], AbstractAsyncContextManager[C]], ready: asyncio.Future[C]
    ) -> None:
        try:
            async with connect() as client:
                ready.set_result(client)
                while (job := await self.jobs.get()) is not None:
                    work, done = job
                    try:
                        done.set_result(await work())
                    except Exception as exc:
                        done.set_exception(exc)
        except Exception as exc:
            if not ready.done():
                ready.set_exception(exc)
            raise

    def run(self, work: Callable[[C], Awaitable[T]], timeout: float = 10.0) -> T:
        """``work(client)`` in the client's task; ``TimeoutError`` past ``timeout`` s."""
        done: asyncio.Future[T] = self.loop.create_future()
        self.jobs.put_nowait((lambda: asyncio.wait_for(work(self.client), timeout), done))
        return self.loop.run_until_complete(done)

    def close(self) -> None:
        """Leave the client, then end what the loop still runs (a server library's
        watcher task, say) as ``asyncio.run`` does, so nothing is destroyed pending."""
        self.jobs.put_nowait(None)
        try:
            self.loop.run_until_complete(self.task)
        finally:
            left = asyncio.all_tasks(self.loop)
            for task in left:
                task.cancel()
            if left:
                self.loop.run_until_complete(asyncio.wait(left))
            self.loop.run_until_complete(self.loop.shutdown_asyncgens())
            self.loop.close()
