#!/usr/bin/env python3
"""Sequential tool calls from FastMCP's client (PyPI `fastmcp`, pinned in
requirements.txt) over stdio, timed: the gateway benchmark's G6
(`mcpbox-bench --gateway`) runs it against a server directly and through
`mcpbox serve`.

    fastmcp_echo_calls.py N TOOL COMMAND [ARG...]

Starts COMMAND as a stdio MCP server with FastMCP's `Client`, makes one untimed
call of TOOL with {"message": "hi"} (the first call pays for warm-up), then N
timed sequential calls, and prints one JSON line: {"calls": N, "us_per_call": µs}.
A call that fails or returns an error result exits 1, saying which.
"""

import asyncio
import json
import os
import sys
import time

from fastmcp import Client
from fastmcp.client.transports import StdioTransport


async def main(n: int, tool: str, command: str, args: list[str]) -> None:
    # The whole environment, so that the bench's MCPBOX_CACHE_DIR reaches mcpbox
    # (the SDK passes a child only a few variables by default).
    transport = StdioTransport(command=command, args=args, env=dict(os.environ))
    async with Client(transport) as client:
        arguments = {"message": "hi"}
        first = await client.call_tool(tool, arguments)
        if first.is_error:
            sys.exit(f"fastmcp_echo_calls: {tool} failed: {first.content}")
        start = time.perf_counter()
        for _ in range(n):
            await client.call_tool(tool, arguments)
        elapsed = time.perf_counter() - start
    print(json.dumps({"calls": n, "us_per_call": elapsed * 1e6 / n}))


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit("usage: fastmcp_echo_calls.py N TOOL COMMAND [ARG...]")
    asyncio.run(main(int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4:]))
