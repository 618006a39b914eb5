#!/usr/bin/env python3
"""A Python asyncio server that speaks bystander's endpoint protocol (docs/protocol.md).

One event loop, as an asyncio program has: /slow blocks it (time.sleep holds
the thread, as a synchronous driver call does inside a coroutine); /async
awaits asyncio.sleep; /offload runs the same blocking call on a thread pool
(loop.run_in_executor) and answers from the loop. Only the standard library.

    python3 examples/python/server.py --addr 127.0.0.1:8091 [--block 5ms] [--delay 5ms] [--offload-workers 32] [--ready-file F]

It prints "listening on http://ADDR" when it accepts connections and ends on
SIGINT or SIGTERM.
"""

import argparse
import asyncio
import concurrent.futures
import json
import os
import re
import signal
import sys
import time
from urllib.parse import parse_qs, urlsplit

MAX_NS = 10_000_000_000
UNITS = {"ns": 1, "us": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9, "m": 60e9, "h": 3600e9}
PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")


def parse_duration(s):
    """A Go duration ("5ms", "1.5s", "1h30m", "0") in nanoseconds, or None."""
    if s == "0":
        return 0
    total, i = 0.0, 0
    if not s:
        return None
    while i < len(s):
        m = PART.match(s, i)
        if not m:
            return None
        total += float(m.group(1)) * UNITS[m.group(2)]
        i = m.end()
    return int(total)


def duration_arg(s):
    d = parse_duration(s)
    if d is None or d > MAX_NS:
        raise argparse.ArgumentTypeError(f"{s!r}: want a Go duration from 0 to 10s (5ms, 250us, 1.5s)")
    return d


def workers_arg(s):
    try:
        n = int(s)
    except ValueError:
        n = 0
    if not 1 <= n <= 1024:
        raise argparse.ArgumentTypeError(f"{s!r}: want 1 to 1024")
    return n


def blocking_call(ns):
    """The blocking call: the thread sleeps in the kernel. Returns the ns it took."""
    t0 = time.monotonic_ns()
    if ns > 0:
        time.sleep(ns / 1e9)
    return time.monotonic_ns() - t0


REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed", 413: "Content Too Large",
           431: "Request Header Fields Too Large", 501: "Not Implemented", 505: "HTTP Version Not Supported"}


def answer(status, body, headers, close=False):
    b = body.encode()
    lines = [f"HTTP/1.1 {status} {REASONS[status]}", "Content-Type: text/plain", f"Content-Length: {len(b)}"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    if close:
        lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + b


class Server:
    def __init__(self, opts):
        self.opts = opts
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=opts.offload_workers)

    async def handle(self, reader, writer):
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except asyncio.IncompleteReadError:
                    return
                except asyncio.LimitOverrunError:
                    writer.write(answer(431, "request header block over 8 KiB\n", {}, close=True))
                    return
                out, close = await self.serve(head, reader)
                writer.write(out)
                await writer.drain()
                if close:
                    return
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    async def serve(self, head, reader):
        start = time.time_ns()
        h = {"X-Handler-Start": str(start), "X-Loop": "0"}
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3 or not parts[1].startswith("/"):
            return answer(400, "malformed request line\n", h, close=True), True
        method, target, version = parts
        if version not in ("HTTP/1.0", "HTTP/1.1"):
            return answer(505, f"version {version} not supported\n", h, close=True), True
        fields = {}
        for line in lines[1:]:
            if not line:
                continue
            name, sep, value = line.partition(":")
            if not sep or not name or name != name.strip():
                return answer(400, "malformed header line\n", h, close=True), True
            fields[name.lower()] = value.strip()
        if len(lines) > 102:
            return answer(431, "over 100 header lines\n", h, close=True), True
        if version == "HTTP/1.1" and "host" not in fields:
            return answer(400, "no Host header\n", h, close=True), True
        if "transfer-encoding" in fields:
            return answer(501, "Transfer-Encoding is not supported\n", h, close=True), True
        length = fields.get("content-length", "0")
        if not length.isdigit():
            return answer(400, "bad Content-Length\n", h, close=True), True
        if int(length) > 4096:
            return answer(413, "request body over 4 KiB\n", h, close=True), True
        if int(length) > 0:
            await reader.readexactly(int(length))
        close = fields.get("connection", "").lower() == "close" or version == "HTTP/1.0"
        if method not in ("GET", "HEAD"):
            return answer(405, f"method {method} not allowed\n", h, close), close
        url = urlsplit(target)
        query = parse_qs(url.query, keep_blank_values=True)

        def duration(name, default):
            if name not in query:
                return default
            d = parse_duration(query[name][0])
            if d is None or d > MAX_NS:
                raise ValueError(f"{name}={query[name][0]}: want a Go duration from 0 to 10s\n")
            return d

        try:
            if url.path == "/fast":
                body = "fast\n"
            elif url.path == "/slow":
                h["X-Blocked-Ns"] = str(blocking_call(duration("block", self.opts.block)))
                body = "slow\n"
            elif url.path == "/async":
                await asyncio.sleep(duration("delay", self.opts.delay) / 1e9)
                h["X-Continuation-Start"], h["X-Continuation-Loop"] = str(time.time_ns()), "0"
                body = "async\n"
            elif url.path == "/offload":
                ns = duration("block", self.opts.block)
                blocked = await asyncio.get_running_loop().run_in_executor(self.pool, blocking_call, ns)
                h["X-Continuation-Start"], h["X-Continuation-Loop"], h["X-Blocked-Ns"] = str(time.time_ns()), "0", str(blocked)
                body = "offload\n"
            else:
                return answer(404, f"no route {url.path}\n", h, close), close
        except ValueError as e:
            return answer(400, str(e), h, close), close
        out = answer(200, body, h, close)
        if method == "HEAD":
            out = out[: out.index(b"\r\n\r\n") + 4]
        return out, close


async def main(opts):
    host, _, port = opts.addr.rpartition(":")
    if not host or not port.isdigit():
        print(f"server.py: --addr {opts.addr}: want HOST:PORT", file=sys.stderr)
        sys.exit(2)
    srv = Server(opts)
    try:
        server = await asyncio.start_server(srv.handle, host.strip("[]"), int(port), limit=8192, backlog=1024)
    except OSError as e:
        print(f"server.py: {e}", file=sys.stderr)
        sys.exit(1)
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        asyncio.get_running_loop().add_signal_handler(sig, stop.set)
    a = server.sockets[0].getsockname()
    line = (f"server.py: listening on http://{a[0]}:{a[1]} (1 event loop, asyncio, block {opts.block / 1e6}ms, "
            f"{opts.offload_workers} offload workers)")
    print(line, flush=True)
    if opts.ready_file:
        # The kit's ready file (bystander.ready/v1), written whole through a rename.
        tmp = opts.ready_file + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"schema": "bystander.ready/v1", "addr": f"{a[0]}:{a[1]}", "pid": os.getpid(), "kind": "loop", "workers": 1, "line": line}, f)
        os.replace(tmp, opts.ready_file)
    async with server:
        await stop.wait()
    srv.pool.shutdown(wait=False, cancel_futures=True)


if __name__ == "__main__":
    p = argparse.ArgumentParser(description="A Python asyncio server speaking bystander's endpoint protocol.")
    p.add_argument("--addr", default="127.0.0.1:8091", help="where to listen (port 0 picks a free one)")
    p.add_argument("--block", type=duration_arg, default=5_000_000, help="the blocking call of /slow and /offload (default 5ms)")
    p.add_argument("--delay", type=duration_arg, default=5_000_000, help="the /async delay (default 5ms)")
    p.add_argument("--offload-workers", type=workers_arg, default=32, help="threads /offload blocks on (default 32)")
    p.add_argument("--ready-file", default="", help="once it listens, write where and its PID to this file as JSON (the kit's ready file)")
    asyncio.run(main(p.parse_args()))
