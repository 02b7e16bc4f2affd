#!/usr/bin/env python3
"""An MCP stdio server with the kind of trouble people debug at 2 a.m.

`lookup` logs its progress on stderr and answers; `lookup` with
"host": "db-2" logs a connection attempt and then never answers (a hung
call); `delete` fails as a tool (isError: true). Used by the README's
walkthrough:

    (cat examples/hang.jsonl; sleep 5) | mcpguard --call-timeout 2s -- python3 examples/hanging-server.py
"""
import json
import sys

TOOLS = [
    {"name": "lookup", "description": "Look a key up on a host",
     "inputSchema": {"type": "object", "properties": {"host": {"type": "string"}, "key": {"type": "string"}},
                     "required": ["host", "key"]}},
    {"name": "delete", "description": "Delete a key",
     "inputSchema": {"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]}},
]


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def log(text):
    print(text, file=sys.stderr, flush=True)


log("hanging-server: starting")
for line in sys.stdin:
    msg = json.loads(line)
    method, rid = msg.get("method"), msg.get("id")
    if rid is None:
        continue
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": rid, "result": {
            "protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
            "serverInfo": {"name": "hanging-server", "version": "1.0.0"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": rid, "result": {"tools": TOOLS}})
    elif method == "tools/call":
        name, args = msg["params"]["name"], msg["params"].get("arguments", {})
        if name == "lookup":
            log(f"lookup: connecting to {args['host']}:5432")
            if args["host"] == "db-2":
                log("lookup: connect() to db-2:5432 is taking long, retrying")
                continue  # never answers: the call hangs
            log(f"lookup: {args['key']} found")
            send({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": "42"}]}})
        else:
            log(f"delete: permission denied for {args['key']}")
            send({"jsonrpc": "2.0", "id": rid, "result": {
                "content": [{"type": "text", "text": "permission denied"}], "isError": True}})
    else:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "method not found"}})
