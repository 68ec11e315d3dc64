"""A small MCP server built with the official Python SDK (PyPI `mcp`), over stdio.

mcpbox's integration tests run it as a real, independently written peer:

    tests/peers/.venv/bin/python tests/peers/fastmcp_server.py

Tools:
    greet(name: str) -> str        "Hello, NAME!"
    add(a: int, b: int) -> int     the sum (text content and structuredContent {"result": sum})
    fail(message: str) -> str      always raises ToolError: the result has isError: true and
                                   the text "Error executing tool fail: MESSAGE"

Resources: `py://readme` (text "py-peer readme"), the template `py://item/{id}`
(text "item ID"). Prompts: `review(code)`, one user message "Review: CODE".

With `--http PORT` it serves Streamable HTTP on 127.0.0.1:PORT at `/mcp` instead
(port 0: the OS picks one, and uvicorn's stderr line "Uvicorn running on
http://127.0.0.1:PORT" says which).

The pinned SDK is `mcp` 2.x, where FastMCP is called MCPServer
(`mcp.server.mcpserver`); with `mcp` 1.x the same code runs on FastMCP
(`mcp.server.fastmcp`). Both speak stdio as newline-delimited JSON-RPC.
"""

import sys

try:  # mcp >= 2
    from mcp.server.mcpserver import MCPServer as Server
    from mcp.server.mcpserver.exceptions import ToolError
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import FastMCP as Server
    from mcp.server.fastmcp.exceptions import ToolError

server = Server("fastmcp-peer")


@server.tool()
def greet(name: str) -> str:
    """Greets someone by name."""
    return f"Hello, {name}!"


@server.tool()
def add(a: int, b: int) -> int:
    """Adds two integers."""
    return a + b


@server.tool()
def fail(message: str) -> str:
    """Always fails with the given message (the result has isError: true)."""
    # ToolError is the SDK's "deliberate failure": its message reaches the client.
    raise ToolError(message)


@server.resource("py://readme", mime_type="text/plain")
def readme() -> str:
    """The peer's readme."""
    return "py-peer readme"


@server.resource("py://item/{id}", mime_type="text/plain")
def item(id: str) -> str:
    """One item by id."""
    return f"item {id}"


@server.prompt()
def review(code: str) -> str:
    """Asks for a code review."""
    return f"Review: {code}"


def main(argv):
    if not argv:
        server.run("stdio")
    elif len(argv) == 2 and argv[0] == "--http" and argv[1].isdigit():
        # Streamable HTTP on loopback at /mcp. Port 0 lets the OS choose; uvicorn then
        # logs the bound address ("Uvicorn running on http://127.0.0.1:PORT") to stderr.
        port = int(argv[1])
        try:
            server.run("streamable-http", host="127.0.0.1", port=port)
        except TypeError:  # mcp 1.x: host and port are settings
            server.settings.host, server.settings.port = "127.0.0.1", port
            server.run("streamable-http")
    else:
        sys.exit("usage: fastmcp_server.py [--http PORT]")


if __name__ == "__main__":
    main(sys.argv[1:])
