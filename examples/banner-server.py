#!/usr/bin/env python3
"""A small MCP stdio server with an ordinary bug: it prints a banner on stdout.

Run it directly and a strict client fails on the first line ("loading optional
extension" is not JSON). Run it under mcpguard and the banner is diverted to
stderr with a diagnostic, while the protocol on stdout stays clean:

    mcpguard -- python3 examples/banner-server.py
"""
import json
import sys

print("loading optional extension")  # the stray print()
sys.stdout.flush()

TOOLS = [{
    "name": "add",
    "description": "Add two numbers",
    "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]},
}]


def reply(rid, result):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    msg = json.loads(line)
    method, rid = msg.get("method"), msg.get("id")
    if rid is None:
        continue  # notifications need no answer
    if method == "initialize":
        reply(rid, {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                    "serverInfo": {"name": "banner-server", "version": "1.0.0"}})
    elif method == "tools/list":
        reply(rid, {"tools": TOOLS})
    elif method == "ping":
        reply(rid, {})
    elif method == "tools/call":
        args = msg["params"].get("arguments", {})
        print(f"adding {args}", file=sys.stderr)  # diagnostics belong on stderr
        reply(rid, {"content": [{"type": "text", "text": str(args["a"] + args["b"])}]})
    else:
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "method not found"}}) + "\n")
        sys.stdout.flush()
