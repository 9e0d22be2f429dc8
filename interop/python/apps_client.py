"""The Python reference SDK's client (`mcp` 2.3.0) declares MCP Apps and reads the view of
arctern's demo server (`arctern serve`): the extension, the tool's `_meta.ui`, the view's
listing and content.

    python apps_client.py URL auto      2026-07-28 (server/discover, per-request capabilities)
    python apps_client.py URL legacy    a 2025 session (initialize)

Prints "ok <check>" per check; the first failure exits with status 1 and a message on
stderr. arctern's interop tests (interop/tests/python_apps.rs) compare the "ok" lines.
"""

from __future__ import annotations

import sys
from typing import Any

import anyio
import mcp_types as types

from mcp import Client
from mcp.client import advertise
from mcp.server.apps import APP_MIME_TYPE, EXTENSION_ID

VIEW = "ui://arctern-demo/echo.html"


def check(name: str, condition: bool, detail: Any) -> None:
    if not condition:
        sys.exit(f"check {name} failed: {detail!r}")
    print(f"ok {name}", flush=True)


async def run(url: str, mode: str) -> None:
    async with Client(
        url,
        mode=mode,
        extensions=[advertise(EXTENSION_ID, {"mimeTypes": [APP_MIME_TYPE]})],
        client_info=types.Implementation(name="python-apps-client", version="2.3.0"),
    ) as client:
        modern = client.protocol_version == "2026-07-28"
        check("negotiated", modern == (mode == "auto"), client.protocol_version)
        caps = client.server_capabilities.model_dump(by_alias=True, exclude_none=True)
        check("extension", EXTENSION_ID in caps.get("extensions", {}), caps)

        tools = {t.name: t for t in (await client.list_tools()).tools}
        meta = tools["show_echo"].meta or {} if "show_echo" in tools else {}
        check(
            "tool-meta",
            meta.get("ui", {}).get("resourceUri") == VIEW and meta.get("ui/resourceUri") == VIEW,
            meta,
        )

        listed = [r for r in (await client.list_resources()).resources if r.uri == VIEW]
        check(
            "view-listed",
            len(listed) == 1
            and listed[0].mime_type == APP_MIME_TYPE
            and (listed[0].meta or {}).get("ui") == {"prefersBorder": True},
            listed,
        )

        read = await client.read_resource(VIEW)
        item = read.contents[0]
        check(
            "view-read",
            item.mime_type == APP_MIME_TYPE
            and isinstance(item, types.TextResourceContents)
            and item.text.lstrip().lower().startswith("<!doctype html>")
            and (item.meta or {}).get("ui") == {"prefersBorder": True},
            item,
        )

        result = await client.call_tool("show_echo", {"text": "héllo"})
        texts = [b.text for b in result.content if isinstance(b, types.TextContent)]
        check("text-result", texts == ["héllo"] and not result.is_error, result)


def main() -> None:
    if len(sys.argv) != 3 or sys.argv[2] not in ("auto", "legacy"):
        sys.exit(f"usage: {sys.argv[0]} URL auto|legacy")
    anyio.run(run, sys.argv[1], sys.argv[2])


if __name__ == "__main__":
    main()
