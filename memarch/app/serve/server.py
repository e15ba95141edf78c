"""How ``memarch serve`` runs an ASGI app (the HTTP API, MCP over HTTP): uvicorn on uvloop with the
httptools parser, behind a protocol that a slow or hostile client cannot pin down.

`GuardedHttp` (uvicorn's httptools protocol, subclassed):
- a connection must send a request's line and headers within `HEADER_TIMEOUT_S` of opening (or of
  the previous response): one that does not gets a JSON 408 and is closed, so half-open connections
  ("slowloris") cannot hold the server's file descriptors;
- a request's line and headers hold at most `MAX_HEADER_BYTES` bytes and `MAX_HEADERS` header fields:
  past either, a JSON 431 and the connection closed, counted as the bytes arrive (before the headers
  end, so before the token is read), so a client cannot make the server hold more than about that
  plus one read per connection (uvicorn bounds headers for its h11 protocol only,
  ``h11_max_incomplete_event_size``; httptools, which this server runs, has no bound of its own);
- at most `MAX_CONNECTIONS` connections at once (never more than the process may open, less a
  reserve): one over the limit gets a JSON 503 and is closed at once, so ``/health`` and the
  clients already connected keep answering;
- at most `MAX_CONNECTIONS_PER_CLIENT` of them from one remote address (the same JSON 503), so one
  client cannot hold the whole cap and keep every other client at 503 (behind a reverse proxy,
  every client has the proxy's address: docs/serving.md);
- a request the parser refuses (a garbage request line, a malformed ``Content-Length``) gets the
  API's JSON error shape, ``{"error": "..."}``, not uvicorn's plain text;
- these refusals, and uvicorn's own warnings about bad requests, are logged at most once a second
  of each kind, with how many were not logged; a client's text in any line (the access log's path
  and query) is cut to `server_log.LOG_TEXT_MAX` characters, so the log grows by a bounded line per
  request at most, and not at all for a flood of bad ones.
The body of a request is bounded in time by the HTTP API's guard (`guard.BODY_TIMEOUT_S`, 408).

`Server` stops on SIGTERM / SIGINT gracefully and exits 0 (uvicorn re-raises the signal otherwise,
and the process ends with -15).
"""
from __future__ import annotations

import logging
import resource
from typing import Any

import httptools
import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from memarch.app.serve.errors import error_body
from memarch.app.serve.server_log import BoundedLog, Quiet, clip

log = logging.getLogger(__name__)

HEADER_TIMEOUT_S = 10.0  # a request's line and headers, from the connection (or the previous response)
MAX_CONNECTIONS = 1000  # open at once; more are refused with a 503 (lowered to what the fd limit allows)
# Open at once from one remote address (at most MAX_CONNECTIONS), more refused with a 503: half the
# cap, so one address never holds all of it, and five times a client pool's usual bound (httpx,
# aiohttp: 100), so that no ordinary client meets it (docs/serving.md, "Limits").
MAX_CONNECTIONS_PER_CLIENT = 500
FD_RESERVE = 64  # descriptors kept for the memory's files, the database and the log
MAX_HEADER_BYTES = 64 << 10  # a request's line and headers (431 past it)
MAX_HEADERS = 100  # header fields in one request (431 past it)


def raise_fd_limit() -> int:
    """Raise this process's soft limit of open files to its hard limit; returns the soft limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or hard > soft:
        want = hard if hard != resource.RLIM_INFINITY else max(soft, 65536)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
            soft = want
        except (ValueError, OSError):
            pass
    return soft


class _HeadTooLarge(Exception):
    """Raised in a parser callback to stop httptools at once; answered 431 (`GuardedHttp.data_received`)."""


class GuardedHttp(HttpToolsProtocol):
    """uvicorn's httptools protocol with a header deadline, bounded headers, connection caps (all
    clients', one client's) and JSON refusals (module docstring). The limits, the connections per
    address and the log are class attributes of the subclass `config` makes for one server (uvicorn
    makes a protocol object per connection)."""

    header_timeout_s: float = HEADER_TIMEOUT_S
    max_connections: int = MAX_CONNECTIONS
    max_connections_per_client: int = MAX_CONNECTIONS_PER_CLIENT
    max_header_bytes: int = MAX_HEADER_BYTES
    max_headers: int = MAX_HEADERS
    quiet: Quiet  # the server's: its refusals' log, at most a line a second of each kind
    per_client: dict[str, int]  # the server's: connections open per remote address
    error_log: BoundedLog  # uvicorn's loggers, bounded (server_log.py): its warnings through `quiet`,
    request_log: BoundedLog  # and a client's text in any line (the access log's path) cut short

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.logger, self.access_logger = self.error_log, self.request_log
        self._address: str | None = None  # counted in `per_client` while not None

    def connection_made(self, transport: Any) -> None:  # type: ignore[override]
        super().connection_made(transport)
        # The current request's head (its line and headers), counted as it arrives: httptools keeps
        # a header's value until the value ends, so the raw bytes of reads that fall wholly inside
        # one head are counted too (`data_received`), not only what the callbacks have seen.
        self._in_head, self._heads = True, 0  # in a head (not a body); heads completed so far
        self._head_bytes = self._head_fields = self._head_raw = 0
        if self.client:  # None on a Unix socket
            self._address = self.client[0]
            self.per_client[self._address] = self.per_client.get(self._address, 0) + 1
        if len(self.connections) > self.max_connections:
            self.quiet.warn("connections", f"refused a connection: {self.max_connections} open already")
            self._refuse(503, f"the server has {self.max_connections} connections open; try again later")
            return
        if self._address is not None and self.per_client[self._address] > self.max_connections_per_client:
            self.quiet.warn("client connections", f"refused a connection from {clip(self._address)}: "
                                                  f"{self.max_connections_per_client} open from that address already")
            self._refuse(503, f"the server has {self.max_connections_per_client} connections open from your "
                              "address; try again later")
            return
        self._arm_header_deadline()

    def data_received(self, data: bytes) -> None:
        """uvicorn's, but a head over the limits is a 431: `_count_head` raises in a parser callback,
        which stops httptools at once (uvicorn's own would log and answer a malformed request)."""
        began, heads = self._in_head, self._heads
        self._unset_keepalive_if_required()
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:  # a callback that raised too (HttpParserCallbackError)
            if isinstance(exc.__context__, _HeadTooLarge):
                return self._refuse_head(str(exc.__context__))
            self.logger.warning("Invalid HTTP request received.")
            return self.send_400_response("Invalid HTTP request received.")
        except httptools.HttpParserUpgrade:
            if self._should_upgrade():
                self.handle_websocket_upgrade()
            else:
                self._unsupported_upgrade_warning()
            return
        if began and self._in_head and heads == self._heads and not self.transport.is_closing():
            self._head_raw += len(data)  # all of it inside one head that has not ended yet
            if self._head_raw > self.max_header_bytes:
                self._refuse_head(self._over_bytes())

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._in_head, self._head_bytes, self._head_fields = True, 0, 0

    def on_url(self, url: bytes) -> None:
        self._count_head(len(url), 0)
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._count_head(len(name) + len(value) + 4, 1)  # with ": " and CRLF
        super().on_header(name, value)

    def _count_head(self, n_bytes: int, n_fields: int) -> None:
        self._head_bytes += n_bytes
        self._head_fields += n_fields
        if self._head_fields > self.max_headers:
            raise _HeadTooLarge(f"more than {self.max_headers} request header fields")  # stops the parser
        if self._head_bytes > self.max_header_bytes:
            raise _HeadTooLarge(self._over_bytes())

    def _over_bytes(self) -> str:
        return f"request line and headers over the limit of {self.max_header_bytes} bytes"

    def _refuse_head(self, why: str) -> None:
        self.quiet.warn("headers", f"refused a request: {why}")
        self._refuse(431, why)

    def _arm_header_deadline(self) -> None:
        self._header_deadline = self.loop.call_later(self.header_timeout_s, self._header_deadline_passed)

    def _disarm_header_deadline(self) -> None:
        deadline = getattr(self, "_header_deadline", None)
        if deadline is not None:
            deadline.cancel()
            self._header_deadline = None

    def _header_deadline_passed(self) -> None:
        self._header_deadline = None
        if not self.transport.is_closing() and (self.cycle is None or self.cycle.response_complete):
            self.quiet.warn("slow", f"closed a connection that sent no complete request headers in "
                                f"{self.header_timeout_s:g} s")
            self._refuse(408, f"request headers not received within {self.header_timeout_s:g} s")

    def on_headers_complete(self) -> None:
        self._in_head, self._heads, self._head_raw = False, self._heads + 1, 0
        self._disarm_header_deadline()
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._in_head = True  # what comes next on this connection is the next request's head

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing() and not self.pipeline:  # the next request's headers: a new deadline
            self._disarm_header_deadline()
            self._arm_header_deadline()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_header_deadline()
        self._release_address()
        super().connection_lost(exc)

    def handle_websocket_upgrade(self) -> None:
        self._release_address()  # the connection is the WebSocket protocol's from now on
        super().handle_websocket_upgrade()

    def _release_address(self) -> None:
        address, self._address = self._address, None
        if address is not None:
            left = self.per_client[address] - 1
            if left:
                self.per_client[address] = left
            else:
                del self.per_client[address]  # no address stays in the table once its connections closed

    def send_400_response(self, msg: str) -> None:
        self.quiet.warn("malformed", "refused a malformed HTTP request")
        self._refuse(400, "malformed HTTP request (" + msg.rstrip(".").lower() + ")")

    def _refuse(self, status: int, message: str) -> None:
        """A JSON error response, then the connection closed."""
        self._disarm_header_deadline()
        body = error_body(message)
        reason = {400: b"Bad Request", 408: b"Request Timeout", 431: b"Request Header Fields Too Large",
                  503: b"Service Unavailable"}[status]
        head = [b"HTTP/1.1 %d %s\r\n" % (status, reason)]
        for name, value in self.server_state.default_headers:
            head += [name, b": ", value, b"\r\n"]
        head += [b"content-type: application/json\r\n", b"content-length: %d\r\n" % len(body),
                 b"connection: close\r\n\r\n", body]
        self.transport.write(b"".join(head))
        self.transport.close()


class Server(uvicorn.Server):
    """A uvicorn server that a signal stops with exit status 0 after its graceful shutdown."""

    def handle_exit(self, sig: int, frame: Any) -> None:
        super().handle_exit(sig, frame)
        self._captured_signals.clear()  # not re-raised at the end: the stop was asked for


def config(app: Any, *, log_level: str = "info", access_log: bool = True,
           header_timeout_s: float = HEADER_TIMEOUT_S, max_connections: int = MAX_CONNECTIONS,
           max_connections_per_client: int = MAX_CONNECTIONS_PER_CLIENT, max_header_bytes: int = MAX_HEADER_BYTES,
           max_headers: int = MAX_HEADERS, **more: Any) -> uvicorn.Config:
    """The uvicorn configuration of a memarch server: uvloop, `GuardedHttp` with these limits
    (``max_connections`` lowered to what the open-files limit leaves, after raising it, and
    ``max_connections_per_client`` to ``max_connections``); ``more``: other `uvicorn.Config`
    settings (host, port)."""
    cap = max(1, min(int(max_connections), raise_fd_limit() - FD_RESERVE))
    quiet = Quiet(log)
    limits = {"header_timeout_s": float(header_timeout_s), "max_connections": cap,
              "max_connections_per_client": max(1, min(int(max_connections_per_client), cap)),
              "max_header_bytes": int(max_header_bytes), "max_headers": int(max_headers)}
    state = {"quiet": quiet, "per_client": {}, "error_log": BoundedLog(logging.getLogger("uvicorn.error"), quiet),
             "request_log": BoundedLog(logging.getLogger("uvicorn.access"), quiet)}
    protocol = type("GuardedHttp", (GuardedHttp,), {**limits, **state})
    return uvicorn.Config(app, http=protocol, loop="uvloop", log_level=log_level, access_log=access_log,
                          timeout_graceful_shutdown=30, server_header=False, proxy_headers=False,
                          timeout_keep_alive=5, **more)


def serve_app(app: Any, *, host: str, port: int, log_level: str = "info", access_log: bool = False,
              **limits: Any) -> int:
    """Run ``app`` on ``host:port`` until a signal stops it; 0 after a clean stop. ``limits``:
    `config`'s ``header_timeout_s``, ``max_connections``, ``max_connections_per_client``,
    ``max_header_bytes`` and ``max_headers``."""
    server = Server(config(app, log_level=log_level, access_log=access_log, host=host, port=port, **limits))
    server.run()
    return 0 if server.started else 1
