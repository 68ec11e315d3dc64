"""A small MCP server built with the official Python SDK (PyPI `mcp`), over stdio.

mcpbox's integration tests run it as a real, independently written peer:

    tests/peers/.venv/bin/python tests/peers/fastmcp_server.py

Tools:
    greet(name: str) -> str        "Hello, NAME!"
    add(a: int, b: int) -> int     the sum (text content and structuredContent {"result": sum})
    fail(message: str) -> str      always raises ToolError: the result has isError: true and
                                   the text "Error executing tool fail: MESSAGE"

The pinned SDK is `mcp` 2.x, where FastMCP is called MCPServer
(`mcp.server.mcpserver`); with `mcp` 1.x the same code runs on FastMCP
(`mcp.server.fastmcp`). Both speak stdio as newline-delimited JSON-RPC.
"""

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


if __name__ == "__main__":
    server.run("stdio")
