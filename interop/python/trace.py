"""Trace context in `_meta` between the Python reference SDK (`mcp` 2.3.0) and arctern.

    python trace.py server                      stdio server with one tool, current_trace()
    python trace.py client URL TRACE_ID SPAN_ID  calls arctern's echo over Streamable HTTP
                                                 under that span; prints "ok echo"

Only the OpenTelemetry API is installed (mcp depends on it; the SDK is not). With the API's
no-op tracer a span started under a context is a non-recording span carrying that
context's ids, so:

- the client's request span carries the ambient span set here, and the SDK's dispatcher
  injects it into `_meta` (`traceparent`);
- the server's middleware extracts `_meta`, and the tool runs under a span with the
  caller's ids, which current_trace() reports as "TRACE_ID-SPAN_ID" (hex).

arctern's interop test (interop/tests/python_trace.rs) checks both directions.
"""

from __future__ import annotations

import sys

import anyio
import mcp_types as types
from opentelemetry import trace
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

from mcp import Client
from mcp.server.mcpserver import MCPServer

mcp = MCPServer("py-trace", version="2.3.0-interop")


@mcp.tool()
def current_trace() -> str:
    """The trace and span id of the span this call runs under (hex), or "none"."""
    sc = trace.get_current_span().get_span_context()
    if not sc.is_valid:
        return "none"
    return f"{sc.trace_id:032x}-{sc.span_id:016x}"


async def call(url: str, trace_id: str, span_id: str) -> None:
    parent = SpanContext(
        trace_id=int(trace_id, 16),
        span_id=int(span_id, 16),
        is_remote=False,
        trace_flags=TraceFlags(TraceFlags.SAMPLED),
    )
    with trace.use_span(NonRecordingSpan(parent)):
        async with Client(url) as client:
            result = await client.call_tool("echo", {"text": "traced"})
    text = "".join(b.text for b in result.content if isinstance(b, types.TextContent))
    if result.is_error or "traced" not in text:
        sys.exit(f"echo failed: {result!r}")
    print("ok echo", flush=True)


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    if mode == "server":
        mcp.run("stdio")
    elif mode == "client" and len(sys.argv) == 5:
        anyio.run(call, *sys.argv[2:5])
    else:
        sys.exit(f"usage: {sys.argv[0]} server | client URL TRACE_ID SPAN_ID")


if __name__ == "__main__":
    main()
