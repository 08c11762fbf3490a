#!/usr/bin/python3
"""Closed-loop HTTP clients with a deadline, and what they saw.

    load.py run OUT --url URL[,URL...] --clients N --seconds T
                [--deadline SECONDS] [--pause-ms MS]
                [--group N:HEADER=VALUE ...] [--epoch FILE]
    load.py stats OUT [--from S] [--to S] [--group NAME]
    load.py series OUT [--step S]

run: N clients, each with a keep-alive HTTP/1.1 connection to one of
the URLs (client i to URL i mod their count), each sending its next
request as soon as the last one was answered, for T seconds; a refused
request (any status but 200) is followed by a pause of MS (default 0;
drawn from 0.5 to 1.5 times MS) before the next. A request not answered within the deadline (default
1 s) is given up: its connection is closed and made again. Clients
are split into groups in the order given (`--group 4:X-Priority=0
--group 44:X-Priority=3`; the rest, if any, send no such header). Each
request is written to OUT as a line: its start (seconds from the run's
start), its latency (s), its status (0: given up at the deadline, -1:
a connection error) and its group's number. --epoch FILE: the run's
start as the wall clock (seconds of the epoch) is written to FILE as it
starts, for whoever lines other readings up with the requests.

stats: over the requests that started in [from, to): "goodput" (200s
within the deadline per second), "p50"/"p90"/"p99" of the 200s'
latencies, "codes" (count per status), per group when asked.

series: the same per step (default 1 s), one JSON object a line.

Standard library only (Debian's /usr/bin/python3 runs it)."""

import argparse
import asyncio
import json
import os
import random
import sys
import time
import urllib.parse


class Client:
    def __init__(self, url, headers, deadline, pause, out, t0, group):
        u = urllib.parse.urlsplit(url)
        self.host, self.port = u.hostname, u.port or 80
        path = u.path or "/"
        if u.query:
            path += "?" + u.query
        lines = ["GET %s HTTP/1.1" % path, "Host: %s" % self.host]
        lines += ["%s: %s" % h for h in headers]
        self.request = ("\r\n".join(lines) + "\r\n\r\n").encode()
        self.deadline, self.pause = deadline, pause
        self.out, self.t0, self.group = out, t0, group
        self.reader = self.writer = None

    async def connect(self):
        self.reader, self.writer = await asyncio.open_connection(
            self.host, self.port)

    def close(self):
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None

    async def exchange(self):
        """One request on the connection: its status."""
        if self.writer is None:
            await self.connect()
        self.writer.write(self.request)
        head = await self.reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        length, close = 0, False
        for line in lines[1:]:
            name, _, value = line.partition(":")
            name = name.strip().lower()
            if name == "content-length":
                length = int(value)
            elif name == "connection" and "close" in value.lower():
                close = True
        if length:
            await self.reader.readexactly(length)
        if close:
            self.close()
        return status

    async def run(self, until):
        while time.monotonic() < until:
            start = time.monotonic()
            try:
                status = await asyncio.wait_for(self.exchange(),
                                                self.deadline)
            except asyncio.TimeoutError:
                status = 0
                self.close()
            except (OSError, asyncio.IncompleteReadError, ValueError,
                    IndexError):
                status = -1
                self.close()
                await asyncio.sleep(0.01)
            end = time.monotonic()
            self.out.append((start - self.t0, end - start, status,
                             self.group))
            if status != 200 and self.pause > 0:
                # (spread: clients refused together do not come back
                # together)
                await asyncio.sleep(self.pause * random.uniform(0.5, 1.5))
        self.close()


async def run(args):
    urls = args.url.split(",")
    groups = []     # (count, [(name, value)])
    for g in args.group or []:
        count, _, header = g.partition(":")
        name, _, value = header.partition("=")
        groups.append((int(count), [(name, value)] if name else []))
    plan = [g for g, (count, _) in enumerate(groups) for _ in range(count)]
    out = []
    t0 = time.monotonic()
    if args.epoch:
        with open(args.epoch + ".tmp", "w") as f:
            f.write("%.6f\n" % time.time())
        os.rename(args.epoch + ".tmp", args.epoch)
    clients = []
    for i in range(args.clients):
        g = plan[i] if i < len(plan) else len(groups)
        headers = groups[g][1] if g < len(groups) else []
        clients.append(Client(urls[i % len(urls)], headers, args.deadline,
                              args.pause_ms / 1000.0, out, t0, g))
    until = t0 + args.seconds
    await asyncio.gather(*(c.run(until) for c in clients))
    with open(args.out, "w") as f:
        for r in out:
            f.write("%.4f %.4f %d %d\n" % r)


def read(path):
    with open(path) as f:
        for line in f:
            s, lat, status, g = line.split()
            yield float(s), float(lat), int(status), int(g)


def quantile(sorted_values, q):
    if not sorted_values:
        return None
    i = min(len(sorted_values) - 1, int(q * len(sorted_values)))
    return round(sorted_values[i], 4)


def summary(rows, span):
    ok = sorted(r[1] for r in rows if r[2] == 200)
    codes = {}
    for r in rows:
        codes[str(r[2])] = codes.get(str(r[2]), 0) + 1
    return {"goodput": round(len(ok) / span, 2) if span > 0 else 0,
            "p50": quantile(ok, 0.5), "p90": quantile(ok, 0.9),
            "p99": quantile(ok, 0.99), "codes": codes,
            "requests": len(rows)}


def stats(args):
    rows = [r for r in read(args.out)
            if args.start <= r[0] < args.to
            and (args.group is None or r[3] == args.group)]
    span = args.to - args.start
    if span == float("inf"):
        span = max((r[0] for r in rows), default=0) - args.start
    print(json.dumps(summary(rows, span)))


def series(args):
    rows = list(read(args.out))
    end = max((r[0] for r in rows), default=0)
    t = 0.0
    while t < end:
        part = [r for r in rows if t <= r[0] < t + args.step]
        s = summary(part, args.step)
        s["t"] = round(t, 3)
        print(json.dumps(s))
        t += args.step


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("out")
    r.add_argument("--url", required=True)
    r.add_argument("--clients", type=int, default=48)
    r.add_argument("--seconds", type=float, default=10)
    r.add_argument("--deadline", type=float, default=1.0)
    r.add_argument("--pause-ms", type=float, default=0)
    r.add_argument("--group", action="append")
    r.add_argument("--epoch")
    s = sub.add_parser("stats")
    s.add_argument("out")
    s.add_argument("--from", dest="start", type=float, default=0)
    s.add_argument("--to", type=float, default=float("inf"))
    s.add_argument("--group", type=int)
    e = sub.add_parser("series")
    e.add_argument("out")
    e.add_argument("--step", type=float, default=1.0)
    args = p.parse_args()
    if args.cmd == "run":
        asyncio.run(run(args))
    elif args.cmd == "stats":
        stats(args)
    else:
        series(args)


if __name__ == "__main__":
    sys.exit(main())
