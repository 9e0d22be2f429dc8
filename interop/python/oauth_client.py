"""The Python reference SDK's client (`mcp` 2.3.0) with its OAuth support against arctern's
protected interop server (`interop-server --http-auth`).

    python oauth_client.py URL

The server answers 401 until the client signs in at the in-process test authorization
server: the client discovers it (protected resource metadata, then the authorization server
metadata), registers, runs the authorization code flow with PKCE — headless: the test
authorization server approves at once with a 302, whose Location carries the code — and
calls tools with its token. `provision` needs one more scope than the first token has, so
the first call gets 403 `insufficient_scope` and the client steps up; then it answers the
tool's two questions (a multi round-trip flow) with the new token.

Prints "ok <check>" per check; the first failure ends the run with status 1.
"""

from __future__ import annotations

import sys
from typing import Any
from urllib.parse import parse_qs, urlparse

import anyio
import httpx2
import mcp_types as types

from mcp import Client
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider, TokenStorage
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken


class Memory(TokenStorage):
    """Tokens and the registration, kept for the run."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


class Headless:
    """The user agent: fetches the authorization URL without following the redirect and
    reads the code from its Location (nothing listens on the redirect URI)."""

    def __init__(self) -> None:
        self.result: AuthorizationCodeResult | None = None
        self.scopes: list[str] = []

    async def redirect(self, url: str) -> None:
        query = parse_qs(urlparse(url).query)
        self.scopes.append(query.get("scope", [""])[0])
        async with httpx2.AsyncClient(follow_redirects=False) as http:
            response = await http.get(url)
        if response.status_code not in (302, 303):
            sys.exit(f"authorize answered {response.status_code}: {response.text}")
        back = parse_qs(urlparse(response.headers["location"]).query)
        self.result = AuthorizationCodeResult(
            code=back["code"][0],
            state=back.get("state", [None])[0],
            iss=back.get("iss", [None])[0],
        )

    async def callback(self) -> AuthorizationCodeResult:
        assert self.result is not None, "no authorization happened"
        result, self.result = self.result, None
        return result


questions: list[str] = []


async def on_elicit(ctx: Any, params: types.ElicitRequestFormParams) -> types.ElicitResult:
    questions.append(params.message)
    fields = set(params.requested_schema.get("properties", {}))
    if "region" in fields:
        return types.ElicitResult(action="accept", content={"region": "eu-west-1"})
    if "gigabytes" in fields:
        return types.ElicitResult(action="accept", content={"gigabytes": 20})
    return types.ElicitResult(action="decline")


def text_of(result: Any) -> str:
    return "".join(b.text for b in result.content if isinstance(b, types.TextContent))


def check(name: str, condition: bool, detail: Any) -> None:
    if not condition:
        sys.exit(f"check {name} failed: {detail!r}")
    print(f"ok {name}", flush=True)


async def run(url: str) -> None:
    # Without a token the server refuses, with the challenge that starts discovery.
    async with httpx2.AsyncClient() as http:
        refused = await http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {}})
    challenge = refused.headers.get("www-authenticate", "")
    check("unauthorized", refused.status_code == 401 and "resource_metadata=" in challenge, (refused.status_code, challenge))

    storage = Memory()
    agent = Headless()
    provider = OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            client_name="python-interop-oauth-client",
            redirect_uris=["http://localhost:3000/callback"],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
        ),
        storage=storage,
        redirect_handler=agent.redirect,
        callback_handler=agent.callback,
    )
    async with httpx2.AsyncClient(auth=provider) as http:
        async with Client(
            streamable_http_client(url, http_client=http),
            elicitation_callback=on_elicit,
            client_info=types.Implementation(name="python-interop-oauth-client", version="2.3.0"),
        ) as client:
            check("signed-in", storage.tokens is not None and storage.client is not None, storage.tokens)
            check("negotiated", client.protocol_version == "2026-07-28", client.protocol_version)
            tools = {tool.name for tool in (await client.list_tools()).tools}
            check("tools-list", {"whoami", "provision"} <= tools, sorted(tools))
            result = await client.call_tool("whoami", {})
            check("whoami", text_of(result).startswith("http://127.0.0.1:") and not result.is_error, result)

            result = await client.call_tool("provision", {"name": "orders"})
            check("step-up", len(agent.scopes) == 2 and "db:write" in agent.scopes[1].split(), agent.scopes)
            check("provision", text_of(result) == "Provisioned orders in eu-west-1 with 20 GB", result)
            check(
                "provision-questions",
                questions == ["Which region should the database live in?", "How many GB in eu-west-1?"],
                questions,
            )


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit(f"usage: {sys.argv[0]} URL")
    anyio.run(run, sys.argv[1])
    print("ok done", flush=True)


if __name__ == "__main__":
    main()
