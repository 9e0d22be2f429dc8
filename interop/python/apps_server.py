"""An MCP Apps server on the Python reference SDK (`mcp` 2.3.0, `mcp.server.apps`), for
arctern's interop tests (interop/tests/python_apps.rs).

    python apps_server.py    Streamable HTTP on 127.0.0.1, a free port; prints
                             "listening http://127.0.0.1:PORT/mcp" on stdout once it accepts

Stops when stdin closes. What it serves:
  view   ui://py-apps/clock.html (text/html;profile=mcp-app), with a CSP, a permission and
         a border preference in _meta.ui
  tools  clock() - points at the view; its text says whether the client declared Apps -,
         tick() - the same view, visibility ["app"]
"""

from __future__ import annotations

import socket
import sys
import threading

import anyio
import uvicorn

from mcp.server.apps import Apps, ResourceCsp, ResourcePermissions, client_supports_apps
from mcp.server.mcpserver import Context, MCPServer

VIEW = "ui://py-apps/clock.html"
HTML = "<!doctype html><html><body><h1 id=time>clock</h1></body></html>"

apps = Apps()


@apps.tool(resource_uri=VIEW, description="The time, shown in the clock view.")
def clock(ctx: Context) -> str:
    return "12:00 UTC (in the clock view)" if client_supports_apps(ctx) else "12:00 UTC"


@apps.tool(resource_uri=VIEW, visibility=["app"], description="Advances the clock (for the view).")
def tick() -> str:
    return "ticked"


apps.add_html_resource(
    VIEW,
    HTML,
    name="clock",
    title="Clock",
    csp=ResourceCsp(connect_domains=["https://time.example.com"], resource_domains=["https://cdn.example.com"]),
    permissions=ResourcePermissions(clipboard_write={}),
    prefers_border=True,
)

mcp = MCPServer("py-apps", version="2.3.0-interop", extensions=[apps])


def exit_when_stdin_closes(stop: threading.Event) -> None:
    try:
        while sys.stdin.buffer.read(4096):
            pass
    finally:
        stop.set()


async def serve_http() -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(mcp.streamable_http_app(host="127.0.0.1"), log_level="warning"))
    stop = threading.Event()
    threading.Thread(target=exit_when_stdin_closes, args=(stop,), daemon=True).start()

    async def announce_and_watch() -> None:
        while not server.started:
            await anyio.sleep(0.01)
        print(f"listening http://127.0.0.1:{port}/mcp", flush=True)
        while not stop.is_set():
            await anyio.sleep(0.05)
        server.should_exit = True

    async with anyio.create_task_group() as tg:
        tg.start_soon(announce_and_watch)
        await server.serve(sockets=[sock])
        tg.cancel_scope.cancel()


if __name__ == "__main__":
    anyio.run(serve_http)
