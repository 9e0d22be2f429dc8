"""The Python reference server of the benchmark (PyPI ``mcp`` 2.3.0, ``MCPServer``).

Same contract as the Rust servers:

* ``echo {text}`` returns ``text``;
* ``confirm {text}`` returns, in round 1, ``input_required`` with one form elicitation under
  the key ``confirm`` (schema ``{ok: boolean}``) and a ``requestState``, which
  ``MCPServer`` seals by default (AES-256-GCM with a per-process key, bound to the method,
  tool, arguments and audience); the retry with the accepted answer and the echoed state
  returns ``text``;
* ``--many`` registers ``echo`` and 99 generated tools with three arguments each instead.

Usage: ``server.py [--many] (--port N | --stdio)``. HTTP serves ``/mcp`` on 127.0.0.1 with
plain JSON replies (``json_response=True``), stateless.
"""

from __future__ import annotations

import argparse
import inspect
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ElicitRequest, ElicitRequestFormParams, InputRequiredResult

EXTRA_TOOLS = 99
CONFIRM_STATE = "confirm/1"
CONFIRM_SCHEMA = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}},
    "required": ["ok"],
}


async def echo(text: str) -> str:
    """Returns its text."""
    return text


def _accepted(answer: Any) -> bool:
    """Whether an elicitation answer (a model or a plain mapping) accepts with ok = true."""
    if answer is None:
        return False
    if isinstance(answer, dict):
        action, content = answer.get("action"), answer.get("content")
    else:
        action, content = getattr(answer, "action", None), getattr(answer, "content", None)
    return action == "accept" and isinstance(content, dict) and content.get("ok") is True


async def confirm(text: str, ctx: Context) -> str | InputRequiredResult:
    """Returns its text after the user confirms."""
    if ctx.request_state is None:
        question = ElicitRequest(
            params=ElicitRequestFormParams(message="Confirm?", requested_schema=CONFIRM_SCHEMA)
        )
        return InputRequiredResult(input_requests={"confirm": question}, request_state=CONFIRM_STATE)
    # The state arrives verified and unsealed; anything else never reaches this body.
    answer = (ctx.input_responses or {}).get("confirm")
    if ctx.request_state == CONFIRM_STATE and _accepted(answer):
        return text
    return "Not confirmed."


def _generated_tool(i: int):
    """Tool number ``i`` of the 99 extra tools: three distinct typed arguments."""
    n = f"{i:03d}"
    label, count, enabled = f"label_{n}", f"count_{n}", f"enabled_{n}"

    async def tool(**arguments: Any) -> str:
        return f"tool_{n}: {arguments[label]} {arguments[count]} {str(arguments[enabled]).lower()}"

    kind = inspect.Parameter.KEYWORD_ONLY
    tool.__signature__ = inspect.Signature(
        [
            inspect.Parameter(label, kind, annotation=str),
            inspect.Parameter(count, kind, annotation=int),
            inspect.Parameter(enabled, kind, annotation=bool),
        ],
        return_annotation=str,
    )
    tool.__annotations__ = {label: str, count: int, enabled: bool, "return": str}
    tool.__name__ = tool.__qualname__ = f"tool_{n}"
    return tool


def build(many: bool) -> MCPServer:
    server = MCPServer("python-bench", version="0.1.0", log_level="WARNING")
    server.add_tool(echo, name="echo", description="Returns its text.")
    if many:
        for i in range(1, EXTRA_TOOLS + 1):
            server.add_tool(
                _generated_tool(i),
                name=f"tool_{i:03d}",
                description=f"Generated tool {i} of {EXTRA_TOOLS}: formats its three arguments.",
            )
    else:
        server.add_tool(confirm, name="confirm", description="Returns its text after the user confirms.")
    return server


def main() -> None:
    parser = argparse.ArgumentParser(description="Python reference benchmark server")
    parser.add_argument("--port", type=int)
    parser.add_argument("--stdio", action="store_true")
    parser.add_argument("--many", action="store_true")
    args = parser.parse_args()
    server = build(args.many)
    if args.stdio or args.port is None:
        server.run(transport="stdio")
    else:
        server.run(
            transport="streamable-http",
            host="127.0.0.1",
            port=args.port,
            json_response=True,
            stateless_http=True,
        )


if __name__ == "__main__":
    main()
