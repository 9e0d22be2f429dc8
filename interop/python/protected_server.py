"""A protected MCP server on the Python reference SDK (`mcp` 2.3.0), for arctern's OAuth
client in the interop tests.

    python protected_server.py ISSUER

Streamable HTTP on 127.0.0.1, a free port; prints "listening http://127.0.0.1:PORT/mcp"
once it accepts, and stops when stdin closes. The SDK's resource-server support protects it
(protected resource metadata, 401 challenges, `mcp:tools` required); tokens are checked
by RFC 7662 introspection at ISSUER (arctern's test authorization server, run by the test),
whose answer must be active and name this server as audience.

Tools: whoami() - the token's subject and scopes -, provision(name) - asks the region,
then (a second round) the size in that region.
"""

from __future__ import annotations

import socket
import sys
import threading
from typing import Annotated, Any

import anyio
import httpx2
import uvicorn

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer, Resolve

# The questions of provision, shared with the plain interop server (this folder is on the path).
from server import Region, Size, ask_region, ask_size

# The test authorization server's introspection client (arctern::testing::INTROSPECTION_CLIENT_ID).
INTROSPECTION_CLIENT = ("resource-server", "resource-server-secret")
SCOPE = "mcp:tools"


class Introspection:
    """An RFC 7662 token verifier: active, and issued for this resource."""

    def __init__(self, issuer: str, resource: str) -> None:
        self.endpoint = f"{issuer}/introspect"
        self.resource = resource

    async def verify_token(self, token: str) -> AccessToken | None:
        async with httpx2.AsyncClient() as http:
            response = await http.post(self.endpoint, data={"token": token}, auth=INTROSPECTION_CLIENT)
        if response.status_code != 200:
            print(f"introspection answered {response.status_code}: {response.text}", file=sys.stderr)
            return None
        claims: dict[str, Any] = response.json()
        audience = claims.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        if not claims.get("active") or self.resource not in audiences:
            print(f"refused a token: {claims}", file=sys.stderr)
            return None
        return AccessToken(
            token=token,
            client_id=claims.get("client_id", ""),
            scopes=str(claims.get("scope", "")).split(),
            expires_at=claims.get("exp"),
            resource=self.resource,
            subject=claims.get("sub"),
            claims=claims,
        )


def build(issuer: str, resource: str) -> MCPServer:
    mcp = MCPServer(
        "py-protected",
        version="2.3.0-interop",
        token_verifier=Introspection(issuer, resource),
        auth=AuthSettings(
            issuer_url=issuer,
            resource_server_url=resource,
            required_scopes=[SCOPE],
            validate_token_resource=True,
        ),
    )

    @mcp.tool()
    def whoami() -> str:
        """Who the access token says is calling."""
        token = get_access_token()
        if token is None:
            return "nobody"
        return f"{token.subject} {' '.join(token.scopes)}"

    @mcp.tool()
    def provision(
        name: str,
        region: Annotated[Region, Resolve(ask_region)],
        size: Annotated[Size, Resolve(ask_size)],
    ) -> str:
        """Provisions a database; asks for its region, then for its size."""
        return f"Provisioned {name} in {region.region} with {size.gigabytes} GB"

    return mcp


def exit_when_stdin_closes(stop: threading.Event) -> None:
    try:
        while sys.stdin.buffer.read(4096):
            pass
    finally:
        stop.set()


async def serve(issuer: str) -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/mcp"
    app = build(issuer, url).streamable_http_app(host="127.0.0.1")
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))

    stop = threading.Event()
    threading.Thread(target=exit_when_stdin_closes, args=(stop,), daemon=True).start()

    async def announce_and_watch() -> None:
        while not server.started:
            await anyio.sleep(0.01)
        print(f"listening {url}", flush=True)
        while not stop.is_set():
            await anyio.sleep(0.05)
        server.should_exit = True

    async with anyio.create_task_group() as tg:
        tg.start_soon(announce_and_watch)
        await server.serve(sockets=[sock])
        tg.cancel_scope.cancel()


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit(f"usage: {sys.argv[0]} ISSUER")
    anyio.run(serve, sys.argv[1])


if __name__ == "__main__":
    main()
