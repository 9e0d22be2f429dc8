"""An MCP server on the Python reference SDK (`mcp` 2.3.0), for arctern's interop tests.

    python server.py http     Streamable HTTP on 127.0.0.1, a free port; prints
                              "listening http://127.0.0.1:PORT/mcp" on stdout once it accepts
    python server.py stdio    newline-delimited JSON-RPC on stdin/stdout

Both modes stop when stdin closes, so a test that goes away takes the server with it.

What it serves (the Rust client's tests in interop/tests/python_server.rs call each):
  tools      echo(text), add(a, b), provision(name) - asks the region, then (a second
             round) the size in that region -, tagline(product) - samples the client's
             LLM -, show_roots() - lists the client's roots
  prompts    greeting(name), briefing(topic) - asks who it is for
  template   notes://{topic}
"""

from __future__ import annotations

import socket
import sys
import threading
from typing import Annotated

import anyio
import mcp_types as types
import uvicorn
from pydantic import BaseModel, Field

from mcp.server.mcpserver import Context, Elicit, ListRoots, MCPServer, Resolve, Sample

mcp = MCPServer("py-interop", version="2.3.0-interop")


@mcp.tool()
def echo(text: str) -> str:
    """Returns its text."""
    return text


@mcp.tool()
def add(a: float, b: float) -> str:
    """Adds two numbers."""
    return f"{a} + {b} = {a + b}"


class Region(BaseModel):
    region: str = Field(description="A cloud region, such as eu-west-1")


class Size(BaseModel):
    gigabytes: int = Field(description="Disk size in GB")


def ask_region() -> Elicit[Region]:
    return Elicit("Which region should the database live in?", Region)


def ask_size(region: Annotated[Region, Resolve(ask_region)]) -> Elicit[Size]:
    # Depends on the region, so it can only be asked in the round after it.
    return Elicit(f"How many GB in {region.region}?", Size)


@mcp.tool()
def provision(
    name: str,
    region: Annotated[Region, Resolve(ask_region)],
    size: Annotated[Size, Resolve(ask_size)],
) -> str:
    """Provisions a database; asks for its region, then for its size."""
    return f"Provisioned {name} in {region.region} with {size.gigabytes} GB"


def ask_tagline(product: str) -> Sample:
    message = types.SamplingMessage(
        role="user", content=types.TextContent(type="text", text=f"Suggest a tagline for {product}.")
    )
    return Sample([message], max_tokens=50)


@mcp.tool()
def tagline(product: str, completion: Annotated[types.CreateMessageResult, Resolve(ask_tagline)]) -> str:
    """Writes a tagline by asking the client's LLM."""
    content = completion.content
    text = content.text if isinstance(content, types.TextContent) else str(content)
    return f"{product}: {text} ({completion.model})"


def get_roots() -> ListRoots:
    return ListRoots()


@mcp.tool()
def show_roots(roots: Annotated[types.ListRootsResult, Resolve(get_roots)]) -> str:
    """Lists the client's roots."""
    return "\n".join(f"{root.name or ''}={root.uri}" for root in roots.roots)


@mcp.prompt()
def greeting(name: str) -> str:
    """A greeting for someone."""
    return f"Say hello to {name}."


@mcp.prompt()
def briefing(topic: str, ctx: Context) -> str | types.InputRequiredResult:
    """A briefing on a topic; asks who it is for."""
    answer = (ctx.input_responses or {}).get("audience")
    if not isinstance(answer, types.ElicitResult) or answer.content is None:
        schema = {"type": "object", "properties": {"audience": {"type": "string"}}, "required": ["audience"]}
        question = types.ElicitRequest(
            params=types.ElicitRequestFormParams(message="Who is the briefing for?", requested_schema=schema)
        )
        return types.InputRequiredResult(input_requests={"audience": question})
    return f"Write a briefing on {topic} for {answer.content['audience']}."


@mcp.resource("notes://{topic}", mime_type="text/plain")
def notes(topic: str) -> str:
    """Notes about a topic."""
    return f"Notes about {topic}."


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
    app = mcp.streamable_http_app(host="127.0.0.1")
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))

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


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    if mode == "http":
        anyio.run(serve_http)
    elif mode == "stdio":
        mcp.run("stdio")
    else:
        sys.exit(f"usage: {sys.argv[0]} http|stdio")


if __name__ == "__main__":
    main()
