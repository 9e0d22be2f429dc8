"""The Python reference SDK's client (`mcp` 2.3.0) books a hotel on arctern's demo server
(`arctern serve`), whose `book_hotel` tool asks a choice computed at run time.

    python book_hotel.py URL auto      2026-07-28 (server/discover, multi round-trip results)
    python book_hotel.py URL legacy    a 2025 session (initialize; the server asks with
                                       elicitation/create requests, through arctern's legacy shim)

The first answer names a hotel that was not offered: the server must ask again, with the
reason in the message; the second answer books. Runs every check below in order, printing
"ok <check>" for each; the first failure ends the run with a message on stderr and exit status
1. arctern's interop tests (interop/tests/python_book_hotel.rs) compare the "ok" lines with the
full list.
"""

from __future__ import annotations

import sys
from typing import Any

import anyio
import mcp_types as types

from mcp import Client

OSLO = [
    {"const": "osl-fjord", "title": "Fjord Hotel"},
    {"const": "osl-aurora", "title": "Aurora Inn"},
    {"const": "osl-opera", "title": "Opera Lodge"},
]

asked: list[types.ElicitRequestFormParams] = []
"""Every form the server asked, in order."""


async def on_elicit(ctx: Any, params: types.ElicitRequestFormParams) -> types.ElicitResult:
    asked.append(params)
    # First a hotel of another city, then one of the hotels offered.
    hotel = "lis-avenida" if len(asked) == 1 else "osl-aurora"
    return types.ElicitResult(action="accept", content={"hotel": hotel})


def text_of(result: Any) -> str:
    return "".join(b.text for b in result.content if isinstance(b, types.TextContent))


def check(name: str, condition: bool, detail: Any) -> None:
    if not condition:
        sys.exit(f"check {name} failed: {detail!r}")
    print(f"ok {name}", flush=True)


async def run(url: str, mode: str) -> None:
    async with Client(
        url,
        mode=mode,
        elicitation_callback=on_elicit,
        client_info=types.Implementation(name="python-book-hotel", version="2.3.0"),
    ) as client:
        modern = client.protocol_version == "2026-07-28"
        check("negotiated", modern == (mode == "auto"), client.protocol_version)

        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        hotel_tool = tools.get("book_hotel")
        check(
            "tools-list",
            hotel_tool is not None and hotel_tool.input_schema.get("required") == ["city"],
            sorted(tools),
        )

        result = await client.call_tool("book_hotel", {"city": "Oslo"})
        check("booked", text_of(result) == "Booked Aurora Inn in Oslo." and not result.is_error, result)
        messages = [p.message for p in asked]
        check("asked-twice", len(asked) == 2, messages)
        hotel = asked[0].requested_schema["properties"]["hotel"]
        check("hotels-offered", hotel.get("oneOf") == OSLO and asked[0].requested_schema.get("required") == ["hotel"], hotel)
        check(
            "refused-with-reason",
            messages
            == [
                "Which hotel in Oslo?",
                'Which hotel in Oslo?\n\nThe previous answer was not accepted: hotel: "lis-avenida" is not one of the options.',
            ],
            messages,
        )

        asked.clear()
        result = await client.call_tool("book_hotel", {"city": "Paris"})
        check(
            "unknown-city",
            result.is_error is True and "Lisbon, Oslo, Kyoto" in text_of(result) and not asked,
            (result, asked),
        )


def main() -> None:
    if len(sys.argv) != 3 or sys.argv[2] not in ("auto", "legacy"):
        sys.exit(f"usage: {sys.argv[0]} URL auto|legacy")
    anyio.run(run, sys.argv[1], sys.argv[2])
    print("ok done", flush=True)


if __name__ == "__main__":
    main()
