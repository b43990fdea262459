#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets (see scripts/fuzz.sh and docs/fuzzing.md).

usage: fuzz_seeds.py REPO SHARED OUT

OUT/<target>/ gets: the committed seeds of fuzz/seeds/<target>/, then seeds made from the
repository's examples/ and drives/ and from SHARED (the ../shared data: trace heads, DiskSim
models), each at most a few tens of KB. Missing SHARED files are skipped with a message.
The input layouts are documented in crates/spindle/src/fuzzing.rs and
crates/spindle-emu/src/fuzzing.rs.
"""

import bz2
import gzip
import hashlib
import shutil
import struct
import sys
from pathlib import Path

# TraceFormat::ALL order (crates/spindle/src/workload/trace/mod.rs).
FORMATS = ["disksim", "mqsim", "spc", "msr", "blkparse", "fio2", "fio3", "tencent", "systor"]
DETECT, DECOMPRESS = 9, 10

# (path under SHARED/traces, format, how the file is compressed)
TRACES = [
    ("disksim_example_ascii_18disk/ascii.trace", "disksim", None),
    ("msnfs_fileserver_replayer/MSN-FS-30s-ms", "disksim", None),
    ("blkparse_sample_apress/blktrace.D-events.disksim.txt", "disksim", None),
    ("oltp_tpcc_mqsim/tpcc-small.trace", "mqsim", None),
    ("websearch_umass_mqsim/wsrch-small.trace", "mqsim", None),
    ("oltp_umass_financial1_head/Financial_mini.spc", "spc", None),
    ("msr_and_cloud_samples/msr-cambridge1-sample.csv", "msr", None),
    ("blkparse_sample_apress/blktrace.txt", "blkparse", None),
    ("msr_and_cloud_samples/cloud_storage-sample.bz2", "tencent", "bz2"),
    ("msr_and_cloud_samples/systor17-traces-sample.csv.gz", "systor", "gz"),
    ("msr_and_cloud_samples/systor17-additional-sample.csv.gz", "systor", "gz"),
]

HEAD_BYTES = 3000


def put(out: Path, target: str, data: bytes) -> None:
    d = out / target
    d.mkdir(parents=True, exist_ok=True)
    (d / hashlib.sha1(data).hexdigest()[:16]).write_bytes(data)


def head(data: bytes, limit: int = HEAD_BYTES) -> bytes:
    """The whole lines within the first `limit` bytes."""
    if len(data) <= limit:
        return data
    cut = data[:limit]
    return cut[: cut.rfind(b"\n") + 1] or cut


def traces(shared: Path, out: Path) -> None:
    base = shared / "traces"
    for rel, fmt, comp in TRACES:
        p = base / rel
        if not p.is_file():
            print(f"fuzz_seeds: skipping {p} (absent)", file=sys.stderr)
            continue
        if comp == "gz":
            with gzip.open(p) as f:
                text = head(f.read(64 * 1024))
        elif comp == "bz2":
            with bz2.open(p) as f:
                text = head(f.read(64 * 1024))
        else:
            with open(p, "rb") as f:
                text = head(f.read(64 * 1024))
        sel = FORMATS.index(fmt)
        put(out, "trace_reader", bytes([sel]) + text)
        put(out, "trace_reader", bytes([sel | 0x80]) + head(text, 600))
        put(out, "trace_reader", bytes([DETECT]) + text)
        small = head(text, 800)
        put(out, "trace_reader", bytes([DECOMPRESS]) + gzip.compress(small))
        put(out, "trace_reader", bytes([DECOMPRESS | 0x80]) + bz2.compress(small))


def experiments(repo: Path, out: Path) -> None:
    files = sorted((repo / "examples").rglob("*.toml"))
    files.append(repo / "crates/spindle/src/default_experiment.toml")
    for p in files:
        text = p.read_bytes()
        if len(text) > 16 * 1024:
            continue
        put(out, "experiment_toml", text)
        # The same on the target's tiny drive (through the --set path), which it checks.
        put(out, "experiment_toml", text + b'\0drive.model="fuzz.toml"')
    put(out, "experiment_toml", b"\0workload.queue_depth=4\0array.disks=2")
    put(out, "experiment_toml", b"[run]\nrequests = 100\n\0drive.model=\"fuzz.toml\"")


def drives(repo: Path, out: Path) -> None:
    for p in sorted((repo / "drives").glob("*.toml")):
        put(out, "drive_toml", p.read_bytes())


def disksim(shared: Path, out: Path) -> None:
    base = shared / "validation" / "disksim"
    dirs = sorted(d for d in base.iterdir() if d.is_dir()) if base.is_dir() else []
    if not dirs:
        print(f"fuzz_seeds: skipping DiskSim models ({base} absent)", file=sys.stderr)
    for d in dirs:
        for parv in sorted(d.glob("*.parv")):
            text = parv.read_bytes()
            # Every file of the folder the model names (its sources, seek and layout files).
            for f in sorted(d.iterdir()):
                if f != parv and f.is_file() and f.name.encode() in text and f.name != "statdefs":
                    text += b"\n@@ " + f.name.encode() + b"\n" + f.read_bytes()
            put(out, "disksim_import", text)
        for seek in sorted(d.glob("*.seek")):
            put(out, "disksim_import", seek.read_bytes())


def nbd_opt(opt: int, data: bytes = b"") -> bytes:
    return struct.pack(">QII", 0x49484156454F5054, opt, len(data)) + data


def nbd_req(cmd: int, offset: int, length: int, flags: int = 0, payload: bytes = b"") -> bytes:
    return struct.pack(">IHHQQI", 0x25609513, flags, cmd, 0x1234, offset, length) + payload


def nbd(out: Path) -> None:
    flags = struct.pack(">I", 3)
    go = lambda name, infos=(): struct.pack(">I", len(name)) + name + struct.pack(
        ">H", len(infos)
    ) + b"".join(struct.pack(">H", i) for i in infos)
    reqs = (
        nbd_req(1, 0, 512, 0, b"\xab" * 512)
        + nbd_req(0, 0, 4096)
        + nbd_req(1, 4096, 8, 1, b"12345678")
        + nbd_req(3, 0, 0)
        + nbd_req(4, 8192, 4096)
        + nbd_req(6, 12288, 4096, 2)
        + nbd_req(0, (1 << 20) - 512, 1024)
        + nbd_req(2, 0, 0)
    )
    for seed in [
        flags + nbd_opt(7, go(b"")),
        flags + nbd_opt(3) + nbd_opt(6, go(b"disk", (0, 1, 2, 3))) + nbd_opt(7, go(b"ro", (3,))),
        flags + nbd_opt(8) + nbd_opt(5) + nbd_opt(99, b"xyz") + nbd_opt(1, b"disk"),
        flags + nbd_opt(2),
        flags + nbd_opt(7, go(b"nosuch")) + nbd_opt(7, go(b"disk")) + reqs,
        flags + nbd_opt(1, b"ro") + nbd_req(1, 0, 512, 0, b"\0" * 512) + nbd_req(0, 0, 512),
    ]:
        put(out, "nbd_handshake", seed)
    put(out, "nbd_transmission", reqs)
    put(out, "nbd_transmission", nbd_req(0, 0, 32 << 20) + nbd_req(7, 0, 512) + nbd_req(5, 0, 512))


def main() -> None:
    repo, shared, out = (Path(a) for a in sys.argv[1:4])
    for t in sorted((repo / "fuzz" / "seeds").iterdir()):
        d = out / t.name
        d.mkdir(parents=True, exist_ok=True)
        for f in t.iterdir():
            shutil.copy(f, d / f.name)
    traces(shared, out)
    experiments(repo, out)
    drives(repo, out)
    disksim(shared, out)
    nbd(out)
    for d in sorted(out.iterdir()):
        print(f"fuzz_seeds: {d.name}: {len(list(d.iterdir()))} seeds", file=sys.stderr)


if __name__ == "__main__":
    main()
