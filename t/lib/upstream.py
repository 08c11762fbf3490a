#!/usr/bin/python3
"""A real upstream for the in-flight and charge tests (t/060, t/061).

    upstream.py PORT_FILE

Listens on a free loopback port (written to PORT_FILE once it listens)
and answers HTTP/1.x, one request per connection:

  GET /hold?key=K&ms=N[&tokens=T][&status=S]
        counts the request in flight for K while it waits N ms, then
        answers S (default 200) with "X-Tokens-Used: T" (if given) and
        a body; a request whose client (nginx) goes away meanwhile stops
        counting when it notices (it polls the socket)
  GET /hold?key=K&until=TAG
        the same, until GET /release?tag=TAG (or 60 s)
  GET /release?tag=TAG   ends the requests held with that tag
  GET /drop?key=K        counts it, then closes the connection without
                         an answer (an upstream error for nginx)
  GET /stats?key=K       {"now": in flight, "max": most at once,
                         "seen": requests, "tokens": sum of T answered}
  GET /reset             forgets every key

and, as a backend of a given capacity (the adaptive limits' tests and
bench/adaptive):

  GET /work[?ms=S]       served C at once, S ms each (default 50), the
                         rest queued first come first served; a request
                         whose client goes away while queued leaves the
                         queue
  GET /capacity?c=C[&ms=S]  sets C (default 8) and S; those served go on
  GET /capacity/stats    {"c", "ms", "now": served at once, "queued",
                         "max": most inside at once (served + queued),
                         "served", "gone": clients gone meanwhile}

Standard library only (Debian's /usr/bin/python3 runs it)."""

import asyncio
import collections
import json
import os
import sys
import urllib.parse

STATS = {}      # key -> {"now", "max", "seen", "tokens"}
TAGS = {}       # tag -> asyncio.Event


class Capacity:
    """C requests served at once, the rest waiting in arrival order."""

    def __init__(self):
        self.c, self.ms = 8, 50
        self.busy = 0
        self.waiting = collections.deque()   # futures, oldest first
        self.max = self.served = self.gone = 0

    def stats(self):
        return {"c": self.c, "ms": self.ms, "now": self.busy,
                "queued": len(self.waiting), "max": self.max,
                "served": self.served, "gone": self.gone}

    def set(self, c, ms):
        self.c, self.ms = c, ms
        self.wake()

    def wake(self):
        while self.busy < self.c and self.waiting:
            f = self.waiting.popleft()
            if not f.done():
                self.busy += 1
                f.set_result(True)

    async def serve(self, reader, ms):
        """True once served; False if the client went away first."""
        self.max = max(self.max, self.busy + len(self.waiting) + 1)
        gone = asyncio.ensure_future(reader.read(1))
        try:
            if self.busy < self.c and not self.waiting:
                self.busy += 1
            else:
                turn = asyncio.get_running_loop().create_future()
                self.waiting.append(turn)
                done, _ = await asyncio.wait(
                    {turn, gone}, return_when=asyncio.FIRST_COMPLETED)
                if turn not in done:
                    turn.cancel()
                    self.gone += 1
                    return False
            try:
                work = asyncio.ensure_future(asyncio.sleep(ms / 1000.0))
                done, _ = await asyncio.wait(
                    {work, gone}, return_when=asyncio.FIRST_COMPLETED)
                work.cancel()
                if work not in done:
                    self.gone += 1
                    return False
                self.served += 1
                return True
            finally:
                self.busy -= 1
                self.wake()
        finally:
            gone.cancel()


CAPACITY = Capacity()


def stats(key):
    return STATS.setdefault(key, {"now": 0, "max": 0, "seen": 0,
                                  "tokens": 0})


async def answer(writer, status, body, headers=()):
    lines = ["HTTP/1.1 %d X" % status,
             "Content-Type: text/plain",
             "Content-Length: %d" % len(body),
             "Connection: close"]
    lines += ["%s: %s" % h for h in headers]
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
    await writer.drain()


async def hold(reader, q):
    """Waits as the query says; False if the client went away first."""
    if "until" in q:
        event = TAGS.setdefault(q["until"], asyncio.Event())
        wait = asyncio.ensure_future(event.wait())
        deadline = 60.0
    else:
        wait = asyncio.ensure_future(asyncio.sleep(int(q.get("ms", "0"))
                                                   / 1000.0))
        deadline = None
    gone = asyncio.ensure_future(reader.read(1))
    done, _ = await asyncio.wait({wait, gone}, timeout=deadline,
                                 return_when=asyncio.FIRST_COMPLETED)
    for f in (wait, gone):
        if not f.done():
            f.cancel()
    return not (gone in done and gone.result() == b"")


async def serve(reader, writer):
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError,
            ConnectionError):
        writer.close()
        return
    target = head.split(b" ", 2)[1].decode()
    url = urllib.parse.urlsplit(target)
    q = dict(urllib.parse.parse_qsl(url.query))
    try:
        if url.path == "/hold":
            s = stats(q.get("key", ""))
            s["now"] += 1
            s["seen"] += 1
            s["max"] = max(s["max"], s["now"])
            try:
                alive = await hold(reader, q)
            finally:
                s["now"] -= 1
            if alive:
                headers = []
                if "tokens" in q:
                    headers.append(("X-Tokens-Used", q["tokens"]))
                    if q["tokens"].isdigit():
                        s["tokens"] += int(q["tokens"])
                await answer(writer, int(q.get("status", "200")),
                             b"held\n", headers)
        elif url.path == "/work":
            ms = int(q.get("ms", CAPACITY.ms))
            if await CAPACITY.serve(reader, ms):
                await answer(writer, 200, b"worked\n")
        elif url.path == "/capacity":
            CAPACITY.set(int(q.get("c", CAPACITY.c)),
                         int(q.get("ms", CAPACITY.ms)))
            await answer(writer, 200, json.dumps(CAPACITY.stats()).encode())
        elif url.path == "/capacity/stats":
            await answer(writer, 200, json.dumps(CAPACITY.stats()).encode())
        elif url.path == "/release":
            TAGS.setdefault(q.get("tag", ""), asyncio.Event()).set()
            await answer(writer, 200, b"released\n")
        elif url.path == "/drop":
            stats(q.get("key", ""))["seen"] += 1
        elif url.path == "/stats":
            body = json.dumps(stats(q.get("key", ""))).encode()
            await answer(writer, 200, body)
        elif url.path == "/reset":
            STATS.clear()
            TAGS.clear()
            CAPACITY.max = CAPACITY.served = CAPACITY.gone = 0
            await answer(writer, 200, b"reset\n")
        else:
            await answer(writer, 404, b"no such path\n")
    except ConnectionError:
        pass
    finally:
        writer.close()


async def main(port_file):
    server = await asyncio.start_server(serve, "127.0.0.1", 0, backlog=512)
    port = server.sockets[0].getsockname()[1]
    with open(port_file + ".tmp", "w") as f:
        f.write("%d\n" % port)
    os.rename(port_file + ".tmp", port_file)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
