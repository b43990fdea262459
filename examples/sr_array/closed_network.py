#!/usr/bin/env python3
"""The reference model for RLOOK at Q = 32 (fig. 4.6(b)): eq. 2.42's per-disk service law in
a closed queueing network, instead of eq. 2.45's idle term (dissertation 2.4.3).

A closed network of D = Ds x Dr disks and Q requests: each completion issues a new request
to a uniformly random disk (Iometer), and a disk with q requests queued serves the next one
in

    S/((1.5q + 1 + 0.5/q) Ds) + U(0, R/Dr) + To + 8 R/spt

that is eq. 2.42 (p = 1) with the rotational wait drawn for Dr evenly spaced replicas, plus
the request's media transfer: 8 sectors (4 KiB) at the sectors per track `spt` of the zone
it lands in, a uniformly random place in the disk's band (the outer 1/Ds of the disk, as
spindle lays it out). The dissertation's To (2.7 ms) was measured between one-sector reads
(sec. 2.1.1, fig. 2.3), so it does not hold a 4 KiB transfer. Nothing else from spindle.

Eq. 2.45 instead multiplies eq. 2.42's rate by D [1 - (1 - 1/D)^Q] busy disks (each of the
Q requests placed independently: 0.3 % idle for 6 disks at Q = 32); in a closed loop the
requests pile up on the busiest disks and at Q = 32 a disk is idle 2-17 % of the time here.

`spindle::model::queueing::ClosedNetwork` (crates/spindle/src/model/queueing.rs) is this
computation in Rust (same generator, same order of operations, so the same numbers:
`crates/spindle/tests/array_models.rs` checks it against this script's output and holds
spindle's RLOOK simulation to within 5 % of it). Run:

    python3 examples/sr_array/closed_network.py
"""

S, TO = 9.2, 2.7  # ms, table 4.1
R = 60_000 / 10_026  # ms, the measured 10,026 rpm (sec. 2.1.1; table 4.1 rounds it to 6.0)
BLOCK = 8  # sectors of a 4 KiB request
# The zones of spindle's ST39133LWV (drives/st39133lwv.toml), outer first: (cylinders,
# sectors per track), on 6 surfaces.
SURFACES = 6
ZONES = [(978, 364), (978, 350), (977, 337), (977, 323), (977, 310),
         (977, 296), (977, 283), (977, 269), (977, 256), (977, 242)]
CAPACITY = sum(c * SURFACES * spt for c, spt in ZONES)  # sectors

MASK = (1 << 64) - 1


class SplitMix64:
    """The generator the Rust port uses too (so both give identical numbers)."""

    def __init__(self, seed):
        self.state = seed & MASK

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)

    def below(self, n):
        """Uniform in 0..n."""
        return (self.next() * n) >> 64

    def unit(self):
        """Uniform in [0, 1), 53 bits."""
        return (self.next() >> 11) * 2.0**-53


def transfer_ms(u, ds):
    """Media transfer of a 4 KiB request at fraction u of the band (the outer 1/Ds)."""
    pos = u * CAPACITY / ds
    for cylinders, spt in ZONES:
        n = cylinders * SURFACES * spt
        if pos < n:
            return BLOCK * R / spt
        pos -= n
    return BLOCK * R / ZONES[-1][1]


def simulate(ds, dr, q_total, completions=200_000, seed=1):
    """(mean disk utilisation, IOPS) of the closed network."""
    disks = ds * dr
    rnd = SplitMix64(seed)
    queued = [0] * disks
    for _ in range(q_total):
        queued[rnd.below(disks)] += 1
    done = [None] * disks  # completion time of the request in service, or None (idle)

    def start(d, now):
        q = queued[d]
        seek = S / ((1.5 * q + 1 + 0.5 / q) * ds)
        rotation = rnd.unit() * (R / dr)
        xfer = transfer_ms(rnd.unit(), ds)
        done[d] = now + (seek + rotation + TO + xfer)

    for d in range(disks):
        if queued[d] > 0:
            start(d, 0.0)
    idle = last = 0.0
    for _ in range(completions):
        d = min((e for e in range(disks) if done[e] is not None), key=lambda e: done[e])
        now = done[d]
        idle += done.count(None) * (now - last)
        last = now
        done[d] = None
        queued[d] -= 1
        nd = rnd.below(disks)
        queued[nd] += 1
        if nd != d and done[nd] is None:
            start(nd, now)
        if queued[d] > 0:
            start(d, now)
    return 1 - idle / (disks * last), completions / last * 1000


def eq_2_45(ds, dr, q_total):
    """Eqs. 2.42 (p = 1) and 2.45: D [1 - (1 - 1/D)^Q] / T1LOOK(Ds, Dr), in IOPS."""
    d = ds * dr
    q = q_total / d
    t1 = S / ((1.5 * q + 1 + 0.5 / q) * ds) + R / (2 * dr) + TO
    return d * (1 - (1 - 1 / d) ** q_total) / t1 * 1000


if __name__ == "__main__":
    print("Q   Ds x Dr  utilisation  IOPS     eq. 2.45 IOPS  its utilisation")
    for q in (8, 32):
        for ds, dr in [(6, 1), (3, 2), (2, 3), (1, 6), (8, 1), (4, 2), (2, 4),
                       (12, 1), (6, 2), (4, 3), (3, 4)]:
            d = ds * dr
            util, iops = simulate(ds, dr, q)
            print(f"{q:<4}{f'{ds}x{dr}':<9}{util:<13.3f}{iops:<9.1f}"
                  f"{eq_2_45(ds, dr, q):<15.1f}{1 - (1 - 1 / d) ** q:.3f}")
