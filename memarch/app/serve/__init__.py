"""Serving one `memarch.Memory` to agents over the network: an HTTP API (`http_api.create_app`,
FastAPI, with bearer tokens scoped to user ids in `auth` and the body limit in `guard`) and an MCP
server (`mcp_server.run_mcp`). ``memarch serve`` (memarch/cli/serve.py) runs either.

May import ``memarch.app`` and below; nothing else in ``memarch.app`` imports it. The modules
import FastAPI / the MCP SDK at their top, so this package's ``__init__`` imports none of them."""
