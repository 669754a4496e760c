"""get_credit_info() and an async recursive directory watch, as the Python SDK does them, against one base URL.

Answers are parsed with the SDK's own models (hyperbrowser/models of the snapshot given as argv[3]): TeamCreditInfo
(integers only), SandboxDetail, SandboxFileWatchStatus, SandboxFileWatchEvent, SandboxFileWatchDoneEvent and
SandboxFileSystemEvent. The watch is read the way the SDK's async watch reads it: a WebSocket to
`<runtime base URL>/files/watch/<watch id>/ws`, `{"type": "event"}` frames until `{"type": "done", "status": {...}}`,
here with asyncio and a minimal WebSocket client (the snapshot holds the SDK's models, not its client).

A file is written in a subdirectory ROUNDS times (a new subdirectory each round, and files in one made before the
watch); every write must arrive as a `write` event. Prints a JSON summary.

usage: runtime_checks.py BASE_URL API_KEY SDK_DIR ROUNDS
"""

import asyncio
import base64
import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request

BASE, KEY, SDK_DIR, ROUNDS = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
sys.path.insert(0, SDK_DIR)

from hyperbrowser.models.sandbox import (  # noqa: E402
    SandboxDetail,
    SandboxFileSystemEvent,
    SandboxFileWatchDoneEvent,
    SandboxFileWatchEvent,
    SandboxFileWatchStatus,
)
from hyperbrowser.models.team import TeamCreditInfo  # noqa: E402


def http(method, url, body=None, headers=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    if data is not None:
        req.add_header("content-type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=60) as res:
            return res.status, json.loads(res.read() or b"null")
    except urllib.error.HTTPError as err:
        raise SystemExit(f"{method} {url}: HTTP {err.code}: {err.read()[:300]!r}")


control = {"x-api-key": KEY}
summary = {}

# ── get_credit_info(): GET /api/team/credit-info parsed as TeamCreditInfo ──
_, raw = http("GET", f"{BASE}/api/team/credit-info", headers=control)
info = TeamCreditInfo(**raw)
summary["creditInfo"] = {"types": sorted({type(v).__name__ for v in raw.values()}), "limit": info.limit, "consistent": info.usage + info.remaining == info.limit}

# ── a sandbox, its runtime, and a recursive watch ──
_, raw = http("POST", f"{BASE}/api/sandbox", {"imageName": "node"}, headers=control)
sandbox = SandboxDetail(**raw)
runtime = sandbox.runtime.base_url.rstrip("/")
auth = {"authorization": f"Bearer {sandbox.token}"}
root = "/home/ubuntu/watched"


def sh(command):
    _, out = http("POST", f"{runtime}/exec", {"command": command}, headers=auth)
    if out["result"]["exit_code"] != 0:
        raise SystemExit(f"exec {command!r}: {out['result']}")


sh(f"mkdir -p {root}/before/deep")


async def open_ws(url, headers):
    """A WebSocket client handshake over asyncio streams; returns (reader, writer)."""
    u = urllib.parse.urlsplit(url)
    reader, writer = await asyncio.open_connection(u.hostname, u.port or 80)
    key = base64.b64encode(os.urandom(16)).decode()
    lines = [f"GET {u.path}?{u.query} HTTP/1.1", f"Host: {u.netloc}", "Upgrade: websocket", "Connection: Upgrade",
             f"Sec-WebSocket-Key: {key}", "Sec-WebSocket-Version: 13"] + [f"{k}: {v}" for k, v in headers.items()]
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
    head = await reader.readuntil(b"\r\n\r\n")
    if b" 101 " not in head.split(b"\r\n")[0]:
        raise SystemExit(f"watch socket refused: {head[:200]!r}")
    return reader, writer


async def frames(reader):
    """Text frames from the server (unmasked), until close."""
    while True:
        b0, b1 = await reader.readexactly(2)
        size = b1 & 0x7F
        if size == 126:
            size = int.from_bytes(await reader.readexactly(2), "big")
        elif size == 127:
            size = int.from_bytes(await reader.readexactly(8), "big")
        payload = await reader.readexactly(size)
        if b0 & 0x0F == 0x8:
            return
        if b0 & 0x0F == 0x1:
            yield json.loads(payload)


async def watch_and_write():
    _, raw = http("POST", f"{runtime}/files/watch", {"path": root, "recursive": True}, headers=auth)
    status = SandboxFileWatchStatus(**raw["watch"])
    ws_url = f"{runtime.replace('http', 'ws', 1)}/files/watch/{status.id}/ws?cursor=0"
    reader, writer = await open_ws(ws_url.replace("ws://", "http://", 1), auth)
    writes, seen, done = {}, [], {}

    async def read_all():
        async for message in frames(reader):
            if message.get("type") == "event":
                event = SandboxFileWatchEvent(**message["event"])
                rel = os.path.relpath(event.path, status.path)
                seen.append(SandboxFileSystemEvent(type=event.op, name=rel))
                if event.op == "write":
                    writes[rel] = writes.get(rel, 0) + 1
            elif message.get("type") == "done":
                done["event"] = SandboxFileWatchDoneEvent(**message)
                return

    reading = asyncio.create_task(read_all())
    missed = []
    for i in range(ROUNDS):
        # One file in a subdirectory that existed before the watch, one in a subdirectory made this round.
        targets = [f"before/deep/f{i}.txt", f"new{i}/sub/f{i}.txt"]
        sh(f"mkdir -p {root}/new{i}/sub && printf 'round {i}' > {root}/{targets[0]} && printf 'round {i}' > {root}/{targets[1]}")
        for _ in range(100):
            if all(writes.get(t) for t in targets):
                break
            await asyncio.sleep(0.05)
        missed += [t for t in targets if not writes.get(t)]
    http("DELETE", f"{runtime}/files/watch/{status.id}", headers=auth)
    await asyncio.wait_for(reading, 15)
    writer.close()
    return {
        "rounds": ROUNDS,
        "missedWrites": missed,
        "types": sorted({e.type for e in seen}),
        "done": {"type": done["event"].type, "active": done["event"].status.active, "recursive": done["event"].status.recursive},
    }


summary["watch"] = asyncio.run(watch_and_write())
http("PUT", f"{BASE}/api/sandbox/{sandbox.id}/stop", headers=control)
print(json.dumps(summary, sort_keys=True))
