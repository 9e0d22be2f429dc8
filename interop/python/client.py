"""The Python reference SDK's client (`mcp` 2.3.0) against arctern's interop server.

    python client.py http URL             Streamable HTTP
    python client.py stdio COMMAND [ARG…]  spawns COMMAND as the server, over stdio

Runs every check below in order, printing "ok <check>" for each; the first failure ends the
run with a message on stderr and exit status 1. arctern's interop tests
(interop/tests/python_client.rs) run it and compare the "ok" lines with the full list.
"""

from __future__ import annotations

import sys
from typing import Any

import anyio
import mcp_types as types

from mcp import Client, MCPError, StdioServerParameters

ROOT = types.Root(uri="file:///srv/interop", name="interop")

questions: list[tuple[str, str]] = []
"""(inputRequests key, message) of every elicitation, in order."""


async def on_elicit(ctx: Any, params: types.ElicitRequestFormParams) -> types.ElicitResult:
    questions.append((str(ctx.request_id), params.message))
    fields = set(params.requested_schema.get("properties", {}))
    if "region" in fields:
        return types.ElicitResult(action="accept", content={"region": "eu-west-1"})
    if "gigabytes" in fields:
        return types.ElicitResult(action="accept", content={"gigabytes": 20})
    if "audience" in fields:
        return types.ElicitResult(action="accept", content={"audience": "the board"})
    return types.ElicitResult(action="decline")


async def on_sample(ctx: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
    asked = params.messages[0].content
    assert isinstance(asked, types.TextContent) and "arctern" in asked.text, asked
    return types.CreateMessageResult(
        role="assistant",
        content=types.TextContent(type="text", text="Fast, safe, yours."),
        model="stub-model",
        stop_reason="endTurn",
    )


async def on_roots(ctx: Any) -> types.ListRootsResult:
    return types.ListRootsResult(roots=[ROOT])


def text_of(result: Any) -> str:
    blocks = getattr(result, "content", None) or [m.content for m in result.messages]
    return "".join(b.text for b in blocks if isinstance(b, types.TextContent))


def check(name: str, condition: bool, detail: Any) -> None:
    if not condition:
        sys.exit(f"check {name} failed: {detail!r}")
    print(f"ok {name}", flush=True)


async def run(server: str | StdioServerParameters) -> None:
    async with Client(
        server,
        elicitation_callback=on_elicit,
        sampling_callback=on_sample,
        list_roots_callback=on_roots,
        client_info=types.Implementation(name="python-interop-client", version="2.3.0"),
    ) as client:
        check("negotiated", client.protocol_version == "2026-07-28", client.protocol_version)
        info = client.server_info
        check("server-info", info is not None and info.name == "arctern-interop", info)

        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        expected = {"echo", "add", "provision", "tagline", "show_roots"}
        check("tools-list", expected <= set(tools), sorted(tools))
        check("tools-schema", tools["add"].input_schema.get("required") == ["a", "b"], tools["add"].input_schema)

        result = await client.call_tool("echo", {"text": "héllo, wörld"})
        check("tool-echo", text_of(result) == "héllo, wörld" and not result.is_error, result)
        result = await client.call_tool("add", {"a": 2, "b": 3.5})
        check("tool-add", text_of(result) == "2 + 3.5 = 5.5", result)

        result = await client.call_tool("provision", {"name": "orders"})
        check("elicitation-two-rounds", text_of(result) == "Provisioned orders in eu-west-1 with 20 GB", result)
        check(
            "elicitation-questions",
            questions == [("region", "Which region should the database live in?"), ("size", "How many GB in eu-west-1?")],
            questions,
        )

        result = await client.call_tool("tagline", {"product": "arctern"})
        check("sampling", text_of(result) == "arctern: Fast, safe, yours. (stub-model)", result)

        result = await client.call_tool("show_roots", {})
        check("roots", text_of(result) == f"interop={ROOT.uri}", result)

        prompts = {prompt.name for prompt in (await client.list_prompts()).prompts}
        check("prompts-list", {"greeting", "briefing"} <= prompts, sorted(prompts))
        prompt = await client.get_prompt("greeting", {"name": "Ada"})
        check("prompt", text_of(prompt) == "Say hello to Ada.", prompt)
        questions.clear()
        prompt = await client.get_prompt("briefing", {"topic": "MRTR"})
        check("prompt-input-required", text_of(prompt) == "Write a briefing on MRTR for the board.", prompt)
        check("prompt-question", questions == [("audience", "Who is the briefing for?")], questions)

        templates = (await client.list_resource_templates()).resource_templates
        check("templates-list", [t.uri_template for t in templates] == ["notes://{topic}"], templates)
        read = await client.read_resource("notes://rust")
        contents = read.contents[0]
        check(
            "template-read",
            isinstance(contents, types.TextResourceContents) and contents.text == "Notes about rust.",
            read,
        )

        # An unknown tool is an error (a protocol error or an isError result), never a success.
        try:
            result = await client.call_tool("no_such_tool", {})
        except MCPError as error:
            unknown: Any = error
        else:
            unknown = result if result.is_error else None
        check("unknown-tool", unknown is not None, unknown)


def main() -> None:
    if len(sys.argv) >= 3 and sys.argv[1] == "http":
        server: str | StdioServerParameters = sys.argv[2]
    elif len(sys.argv) >= 3 and sys.argv[1] == "stdio":
        server = StdioServerParameters(command=sys.argv[2], args=sys.argv[3:])
    else:
        sys.exit(f"usage: {sys.argv[0]} http URL | stdio COMMAND [ARG...]")
    anyio.run(run, server)
    print("ok done", flush=True)


if __name__ == "__main__":
    main()
