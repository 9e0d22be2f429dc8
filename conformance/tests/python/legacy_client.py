"""The Python reference SDK's client (`mcp` 2.3.0), pinned to the legacy era (2025-11-25),
against arctern's conformance fixture: every multi round-trip fixture tool completes through
the server's legacy shim, which asks each question as a real server-to-client request.

    python legacy_client.py http URL
    python legacy_client.py stdio COMMAND [ARG...]

Runs every check below in order, printing "ok <check>" for each; the first failure ends the
run with a message on stderr and exit status 1. conformance/tests/python_legacy.rs runs it
and compares the "ok" lines with the full list.
"""

from __future__ import annotations

import sys
from typing import Any

import anyio
import mcp_types as types

from mcp import Client, StdioServerParameters

ROOT = types.Root(uri="file:///srv/legacy", name="legacy")

asked: list[tuple[str, str]] = []
"""(method, message) of every server-to-client request, in order."""


async def on_elicit(ctx: Any, params: types.ElicitRequestFormParams) -> types.ElicitResult:
    asked.append(("elicitation/create", params.message))
    fields = set(params.requested_schema.get("properties", {}))
    answers = {"name": "Ada", "ok": True, "color": "teal", "context": "the legacy shim"}
    for field, value in answers.items():
        if field in fields:
            return types.ElicitResult(action="accept", content={field: value})
    return types.ElicitResult(action="decline")


async def on_sample(ctx: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
    content = params.messages[0].content
    asked.append(("sampling/createMessage", content.text if isinstance(content, types.TextContent) else ""))
    return types.CreateMessageResult(
        role="assistant",
        content=types.TextContent(type="text", text="Paris"),
        model="stub-model",
        stop_reason="endTurn",
    )


async def on_roots(ctx: Any) -> types.ListRootsResult:
    asked.append(("roots/list", ""))
    return types.ListRootsResult(roots=[ROOT])


def text_of(result: Any) -> str:
    blocks = getattr(result, "content", None) or [m.content for m in result.messages]
    return "".join(b.text for b in blocks if isinstance(b, types.TextContent))


def check(name: str, condition: bool, detail: Any) -> None:
    if not condition:
        sys.exit(f"check {name} failed: {detail!r}")
    print(f"ok {name}", flush=True)


async def call(client: Client, tool: str) -> str:
    asked.clear()
    result = await client.call_tool(tool, {})
    if result.is_error:
        sys.exit(f"{tool} failed: {result!r}")
    return text_of(result)


async def run(server: str | StdioServerParameters) -> None:
    async with Client(
        server,
        mode="legacy",
        elicitation_callback=on_elicit,
        sampling_callback=on_sample,
        list_roots_callback=on_roots,
        client_info=types.Implementation(name="python-legacy-client", version="2.3.0"),
    ) as client:
        check("negotiated", client.protocol_version == "2025-11-25", client.protocol_version)

        text = await call(client, "test_input_required_result_elicitation")
        check("elicitation", text == "Hello, Ada!", text)
        check("elicitation-asked", asked == [("elicitation/create", "What is your name?")], asked)

        text = await call(client, "test_input_required_result_sampling")
        check("sampling", text == "The model answered: Paris", text)
        check("sampling-asked", asked == [("sampling/createMessage", "What is the capital of France?")], asked)

        text = await call(client, "test_input_required_result_list_roots")
        check("roots", text == f"Client roots: {ROOT.uri}", text)

        text = await call(client, "test_input_required_result_request_state")
        check("request-state", text == "state-ok: confirmed=true", text)

        text = await call(client, "test_input_required_result_multiple_inputs")
        check("multiple-inputs", text == f"Name: Ada; greeting: Paris; roots: {ROOT.uri}", text)
        check("multiple-inputs-asked", sorted(m for m, _ in asked) == ["elicitation/create", "roots/list", "sampling/createMessage"], asked)

        text = await call(client, "test_input_required_result_multi_round")
        check("multi-round", text == "Ada likes teal", text)
        check(
            "multi-round-asked",
            asked == [
                ("elicitation/create", "Step 1: What is your name?"),
                ("elicitation/create", "Step 2: What is your favorite color, Ada?"),
            ],
            asked,
        )

        text = await call(client, "test_input_required_result_tampered_state")
        check("sealed-state-tool", text == "Confirmed: true", text)

        asked.clear()
        prompt = await client.get_prompt("test_input_required_result_prompt", {})
        check("prompt", text_of(prompt) == "Write a short note using this context: the legacy shim", prompt)

        await client.send_ping()
        check("ping", True, None)


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
