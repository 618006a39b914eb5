#!/usr/bin/env python3
"""Noisy neighbours for tests on a busy machine: N processes (default 1) that each run 2 ms and sleep 0.5 ms,
forever, as a browser or an IDE does. Plain spinning loops barely disturb a latency-sensitive server (the scheduler
favours threads that sleep); these do. Usage: python3 internal/cmd/noisy/noisy.py [N] & ... kill $! (ends all N).
The kit's own bin/noisy does the same in Go; the two load a machine differently (docs/measurements.md measures
beside both), so both are kept."""
import os, signal, sys, time


def burn():
    while True:
        t = time.perf_counter()
        while time.perf_counter() - t < 0.002:
            pass
        time.sleep(0.0005)


n = int(sys.argv[1]) if len(sys.argv) > 1 else 1
kids = []
for _ in range(n - 1):
    pid = os.fork()
    if pid == 0:
        burn()
    kids.append(pid)


def stop(*_):
    for k in kids:
        try:
            os.kill(k, signal.SIGKILL)
        except ProcessLookupError:
            pass
    os._exit(0)


signal.signal(signal.SIGTERM, stop)
signal.signal(signal.SIGINT, stop)
burn()
