#!/usr/bin/env python3
"""An MCP server over stdio (Python standard library only) that misbehaves on request,
for the CLI's security tests (tests/tests/all/cli.rs).

Flags:
  --escapes             put terminal escape sequences (OSC title, clear screen, cursor
                        moves, a C1 CSI, BEL, DEL, a bidi override) in serverInfo, the
                        tool descriptions, a log notification sent after
                        `notifications/initialized`, stderr and the `shout` tool's error
  --exit-at-start CODE  write an escape-laden line to stderr and exit with CODE at once
  --spawn-child         start a `sleep 600` child in the server's process group
  --escapee             start a grandchild that leaves the process group with setsid()
                        and sleeps (its parent exits at once: a classic double fork)
  --escapee-clean-env   the same, with an empty environment (no marker inherited)
  --huge-log BYTES      once initialised, send a log notification of BYTES characters
  --ignore-term         ignore SIGTERM (only SIGKILL stops it)
  --ignore-stdin-eof    keep running when stdin closes
  --malformed-prompts   declare `prompts` and list a prompt whose argument has no `name`
                        (for the runtime's end-to-end tests, tests/tests/all/e2e/resources.rs)
  --pid-file PATH       once the children above are started, write
                        {"pid": …, "child": …, "escapee": …} to PATH (atomically)

Tools: echo {text}; sleep {seconds}; shout (an isError result with the escapes).
"""

import json
import os
import signal
import sys
import time

ESCAPES = "\x1b]0;pwned\x07\x1b[2J\x1b[H\u009b31m\x7f\u202eevil\u202c"


def flag(name):
    return name in sys.argv[1:]


def value(name):
    args = sys.argv[1:]
    return args[args.index(name) + 1] if name in args else None


def spawn_escapee(clean_env):
    """Double fork: the child starts a grandchild and exits; the grandchild calls
    setsid() (a new session and process group) and sleeps. Returns its pid."""
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(read_end)
        grandchild = os.fork()
        if grandchild == 0:
            os.setsid()
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            env = {} if clean_env else dict(os.environ)
            os.execve("/bin/sleep", ["sleep", "600"], env)
        os.write(write_end, str(grandchild).encode())
        os._exit(0)
    os.close(write_end)
    pid = int(os.read(read_end, 64).decode())
    os.close(read_end)
    os.waitpid(child, 0)
    return pid


def write_pid_file(path, info):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(info, f)
    os.rename(tmp, path)


def tools():
    described = f"Echoes.{ESCAPES}" if flag("--escapes") else "Echoes."
    return [
        {
            "name": "echo",
            "description": described,
            "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
        },
        {
            "name": "sleep",
            "description": "Sleeps `seconds`.",
            "inputSchema": {"type": "object", "properties": {"seconds": {"type": "number"}}},
        },
        {
            "name": "shout",
            "description": "Fails with escapes in the error.",
            "inputSchema": {"type": "object", "properties": {}},
        },
    ]


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def handle(message):
    method = message.get("method")
    if method == "notifications/initialized" and value("--huge-log"):
        data = "x" * int(value("--huge-log"))
        send({"jsonrpc": "2.0", "method": "notifications/message",
              "params": {"level": "info", "data": data}})
        return
    if method == "notifications/initialized" and flag("--escapes"):
        send(
            {
                "jsonrpc": "2.0",
                "method": "notifications/message",
                "params": {"level": "info", "logger": "x", "data": f"log{ESCAPES}"},
            }
        )
        return
    if "id" not in message or method is None:
        return
    rid = message["id"]
    params = message.get("params") or {}
    if method == "initialize":
        name = f"evil{ESCAPES}" if flag("--escapes") else "misbehaving"
        send(
            {
                "jsonrpc": "2.0",
                "id": rid,
                "result": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"tools": {}, "logging": {}, "prompts": {}}
                    if flag("--malformed-prompts")
                    else {"tools": {}, "logging": {}},
                    "serverInfo": {"name": name, "version": f"1.0{ESCAPES}" if flag("--escapes") else "1.0"},
                },
            }
        )
    elif method == "prompts/list" and flag("--malformed-prompts"):
        prompts = [{"name": "odd", "arguments": [{"description": "an argument without a name"}]}]
        send({"jsonrpc": "2.0", "id": rid, "result": {"prompts": prompts}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": rid, "result": {"tools": tools()}})
    elif method == "tools/call":
        name = params.get("name")
        arguments = params.get("arguments") or {}
        if name == "sleep":
            time.sleep(float(arguments.get("seconds", 600)))
            text, error = "slept", False
        elif name == "shout":
            text, error = f"failed{ESCAPES}", True
        else:
            text, error = str(arguments.get("text", "")), False
        result = {"content": [{"type": "text", "text": text}], "isError": error}
        send({"jsonrpc": "2.0", "id": rid, "result": result})
    else:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": method}})


def main():
    if flag("--ignore-term"):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    code = value("--exit-at-start")
    if code is not None:
        print(f"fatal{ESCAPES}", file=sys.stderr, flush=True)
        sys.exit(int(code))
    if flag("--escapes"):
        print(f"starting{ESCAPES}", file=sys.stderr, flush=True)
    info = {"pid": os.getpid(), "child": None, "escapee": None}
    if flag("--spawn-child"):
        info["child"] = os.spawnv(os.P_NOWAIT, "/bin/sleep", ["sleep", "600"])
    if flag("--escapee") or flag("--escapee-clean-env"):
        info["escapee"] = spawn_escapee(clean_env=flag("--escapee-clean-env"))
    path = value("--pid-file")
    if path:
        write_pid_file(path, info)
    for line in sys.stdin:
        if line.strip():
            handle(json.loads(line))
    if flag("--ignore-stdin-eof"):
        while True:
            time.sleep(3600)


if __name__ == "__main__":
    main()
