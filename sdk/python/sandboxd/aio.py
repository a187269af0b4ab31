# SPDX-License-Identifier: LGPL-2.1-or-later
"""An asyncio flavour of :class:`sandboxd.Client`: the same calls, awaitable. Each runs the
synchronous client's call in the event loop's default thread pool executor (the client is
thread-safe and keeps its connections alive), so it never blocks the loop.

Cancelling the awaiting task stops the wait, not the thread's call: that ends when its answer comes
(for ``execute``/``wait``, when the run is final), and the run on the server goes on either way --
:meth:`AsyncClient.cancel` stops it."""
from __future__ import annotations

import asyncio
import functools
from typing import Any, AsyncIterator, Callable, List, Optional, TypeVar

from .client import Client, EventStream
from .models import Artifact, DirectoryListing, Event, Execution, ExecutionPage, Health, Language, Session

T = TypeVar("T")

__all__ = ["AsyncClient", "AsyncEventStream"]


class AsyncClient:
    """``AsyncClient(...)`` takes the arguments of :class:`~sandboxd.Client`; ``async with`` closes
    it. ``.sync`` is the underlying synchronous client."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.sync = Client(*args, **kwargs)

    async def _run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, functools.partial(fn, *args, **kwargs))

    async def execute(self, language: str, code: str, **kwargs: Any) -> Execution:
        return await self._run(self.sync.execute, language, code, **kwargs)

    async def submit(self, language: str, code: str, **kwargs: Any) -> str:
        return await self._run(self.sync.submit, language, code, **kwargs)

    async def get(self, execution_id: str) -> Execution:
        return await self._run(self.sync.get, execution_id)

    async def wait(self, execution_id: str, **kwargs: Any) -> Execution:
        return await self._run(self.sync.wait, execution_id, **kwargs)

    async def cancel(self, execution_id: str) -> Execution:
        return await self._run(self.sync.cancel, execution_id)

    async def list(self, **kwargs: Any) -> ExecutionPage:
        return await self._run(self.sync.list, **kwargs)

    async def iter_executions(self, **filters: Any) -> AsyncIterator[Execution]:
        cursor = filters.pop("cursor", None)
        while True:
            page = await self.list(cursor=cursor, **filters)
            for e in page.executions:
                yield e
            if not page.next_cursor or not page.executions:
                return
            cursor = page.next_cursor

    async def artifacts(self, execution_id: str) -> Optional[List[Artifact]]:
        return await self._run(self.sync.artifacts, execution_id)

    async def download_artifact(self, artifact: Any, dest: Any = None) -> Any:
        return await self._run(self.sync.download_artifact, artifact, dest)

    async def get_session(self, session_id: str) -> Session:
        return await self._run(self.sync.get_session, session_id)

    async def list_sessions(self) -> List[Session]:
        return await self._run(self.sync.list_sessions)

    async def delete_session(self, session_id: str) -> Any:
        return await self._run(self.sync.delete_session, session_id)

    async def put_file(self, session_id: str, path: str, data: Any) -> Any:
        return await self._run(self.sync.put_file, session_id, path, data)

    async def get_file(self, session_id: str, path: str, dest: Any = None) -> Any:
        return await self._run(self.sync.get_file, session_id, path, dest)

    async def list_files(self, session_id: str, path: str = "") -> DirectoryListing:
        return await self._run(self.sync.list_files, session_id, path)

    async def delete_file(self, session_id: str, path: str) -> Any:
        return await self._run(self.sync.delete_file, session_id, path)

    async def languages(self) -> List[Language]:
        return await self._run(self.sync.languages)

    async def health(self) -> Health:
        return await self._run(self.sync.health)

    def events(self, execution_id: str, **kwargs: Any) -> "AsyncEventStream":
        """``async for event in client.events(id):`` -- see :meth:`Client.events`."""
        return AsyncEventStream(self, self.sync.events(execution_id, **kwargs))

    async def close(self) -> None:
        self.sync.close()

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()


_END = object()


class AsyncEventStream:
    def __init__(self, client: AsyncClient, stream: EventStream) -> None:
        self._client = client
        self._stream = stream

    def __aiter__(self) -> "AsyncEventStream":
        return self

    async def __anext__(self) -> Event:
        ev = await self._client._run(next, self._stream, _END)
        if ev is _END:
            raise StopAsyncIteration
        return ev  # type: ignore[return-value]

    @property
    def last_event_id(self) -> Optional[str]:
        return self._stream.last_event_id

    async def aclose(self) -> None:
        self._stream.close()

    async def __aenter__(self) -> "AsyncEventStream":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self._stream.close()
