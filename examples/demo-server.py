#!/usr/bin/env python3
"""A tiny MCP server over stdio, using only the Python standard library.

The root .mcp.json configures it as server `demo`, so from the repository root:

    cargo run --release -p mcpbox-cli -- call mcp__demo__echo '{"text":"hi"}'

Tools: echo {text} -> text, add {a, b} -> the sum, reverse {text} -> text reversed,
divide {a, b} -> the quotient (dividing by zero is a tool error: a result with isError).

MCP over stdio is newline-delimited JSON-RPC 2.0: one JSON message per line on
stdout; anything for humans goes to stderr.
"""

import json
import sys

SERVER_INFO = {"name": "mcpbox-demo", "version": "0.1.0"}
SUPPORTED_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")

TOOLS = [
    {
        "name": "echo",
        "description": "Returns the text it is given.",
        "inputSchema": {
            "type": "object",
            "properties": {"text": {"type": "string", "description": "Text to echo."}},
            "required": ["text"],
        },
    },
    {
        "name": "add",
        "description": "Adds two numbers.",
        "inputSchema": {
            "type": "object",
            "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
            "required": ["a", "b"],
        },
        "outputSchema": {
            "type": "object",
            "properties": {"sum": {"type": "number"}},
            "required": ["sum"],
        },
    },
    {
        "name": "divide",
        "description": "Divides a by b; dividing by zero is a tool error.",
        "inputSchema": {
            "type": "object",
            "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
            "required": ["a", "b"],
        },
    },
    {
        "name": "reverse",
        "description": "Returns the text reversed.",
        "inputSchema": {
            "type": "object",
            "properties": {"text": {"type": "string", "description": "Text to reverse."}},
            "required": ["text"],
        },
    },
]


class ToolError(Exception):
    """A failure reported to the caller as a tool result with isError."""


def text_argument(arguments, name):
    value = arguments.get(name)
    if not isinstance(value, str):
        raise ToolError(f"`{name}` must be a string")
    return value


def number_argument(arguments, name):
    value = arguments.get(name)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ToolError(f"`{name}` must be a number")
    return value


def call_tool(name, arguments):
    if name == "echo":
        return {"content": [{"type": "text", "text": text_argument(arguments, "text")}]}
    if name == "add":
        total = number_argument(arguments, "a") + number_argument(arguments, "b")
        return {
            "content": [{"type": "text", "text": json.dumps(total)}],
            "structuredContent": {"sum": total},
        }
    if name == "divide":
        divisor = number_argument(arguments, "b")
        if divisor == 0:
            raise ToolError("cannot divide by zero")
        return {"content": [{"type": "text", "text": json.dumps(number_argument(arguments, "a") / divisor)}]}
    if name == "reverse":
        return {"content": [{"type": "text", "text": text_argument(arguments, "text")[::-1]}]}
    raise KeyError(name)


def handle(message):
    """Returns the response to one message, or None when none is due."""
    method = message.get("method")
    if "id" not in message or method is None:
        return None  # a notification, or a response to a request we never send
    request_id = message["id"]
    params = message.get("params") or {}

    def result(value):
        return {"jsonrpc": "2.0", "id": request_id, "result": value}

    def error(code, text):
        return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": text}}

    if method == "initialize":
        requested = params.get("protocolVersion")
        version = requested if requested in SUPPORTED_VERSIONS else SUPPORTED_VERSIONS[-1]
        return result(
            {
                "protocolVersion": version,
                "capabilities": {"tools": {}},
                "serverInfo": SERVER_INFO,
            }
        )
    if method == "ping":
        return result({})
    if method == "tools/list":
        return result({"tools": TOOLS})
    if method == "tools/call":
        arguments = params.get("arguments") or {}
        try:
            return result(call_tool(params.get("name"), arguments))
        except KeyError:
            return error(-32602, f"unknown tool: {params.get('name')}")
        except ToolError as failure:
            return result({"content": [{"type": "text", "text": str(failure)}], "isError": True})
    return error(-32601, f"method not found: {method}")


def main():
    print("demo-server: ready on stdio", file=sys.stderr)
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            message = json.loads(line)
        except json.JSONDecodeError as failure:
            response = {
                "jsonrpc": "2.0",
                "id": None,
                "error": {"code": -32700, "message": f"parse error: {failure}"},
            }
        else:
            response = handle(message) if isinstance(message, dict) else None
        if response is not None:
            sys.stdout.write(json.dumps(response, ensure_ascii=False, separators=(",", ":")) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
