"""Regenerates the adapter corpus: real servers' `tools/list`, kept as they sent it.

    tests/peers/.venv/bin/python tests/peers/adapter_corpus.py [OUT_DIR]

(after scripts/install-peers; OUT_DIR defaults to guest/tests/adapter/corpus). For each
server below it starts the process, speaks plain JSON-RPC over stdio (no SDK client, so
nothing is re-serialised: the tools are the server's own JSON), follows `nextCursor`,
and writes OUT_DIR/NAME.json:

    {"server": NAME, "source": "package@version or file", "tools": [...]}

The servers are the pinned reference npm servers (server-everything, -filesystem,
-memory), the Python SDK servers (fastmcp_server.py and adapter_models_server.py, whose
pydantic models give `$defs`), and adapter_zod_server.mjs (zod through the TypeScript
SDK v1: zod-to-json-schema `$ref`s to `#/properties/...`, and zod 4's own output).
The adapter's tests (guest/tests/adapter/) convert every tool in every dialect.
"""

import json
import os
import subprocess
import sys
import tempfile
from importlib import metadata

PEERS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(PEERS))
MODULES = os.path.join(PEERS, "node_modules")


def npm_version(package):
    with open(os.path.join(MODULES, package, "package.json")) as f:
        return f"{package}@{json.load(f)['version']}"


def servers(scratch):
    python = sys.executable
    node = "node"
    mcp = f"mcp=={metadata.version('mcp')}, pydantic=={metadata.version('pydantic')}"
    return [
        (
            "server-everything",
            npm_version("@modelcontextprotocol/server-everything"),
            [node, os.path.join(MODULES, "@modelcontextprotocol/server-everything/dist/index.js"), "stdio"],
            {},
        ),
        (
            "server-filesystem",
            npm_version("@modelcontextprotocol/server-filesystem"),
            [node, os.path.join(MODULES, "@modelcontextprotocol/server-filesystem/dist/index.js"), scratch],
            {},
        ),
        (
            "server-memory",
            npm_version("@modelcontextprotocol/server-memory"),
            [node, os.path.join(MODULES, "@modelcontextprotocol/server-memory/dist/index.js")],
            {"MEMORY_FILE_PATH": os.path.join(scratch, "memory.jsonl")},
        ),
        (
            "python-fastmcp",
            f"tests/peers/fastmcp_server.py ({mcp})",
            [python, os.path.join(PEERS, "fastmcp_server.py")],
            {},
        ),
        (
            "python-pydantic-models",
            f"tests/peers/adapter_models_server.py ({mcp})",
            [python, os.path.join(PEERS, "adapter_models_server.py")],
            {},
        ),
        (
            "zod",
            "tests/peers/adapter_zod_server.mjs ("
            + ", ".join(npm_version(p) for p in ["@modelcontextprotocol/sdk", "zod", "zod-to-json-schema"])
            + ")",
            [node, os.path.join(PEERS, "adapter_zod_server.mjs")],
            {},
        ),
    ]


class Peer:
    """One server process spoken to line by line; its stderr is kept for errors."""

    def __init__(self, argv, env):
        self.stderr = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            env={**os.environ, **env},
            cwd=PEERS,
        )
        self.next_id = 0

    def request(self, method, params):
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        while True:
            line = self.proc.stdout.readline()
            if not line:
                self.stderr.seek(0)
                raise SystemExit(f"the server closed stdout; its stderr:\n{self.stderr.read().decode()}")
            message = json.loads(line)
            if message.get("id") == self.next_id and "method" not in message:
                if "error" in message:
                    raise SystemExit(f"{method}: {message['error']}")
                return message["result"]

    def send(self, message):
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()

    def close(self):
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def list_tools(argv, env):
    peer = Peer(argv, env)
    try:
        peer.request(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "mcpbox-adapter-corpus", "version": "1"},
            },
        )
        peer.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        tools, cursor = [], None
        while True:
            page = peer.request("tools/list", {"cursor": cursor} if cursor else {})
            tools.extend(page["tools"])
            cursor = page.get("nextCursor")
            if not cursor:
                return tools
    finally:
        peer.close()


def main(argv):
    out = argv[0] if argv else os.path.join(ROOT, "guest/tests/adapter/corpus")
    os.makedirs(out, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        for name, source, command, env in servers(scratch):
            tools = list_tools(command, env)
            path = os.path.join(out, f"{name}.json")
            with open(path, "w") as f:
                json.dump({"server": name, "source": source, "tools": tools}, f, indent=2, ensure_ascii=False)
                f.write("\n")
            print(f"{path}: {len(tools)} tools", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
