"""The serving core: what each request of the HTTP API does to the one `Memory` served, written once
— its `Memory` call under the thread policy (`memarch.app.threads.MemoryThreads`: reads on the
reader threads, writes on the writer's) and its answer as plain JSON values. The adapters over it
only carry requests in and answers out: `http_api` (FastAPI: routing, the documented schemas),
`hot_routes` (search and add past FastAPI), `mcp_server` (the MCP tools, through `read` / `write`
and `refusal`).

A request reaches the core checked (checks.py); what the memory refuses comes back as the
exception, which `refusal` maps to its answer (errors.py)."""
from __future__ import annotations

import os
from typing import Any

from memarch.app.messages import as_messages
from memarch.app.serve import schemas as s
from memarch.app.serve.auth import Token
from memarch.app.serve.checks import check_users, plain
from memarch.app.serve.errors import Refusal, refusal_of
from memarch.app.threads import MemoryThreads
from memarch.errors import MemarchError


class ServingCore:
    """One `Memory` as every server serves it.

    Args:
        memory: the `memarch.Memory` served.
        threads: the thread policy its calls run under (default: `MemoryThreads()`, two readers
            and one writer); owned by this core, so by the app or server that made it.
    """

    def __init__(self, memory: Any, threads: MemoryThreads | None = None):
        self.memory = memory
        self.threads = threads if threads is not None else MemoryThreads()
        self.hide = str(memory.path)  # the server's directory is none of the client's business

    def refusal(self, exc: BaseException, where: str = "request") -> Refusal:
        """The answer to an exception raised by a request (`errors.refusal_of`, the path hidden)."""
        return refusal_of(exc, self.hide, where)

    async def read(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        return await self.threads.read(fn, *args, **kwargs)

    async def write(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        return await self.threads.write(fn, *args, **kwargs)

    # -- the requests, each the content of its answer ------------------------------------------------
    async def search(self, user_id: str, body: s.SearchRequest) -> dict:
        records = await self.read(self.memory.search, body.query, user_id=user_id, limit=body.limit)
        return {"results": [r.to_dict() for r in records]}

    async def add(self, user_id: str, body: s.AddRequest) -> dict:
        records = await self.write(self.memory.add, plain(body.messages), user_id=user_id, timestamp=body.timestamp)
        return {"items": [r.to_dict() for r in records]}

    async def context(self, user_id: str, body: s.SearchRequest) -> dict:
        return {"context": await self.read(self.memory.context, body.query, user_id=user_id, limit=body.limit)}

    async def page(self, user_id: str, include_deleted: bool, offset: int, limit: int) -> dict:
        records = await self.read(self.memory.get_all, user_id=user_id, include_deleted=include_deleted)
        return {"items": [r.to_dict() for r in records[offset:offset + limit]], "total": len(records),
                "offset": offset, "limit": limit}

    async def get(self, user_id: str, item_id: str) -> dict:
        return (await self.read(self.memory.get, item_id, user_id=user_id)).to_dict()

    async def history(self, user_id: str, item_id: str) -> dict:
        return {"item_id": item_id, "history": await self.read(self.memory.history, item_id, user_id=user_id)}

    async def source(self, user_id: str, item_id: str) -> dict:
        return {"item_id": item_id, "messages": await self.read(self.memory.source, item_id, user_id=user_id)}

    async def update(self, user_id: str, item_id: str, body: s.UpdateRequest) -> dict:
        records = await self.write(self.memory.update, item_id, body.text, user_id=user_id, timestamp=body.timestamp)
        return {"items": [r.to_dict() for r in records]}

    async def delete(self, user_id: str, item_id: str | None = None) -> dict:
        """One item tombstoned, or (no ``item_id``) every item and message of the user, from disk:
        the `DeletionReport` (what was removed, the checks that nothing is left)."""
        return (await self.write(self.memory.delete_verified, user_id=user_id, item_id=item_id)).to_dict()

    async def remains(self, user_id: str) -> dict:
        """What this process holds of the user (`Memory.remains`), with the process's id."""
        checks = await self.read(self.memory.remains, user_id=user_id)
        return {"user_id": user_id, "pid": os.getpid(), "remains": any(c.left for c in checks),
                "checks": [c.to_dict() for c in checks]}

    async def bulk(self, token: Token | None, body: s.BulkRequest) -> dict:
        """Every session's user against the token and every session's messages checked before the
        first is written; then one `Memory.add_many`."""
        check_users(token, [x.user_id for x in body.sessions])
        sessions = [{"messages": plain(x.messages), "user_id": x.user_id, "timestamp": x.timestamp}
                    for x in body.sessions]
        for i, x in enumerate(sessions):
            try:
                as_messages(x["messages"])
            except MemarchError as exc:
                raise MemarchError(f"sessions[{i}]: {exc}") from None
        results = await self.write(self.memory.add_many, sessions)
        return {"sessions": len(results), "items": [[r.to_dict() for r in kept] for kept in results]}

    async def stats(self) -> dict:
        return await self.read(self.memory.stats)
