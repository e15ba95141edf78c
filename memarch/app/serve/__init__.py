"""Serving one `memarch.Memory` to agents over the network: an HTTP API (`http_api.create_app`,
FastAPI, with its hot routes for search and add in `hot_routes`) and an MCP server
(`mcp_server.run_mcp`), both adapters over one serving core. ``memarch serve`` (memarch/cli/serve.py)
runs either.

The core, written once: `core.ServingCore` (each request's `Memory` call under the thread policy of
``memarch.app.threads``, its answer), `checks` (user id, scoped token, query, JSON body), `errors`
(the ``{"error"}`` body and the exception -> status mapping). Around it: `auth` (the token file),
`guard` (authentication and the body limit before any route), `server` (uvicorn's protocol with
deadlines and a connection cap), `schemas` (the request and response bodies).

May import ``memarch.app`` and below; nothing else in ``memarch.app`` imports it. The modules
import FastAPI / the MCP SDK at their top, so this package's ``__init__`` imports none of them."""
