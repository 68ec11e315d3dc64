"""An MCP client built with the official Python SDK (PyPI `mcp`), either era.

mcpbox's gateway tests run it against `mcpbox serve`:

    tests/peers/.venv/bin/python tests/peers/py_client.py [--era legacy|2026-07-28]
        [--token TOKEN] (--http URL | --stdio COMMAND ARGS...) [--call NAME JSON]...

--token sends `Authorization: Bearer TOKEN` over HTTP. It connects, lists every tool (following nextCursor), makes each --call in turn and
prints one JSON line: {"protocolVersion", "tools": [names], "calls": [CallToolResult]}.
"""

import asyncio
import json
import sys

from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


def parse(argv):
    era, http, token, stdio, calls = "legacy", None, None, None, []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--era":
            era = argv[i + 1]
            i += 2
        elif a == "--http":
            http = argv[i + 1]
            i += 2
        elif a == "--token":
            token = argv[i + 1]
            i += 2
        elif a == "--call":
            calls.append((argv[i + 1], json.loads(argv[i + 2])))
            i += 3
        elif a == "--stdio":
            stdio = argv[i + 1 :]
            break
        else:
            raise SystemExit(f"unknown argument {a}")
    return era, http, token, stdio, calls


async def main():
    era, http, token, stdio, calls = parse(sys.argv[1:])
    if http and token:
        headers = {"Authorization": f"Bearer {token}"}
        server = streamable_http_client(http, http_client=create_mcp_http_client(headers=headers))
    elif http:
        server = http
    else:
        server = StdioServerParameters(command=stdio[0], args=stdio[1:])
    async with Client(server, mode=era) as client:
        tools, cursor = [], None
        while True:
            page = await client.list_tools(cursor=cursor)
            tools.extend(t.name for t in page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        results = []
        for name, args in calls:
            result = await client.call_tool(name, args)
            results.append(result.model_dump(mode="json", by_alias=True, exclude_none=True))
        print(json.dumps({"protocolVersion": client.protocol_version, "tools": tools, "calls": results}))


asyncio.run(main())
