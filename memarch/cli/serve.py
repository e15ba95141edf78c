"""``memarch serve PROGRAM --path DIR``: the compiled memory as an HTTP API (FastAPI + uvicorn) or,
with ``--mcp stdio|http``, as an MCP server. Bound to 127.0.0.1 unless told otherwise; any other
address needs ``--token-file`` (docs/serving.md). SIGINT / SIGTERM stop it gracefully: in-flight
requests finish, the memory is closed, exit 0."""
from __future__ import annotations

import ipaddress
import socket
import sys

HELP = "serve a compiled memory over HTTP (or MCP) for agents: add, search, update, delete per user"
DEFAULT_PORT = 8765
DEFAULT_MCP_PORT = 8766  # the MCP server's own default (docs/mcp.md)


def add_arguments(p) -> None:
    p.add_argument("program", help="saved program (memarch compile --output) or architecture JSON")
    p.add_argument("--path", required=True, help="the memory's state: a directory (memory.db, SQLite; created if "
                                                 "missing) or a postgresql:// URL that several servers share")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to bind (default 127.0.0.1; any non-loopback address needs --token-file)")
    p.add_argument("--port", type=int, help=f"TCP port (default {DEFAULT_PORT}, {DEFAULT_MCP_PORT} with --mcp http; "
                                            "0: any free one)")
    p.add_argument("--token-file", help="bearer tokens, one per line, each optionally followed by the user ids "
                                        "it may act for; mode 0600, owned by you (docs/serving.md)")
    p.add_argument("--max-body-bytes", type=int, default=1 << 20,
                   help="largest request body in bytes, 413 past it (default 1 MiB)")
    p.add_argument("--header-timeout", type=float, default=10.0, metavar="S",
                   help="seconds a connection has to send a request's line and headers (408 and closed past it; "
                        "default 10)")
    p.add_argument("--body-timeout", type=float, default=30.0, metavar="S",
                   help="seconds a request has to send its whole body after its headers (408 past it; default 30)")
    p.add_argument("--max-connections", type=int, default=1000, metavar="N",
                   help="connections open at once per process; more get a 503 and are closed (default 1000, "
                        "and never more than the open-files limit allows)")
    p.add_argument("--max-connections-per-client", type=int, default=500, metavar="N",
                   help="connections open at once per process from one remote address; more get a 503 and are "
                        "closed (default 500, at most --max-connections; behind a reverse proxy every client has "
                        "the proxy's address: raise it, and limit clients at the proxy)")
    p.add_argument("--workers", type=int, default=1,
                   help="server processes sharing the port and the memory (default 1; each holds the memory "
                        "in RAM, forked after one load)")
    p.add_argument("--mcp", choices=("stdio", "http"), help="serve the Model Context Protocol instead of the HTTP API")
    p.add_argument("--log-level", choices=("debug", "info", "warning", "error"), default="info",
                   help="server log level (default info)")
    p.add_argument("--no-access-log", action="store_true", help="do not log every request")


def run(args) -> int:
    import os

    from memarch.errors import MemarchError

    # Requests run on worker threads. FAISS's one-thread cap (omp_set_num_threads at its import) holds
    # only for the importing thread in libgomp; a worker thread got a team of 2, and on busy cores a
    # search was 5-7x slower (1.6 -> 8 ms). The environment caps every thread; set before the import.
    os.environ.setdefault("OMP_NUM_THREADS", "1")

    if args.max_body_bytes < 1:
        raise MemarchError(f"--max-body-bytes must be positive, got {args.max_body_bytes}")
    for name in ("header_timeout", "body_timeout"):
        if not getattr(args, name) > 0:
            raise MemarchError(f"--{name.replace('_', '-')} must be a positive number of seconds, got {getattr(args, name)}")
    for name in ("max_connections", "max_connections_per_client"):
        if getattr(args, name) < 1:
            raise MemarchError(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
    if args.workers < 1 or (args.workers > 1 and args.mcp):
        raise MemarchError(f"--workers must be at least 1 (and 1 with --mcp), got {args.workers}")
    if args.port is None:
        args.port = DEFAULT_MCP_PORT if args.mcp else DEFAULT_PORT
    if not 0 <= args.port <= 65535:
        raise MemarchError(f"--port must be 0-65535, got {args.port}")
    from memarch.app.serve.auth import load_token_file

    auth = None
    if args.token_file and args.mcp == "stdio":
        raise MemarchError("--token-file does not apply to --mcp stdio (only the spawning process talks to it)")
    if args.token_file:
        auth = load_token_file(args.token_file)
    if auth is None and args.mcp != "stdio" and not is_loopback(args.host):
        raise MemarchError(f"--host {args.host} is not a loopback address: serving it needs --token-file "
                           "(docs/serving.md)")
    sock = None if args.mcp else bind(args.host, args.port)  # a port in use: one line, before the slow load
    if sock is not None and args.workers > 1:
        # Each worker listens on its own SO_REUSEPORT socket, so the kernel spreads connections
        # evenly (on one shared socket, whichever worker woke first took a burst of them); this one
        # only holds the port, not listening, so that no connection waits in a queue nobody reads.
        port = sock.getsockname()[1]
        sock.close()
        sock = bind(args.host, port, shared=True)
    from memarch import Memory

    try:
        memory = Memory.load(args.program, path=args.path)
    except BaseException:
        if sock is not None:
            sock.close()
        raise
    try:
        if args.mcp:
            from memarch.app.serve.mcp_server import run_mcp

            run_mcp(memory, args.mcp, args.host, args.port, auth=auth, header_timeout_s=args.header_timeout,
                    max_connections=args.max_connections, max_connections_per_client=args.max_connections_per_client)
            return 0
        return _serve_http(memory, sock, auth, args)
    finally:
        memory.close()


def _serve_http(memory, sock: socket.socket, auth, args) -> int:
    from memarch.app.serve.http_api import create_app
    from memarch.app.serve.server import Server, config as server_config

    app = create_app(memory, auth=auth, max_body_bytes=args.max_body_bytes, body_timeout_s=args.body_timeout)
    host, port = sock.getsockname()[:2]
    config = server_config(app, log_level=args.log_level, access_log=not args.no_access_log,
                           header_timeout_s=args.header_timeout, max_connections=args.max_connections,
                           max_connections_per_client=args.max_connections_per_client)
    workers = f"; {args.workers} workers" if args.workers > 1 else ""
    sys.stderr.write(f"memarch serve: {memory.program.architecture.key()} at http://{_url_host(host)}:{port} "
                     f"(docs /docs; {'bearer tokens required' if auth else 'no token: loopback only'}{workers})\n")
    sys.stderr.flush()

    def serve_one() -> int:
        server = Server(config)
        if args.workers == 1:
            server.run(sockets=[sock])
        else:
            own = bind(args.host, port, shared=True)
            own.listen(2048)
            server.run(sockets=[own])
        return 0 if server.started else 1

    if args.workers == 1:
        return serve_one()
    from memarch.cli._serve_workers import serve_forked

    def serve_and_close() -> int:  # in a worker: its own connection closed, as a stopped server does
        try:
            return serve_one()
        finally:
            memory.close()

    return serve_forked(args.workers, serve_and_close)


def is_loopback(host: str) -> bool:
    """Whether every address ``host`` names is a loopback one (``localhost``, 127.x, ::1)."""
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return False
    return bool(infos) and all(ipaddress.ip_address(i[4][0].split("%")[0]).is_loopback for i in infos)


def bind(host: str, port: int, *, shared: bool = False) -> socket.socket:
    """A listening TCP socket on ``host:port``; in use or unbindable: one MemarchError line.
    ``shared``: SO_REUSEPORT, one per worker, not yet listening (the worker listens on its own)."""
    from memarch.errors import MemarchError

    try:
        infos = socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except OSError as exc:
        raise MemarchError(f"--host {host}: {exc.strerror or exc}") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if shared:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        raise MemarchError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    if not shared:
        sock.listen(2048)  # now, so that a second server on this port fails here; requests wait for the load
    return sock


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host
