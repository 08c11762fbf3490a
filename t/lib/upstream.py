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

Standard library only (Debian's /usr/bin/python3 runs it)."""

import asyncio
import json
import os
import sys
import urllib.parse

STATS = {}      # key -> {"now", "max", "seen", "tokens"}
TAGS = {}       # tag -> asyncio.Event


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
