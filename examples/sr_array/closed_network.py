#!/usr/bin/env python3
"""Why RLOOK at Q = 32 falls 9-15 % below eqs. 2.44-2.45 (dissertation 2.4.3).

A closed queueing network of D disks and Q requests: each completion issues a new request
to a uniformly random disk (Iometer), and a disk with q requests queued serves the next one
in eq. 2.42's time S/((1.5q + 1 + 0.5/q) Ds) + U(0, R/Dr) + To (Dr evenly spaced
replicas). Nothing else from spindle.
Its disk utilisation and throughput match spindle's simulation (e.g. 6x1 at Q = 32:
utilisation 0.93, ~939 IOPS here vs 0.929, 927 IOPS simulated), while eq. 2.45 assumes the
utilisation 1 - (1 - 1/D)^Q = 0.997: the model's idle-disk term, not the simulator, is off.

    python3 examples/sr_array/closed_network.py
"""
import heapq
import random

S, R, TO = 9.2, 6.0, 2.7


def simulate(disks, q_total, ds, dr, completions=200_000, seed=1):
    rnd = random.Random(seed)
    queued = [0] * disks
    for _ in range(q_total):
        queued[rnd.randrange(disks)] += 1
    events, busy = [], [q > 0 for q in queued]

    def start(d, now):
        q = queued[d]
        service = S / ((1.5 * q + 1 + 0.5 / q) * ds) + rnd.uniform(0, R / dr) + TO
        heapq.heappush(events, (now + service, d))

    for d in range(disks):
        if busy[d]:
            start(d, 0.0)
    idle = last = 0.0
    for _ in range(completions):
        now, d = heapq.heappop(events)
        idle += busy.count(False) * (now - last)
        last = now
        queued[d] -= 1
        nd = rnd.randrange(disks)
        queued[nd] += 1
        if not busy[nd]:
            busy[nd] = True
            start(nd, now)
        if queued[d] > 0:
            start(d, now)
        elif queued[d] == 0:
            busy[d] = False
    return 1 - idle / (disks * last), completions / last * 1000


if __name__ == "__main__":
    print("Ds x Dr  Q   utilisation  IOPS    eq. 2.45 utilisation")
    for ds, dr, q in [(6, 1, 8), (6, 1, 32), (12, 1, 32), (3, 2, 32), (4, 3, 32)]:
        d = ds * dr
        util, iops = simulate(d, q, ds, dr)
        print(f"{ds}x{dr}{'':<5}{q:<4}{util:<13.3f}{iops:<8.1f}{1 - (1 - 1 / d) ** q:.3f}")
