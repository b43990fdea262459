#!/usr/bin/env python3
"""A counting NBD proxy: how many requests a client really keeps in flight.

    scripts/nbd_inflight.py LISTEN_SOCKET SERVER_SOCKET

Listens on the Unix socket LISTEN_SOCKET and forwards every connection, byte for byte, to
the NBD server on the Unix socket SERVER_SOCKET (e.g. `spindle serve --unix`). It parses the
fixed-newstyle handshake (NBD_OPT_GO) and then every request and simple reply, and when a
connection closes (or on SIGUSR1, or at SIGINT/SIGTERM) prints to stderr, per connection:
requests by type, the time-weighted mean and the maximum number of requests in flight (sent,
not yet answered), the median number already in flight when a request arrived,
and how many READ/WRITE/TRIM/WRITE_ZEROES requests were not 4 KiB-aligned (offset or
length). Standard library only; structured replies are not supported (spindle sends simple
replies only).
"""

import asyncio
import signal
import struct
import sys
import time

NBDMAGIC = 0x4E42444D41474943
IHAVEOPT = 0x49484156454F5054
OPT_REPLY_MAGIC = 0x3E889045565A9
REQUEST_MAGIC = 0x25609513
SIMPLE_REPLY_MAGIC = 0x67446698
OPT_EXPORT_NAME, OPT_GO = 1, 7
REP_ACK = 1
CMD_NAMES = {0: "read", 1: "write", 2: "disc", 3: "flush", 4: "trim", 6: "write_zeroes"}
CMD_READ, CMD_WRITE = 0, 1
RANGED = {0, 1, 4, 6}
ALIGN = 4096


class Conn:
    def __init__(self, n):
        self.n = n
        self.start = time.monotonic()
        self.pending = {}  # handle -> (cmd, length)
        self.counts = {}
        self.misaligned = 0
        self.max_in_flight = 0
        self.area = 0.0  # integral of in-flight over time (request-seconds)
        self.t_last = None
        self.t_first = None
        self.seen_at_arrival = {}
        self.closed = False

    def _advance(self):
        now = time.monotonic()
        if self.t_last is not None:
            self.area += len(self.pending) * (now - self.t_last)
        self.t_last = now
        if self.t_first is None:
            self.t_first = now

    def request(self, cmd, handle, offset, length):
        self._advance()
        depth = len(self.pending)
        self.seen_at_arrival[depth] = self.seen_at_arrival.get(depth, 0) + 1
        self.pending[handle] = (cmd, length)
        self.max_in_flight = max(self.max_in_flight, len(self.pending))
        name = CMD_NAMES.get(cmd, f"cmd{cmd}")
        self.counts[name] = self.counts.get(name, 0) + 1
        if cmd in RANGED and (offset % ALIGN or length % ALIGN):
            self.misaligned += 1

    def reply(self, handle):
        self._advance()
        return self.pending.pop(handle, (None, 0))

    def report(self, why):
        self._advance()
        span = (self.t_last - self.t_first) if self.t_first is not None else 0.0
        mean = self.area / span if span > 0 else 0.0
        total = sum(self.counts.values())
        median = 0
        below = 0
        for d, c in sorted(self.seen_at_arrival.items()):
            below += c
            if 2 * below >= total:
                median = d
                break
        counts = ", ".join(f"{k} {v}" for k, v in sorted(self.counts.items()))
        print(
            f"nbd_inflight: connection {self.n} ({why}): {total} requests ({counts}) "
            f"in {span:.1f} s; in flight: mean {mean:.2f}, max {self.max_in_flight}; "
            f"already in flight when a request arrived: median {median}; "
            f"not {ALIGN}-aligned: {self.misaligned}",
            file=sys.stderr,
            flush=True,
        )


async def pump_client(reader, writer, conn):
    """Client to server: handshake options until GO, then requests."""
    async def take(n):
        b = await reader.readexactly(n)
        writer.write(b)
        return b

    await take(4)  # client flags
    while True:
        magic, opt, length = struct.unpack(">QII", await take(16))
        if magic != IHAVEOPT:
            raise ValueError("bad option magic")
        if length:
            await take(length)
        if opt == OPT_EXPORT_NAME:
            raise ValueError("NBD_OPT_EXPORT_NAME is not supported by this proxy")
        if opt == OPT_GO:
            break
    await writer.drain()
    while True:
        hdr = await take(28)
        magic, _flags, cmd, handle, offset, length = struct.unpack(">IHHQQI", hdr)
        if magic != REQUEST_MAGIC:
            raise ValueError("bad request magic")
        conn.request(cmd, handle, offset, length)
        if cmd == CMD_WRITE:
            while length:
                chunk = await reader.read(min(length, 1 << 20))
                if not chunk:
                    raise asyncio.IncompleteReadError(b"", length)
                writer.write(chunk)
                length -= len(chunk)
        await writer.drain()


async def pump_server(reader, writer, conn):
    """Server to client: handshake, option replies until GO's ACK, then simple replies."""
    async def take(n):
        b = await reader.readexactly(n)
        writer.write(b)
        return b

    await take(18)  # NBDMAGIC, IHAVEOPT, handshake flags
    while True:
        magic, opt, rtype, length = struct.unpack(">QIII", await take(20))
        if magic != OPT_REPLY_MAGIC:
            raise ValueError("bad option reply magic")
        if length:
            await take(length)
        if opt == OPT_GO and rtype == REP_ACK:
            break
    await writer.drain()
    while True:
        magic, error, handle = struct.unpack(">IIQ", await take(16))
        if magic != SIMPLE_REPLY_MAGIC:
            raise ValueError("not a simple reply (structured replies are not supported)")
        cmd, length = conn.reply(handle)
        if cmd == CMD_READ and error == 0:
            while length:
                chunk = await reader.read(min(length, 1 << 20))
                if not chunk:
                    raise asyncio.IncompleteReadError(b"", length)
                writer.write(chunk)
                length -= len(chunk)
        await writer.drain()


async def main(listen, server):
    conns = []

    async def handle(creader, cwriter):
        conn = Conn(len(conns) + 1)
        conns.append(conn)
        sreader, swriter = await asyncio.open_unix_connection(server)
        tasks = [
            asyncio.ensure_future(pump_client(creader, swriter, conn)),
            asyncio.ensure_future(pump_server(sreader, cwriter, conn)),
        ]
        done, rest = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for t in rest:
            t.cancel()
        for t in done:
            e = t.exception()
            if e and not isinstance(e, (asyncio.IncompleteReadError, ConnectionError)):
                print(f"nbd_inflight: connection {conn.n}: {e}", file=sys.stderr, flush=True)
        for w in (swriter, cwriter):
            w.close()
        conn.closed = True
        if conn.counts:
            conn.report("closed")

    loop = asyncio.get_running_loop()
    stop = loop.create_future()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, lambda: stop.done() or stop.set_result(None))
    loop.add_signal_handler(
        signal.SIGUSR1, lambda: [c.report("so far") for c in conns if not c.closed]
    )
    srv = await asyncio.start_unix_server(handle, path=listen)
    print(f"nbd_inflight: {listen} -> {server}", file=sys.stderr, flush=True)
    async with srv:
        await stop
    for c in conns:
        if not c.closed:
            c.report("at exit")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    asyncio.run(main(sys.argv[1], sys.argv[2]))
