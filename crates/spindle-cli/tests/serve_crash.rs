//! `spindle serve` killed with SIGKILL at random moments during a verified write workload,
//! restarted on the same data directory, and checked: every write acknowledged before a
//! FLUSH that was itself acknowledged reads back intact (or a newer write of the block
//! does), and every block reads the same whichever copy serves it. The layouts write some
//! copies after answering the host (delayed mirror and rotational-replica writes, the
//! EW-Array's eager background copy, the DDM's move home) and the EW family keeps its map in
//! a map log, so a crash leaves copies to repair from the NVRAM table and a map to rebuild.
//!
//! The client is a minimal NBD client over the Unix socket (fixed newstyle, NBD_OPT_GO,
//! WRITE/READ/FLUSH with up to 16 requests in flight). Each 4 KiB block written carries
//! its block number, a version number and a pattern derived from both, so a torn or
//! misplaced block is told from an old one. `SPINDLE_CRASHES` sets the crashes per layout
//! (default 200, the minimum).
//!
//! Torn blocks: a disk's atomic unit is its sector, so a write the crash cut before it was
//! answered may have reached some sectors of a block and not others, on a real disk as
//! here: the kernel checks for a fatal signal between the pages of a `pwrite`, so SIGKILL
//! can cut a copy's write at a page boundary of its disk file, and an SR-Array places a
//! rotational replica at any sector of its track, so a 4 KiB block may straddle two pages.
//! If that copy is the one recovery copies from (for a write not yet answered the table
//! trusts every copy), the block comes back torn. A torn block passes only if every
//! 512-byte sector is intact, holds a version the block may hold, and no sector is older
//! than an *acknowledged* version another sector holds; the client then rewrites it, as a
//! file system's recovery would. The other layouts must never tear a block: RAID-10 keeps
//! each block within one page of its files, and the EW family writes a block to free space
//! and maps it only once it is written.

use spindle_emu::nbd::proto::*;
use std::collections::{HashMap, HashSet};
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BLOCK: usize = 4096;
/// Blocks the workload writes (a small hot region: overwrites race with propagations).
const BLOCKS: u64 = 96;
const QD: usize = 16;
/// A FLUSH after this many writes.
const FLUSH_EVERY: u32 = 24;

/// A small xorshift generator: the test's randomness and the blocks' patterns.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn payload(block: u64, version: u64) -> Vec<u8> {
    let mut b = Vec::with_capacity(BLOCK);
    b.extend_from_slice(&block.to_le_bytes());
    b.extend_from_slice(&version.to_le_bytes());
    let mut r = Rng((block.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ version) | 1);
    while b.len() < BLOCK {
        b.extend_from_slice(&r.next().to_le_bytes());
    }
    b
}

/// The version a block holds: `Some(0)` for never written (zeroes), `None` if it is
/// neither zeroes nor an intact block of this test at this place.
fn decode(block: u64, bytes: &[u8]) -> Option<u64> {
    if bytes.iter().all(|&b| b == 0) {
        return Some(0);
    }
    let v = u64::from_le_bytes(bytes[8..16].try_into().expect("8 bytes"));
    (payload(block, v) == bytes).then_some(v)
}

/// A disk's atomic unit: these drives' sector.
const SECTOR: usize = 512;

/// Which version each 512-byte sector of a block holds, of the versions the block may hold
/// (`None`: none of them — a sector torn or misplaced).
fn sector_versions(block: u64, bytes: &[u8], s: &BlockState) -> Vec<Option<u64>> {
    let candidates: Vec<(u64, Vec<u8>)> = std::iter::once(s.durable)
        .chain(s.maybe.iter().copied())
        .map(|v| match v {
            0 => (0, vec![0; BLOCK]),
            v => (v, payload(block, v)),
        })
        .collect();
    bytes
        .chunks(SECTOR)
        .enumerate()
        .map(|(i, sector)| {
            candidates
                .iter()
                .find(|(_, want)| want[i * SECTOR..(i + 1) * SECTOR] == *sector)
                .map(|&(v, _)| v)
        })
        .collect()
}

/// `held` as runs: "sectors 0-4 v12, sectors 5-7 v9"; "?" for a sector of no version.
fn describe(held: &[Option<u64>]) -> String {
    let mut out = Vec::new();
    let mut i = 0;
    while i < held.len() {
        let j = (i..held.len())
            .find(|&j| held[j] != held[i])
            .unwrap_or(held.len());
        let v = held[i].map_or("?".to_string(), |v| format!("v{v}"));
        out.push(format!("sectors {i}-{} {v}", j - 1));
        i = j;
    }
    out.join(", ")
}

/// What a block read back holds.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Held {
    Intact(u64),
    /// Torn by a crash in an unacknowledged write: each sector's version.
    Torn(Vec<u64>),
}

enum Sent {
    Write {
        block: u64,
        version: u64,
    },
    Read {
        block: u64,
    },
    /// The writes acknowledged before this FLUSH was sent: durable once it is answered.
    Flush {
        covers: Vec<(u64, u64)>,
    },
}

struct Client {
    s: UnixStream,
    next: u64,
    inflight: HashMap<u64, Sent>,
}

impl Client {
    fn connect(sock: &Path) -> std::io::Result<Client> {
        let mut s = UnixStream::connect(sock)?;
        s.set_read_timeout(Some(Duration::from_secs(60)))?;
        let mut hello = [0u8; 18];
        s.read_exact(&mut hello)?;
        assert_eq!(u64::from_be_bytes(hello[..8].try_into().unwrap()), NBDMAGIC);
        assert_eq!(
            u64::from_be_bytes(hello[8..16].try_into().unwrap()),
            IHAVEOPT
        );
        s.write_all(&(FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES).to_be_bytes())?;
        let name = b"spindle";
        let mut opt = Vec::new();
        opt.extend_from_slice(&IHAVEOPT.to_be_bytes());
        opt.extend_from_slice(&OPT_GO.to_be_bytes());
        opt.extend_from_slice(&(4 + name.len() as u32 + 2).to_be_bytes());
        opt.extend_from_slice(&(name.len() as u32).to_be_bytes());
        opt.extend_from_slice(name);
        opt.extend_from_slice(&0u16.to_be_bytes());
        s.write_all(&opt)?;
        loop {
            let mut h = [0u8; 20];
            s.read_exact(&mut h)?;
            assert_eq!(
                u64::from_be_bytes(h[..8].try_into().unwrap()),
                OPT_REPLY_MAGIC
            );
            let kind = u32::from_be_bytes(h[12..16].try_into().unwrap());
            let len = u32::from_be_bytes(h[16..20].try_into().unwrap());
            let mut data = vec![0; len as usize];
            s.read_exact(&mut data)?;
            match kind {
                REP_ACK => break,
                REP_INFO => {}
                k => panic!("NBD_OPT_GO refused: reply type {k:#x}"),
            }
        }
        Ok(Client {
            s,
            next: 0,
            inflight: HashMap::new(),
        })
    }

    fn send(&mut self, cmd: u16, offset: u64, data: &[u8], len: u32, what: Sent) -> bool {
        let mut m = Vec::with_capacity(28 + data.len());
        m.extend_from_slice(&REQUEST_MAGIC.to_be_bytes());
        m.extend_from_slice(&0u16.to_be_bytes());
        m.extend_from_slice(&cmd.to_be_bytes());
        m.extend_from_slice(&self.next.to_be_bytes());
        m.extend_from_slice(&offset.to_be_bytes());
        m.extend_from_slice(&len.to_be_bytes());
        m.extend_from_slice(data);
        self.inflight.insert(self.next, what);
        self.next += 1;
        self.s.write_all(&m).is_ok()
    }

    fn write(&mut self, block: u64, version: u64) -> bool {
        let data = payload(block, version);
        let what = Sent::Write { block, version };
        self.send(CMD_WRITE, block * BLOCK as u64, &data, BLOCK as u32, what)
    }

    fn read(&mut self, block: u64) -> bool {
        self.send(
            CMD_READ,
            block * BLOCK as u64,
            &[],
            BLOCK as u32,
            Sent::Read { block },
        )
    }

    fn flush(&mut self, covers: Vec<(u64, u64)>) -> bool {
        self.send(CMD_FLUSH, 0, &[], 0, Sent::Flush { covers })
    }

    /// The next reply: what it answers and a read's bytes; `None` once the server is gone.
    fn reply(&mut self) -> Option<(Sent, Vec<u8>)> {
        let mut h = [0u8; 16];
        self.s.read_exact(&mut h).ok()?;
        assert_eq!(
            u32::from_be_bytes(h[..4].try_into().unwrap()),
            SIMPLE_REPLY_MAGIC
        );
        let err = u32::from_be_bytes(h[4..8].try_into().unwrap());
        let handle = u64::from_be_bytes(h[8..16].try_into().unwrap());
        let sent = self
            .inflight
            .remove(&handle)
            .expect("a reply to a request sent");
        assert_eq!(err, 0, "the server answered an error");
        let mut data = Vec::new();
        if matches!(sent, Sent::Read { .. }) {
            data = vec![0; BLOCK];
            self.s.read_exact(&mut data).ok()?;
        }
        Some((sent, data))
    }
}

/// What the client knows of each block.
#[derive(Clone, Default)]
struct BlockState {
    /// The newest version known durable (acknowledged before an acknowledged FLUSH).
    durable: u64,
    /// Versions sent since then, acknowledged or not: any may have landed.
    maybe: Vec<u64>,
}

struct Server {
    child: Child,
    sock: PathBuf,
}

fn start(exp: &Path, data: &Path, sock: &Path) -> Server {
    let _ = std::fs::remove_file(sock);
    let child = Command::new(env!("CARGO_BIN_EXE_spindle"))
        .arg("serve")
        .arg(exp)
        .arg("--data")
        .arg(data)
        .arg("--unix")
        .arg(sock)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spindle serve starts");
    Server {
        child,
        sock: sock.to_path_buf(),
    }
}

impl Server {
    fn connect(&mut self) -> Client {
        let t0 = Instant::now();
        loop {
            if let Ok(c) = Client::connect(&self.sock) {
                return c;
            }
            if let Some(status) = self.child.try_wait().expect("wait") {
                panic!("spindle serve exited before serving: {status}");
            }
            assert!(
                t0.elapsed() < Duration::from_secs(60),
                "spindle serve did not listen within 60 s"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn kill(mut self) {
        let _ = self.child.kill(); // SIGKILL
        let _ = self.child.wait();
    }
}

/// Reads every block the workload touched `rounds` times and checks each against what the
/// client knows (`acked`: every version ever acknowledged); returns what each holds (every
/// read of a block must agree).
fn verify(
    c: &mut Client,
    state: &[BlockState],
    acked: &HashSet<u64>,
    rounds: u32,
    what: &str,
) -> Vec<Held> {
    let mut held: Vec<Option<Held>> = vec![None; BLOCKS as usize];
    let mut todo: Vec<u64> = (0..rounds).flat_map(|_| 0..BLOCKS).collect();
    todo.reverse();
    while !todo.is_empty() || !c.inflight.is_empty() {
        while c.inflight.len() < QD {
            let Some(b) = todo.pop() else { break };
            assert!(c.read(b), "{what}: the restarted server went away");
        }
        let (sent, data) = c.reply().unwrap_or_else(|| panic!("{what}: no reply"));
        let Sent::Read { block } = sent else {
            unreachable!("only reads are sent")
        };
        let s = &state[block as usize];
        let h = match decode(block, &data) {
            Some(v) => {
                assert!(
                    v == s.durable || s.maybe.contains(&v),
                    "{what}: block {block} holds version {v}; durable {} (later writes {:?})",
                    s.durable,
                    s.maybe
                );
                Held::Intact(v)
            }
            None => torn(block, &data, s, acked).unwrap_or_else(|why| panic!("{what}: {why}")),
        };
        let first = held[block as usize].get_or_insert_with(|| h.clone());
        assert_eq!(
            *first, h,
            "{what}: block {block} reads differently from two copies"
        );
    }
    held.into_iter()
        .map(|h| h.unwrap_or(Held::Intact(0)))
        .collect()
}

/// Checks a block that is not one intact version: each sector intact and a version the
/// block may hold, and no sector older than an acknowledged version another one holds (an
/// acknowledged write reached every sector, or a newer write did); `Err` says why not.
fn torn(block: u64, data: &[u8], s: &BlockState, acked: &HashSet<u64>) -> Result<Held, String> {
    let per_sector = sector_versions(block, data, s);
    let why = || {
        format!(
            "block {block} is torn or misplaced: {} (durable {}, later writes {:?}, \
             of which acknowledged {:?})",
            describe(&per_sector),
            s.durable,
            s.maybe,
            s.maybe
                .iter()
                .filter(|v| acked.contains(v))
                .collect::<Vec<_>>()
        )
    };
    let Some(versions) = per_sector.iter().copied().collect::<Option<Vec<u64>>>() else {
        return Err(why());
    };
    let oldest = *versions.iter().min().expect("a block has sectors");
    if versions.iter().any(|v| *v != oldest && acked.contains(v)) {
        return Err(why());
    }
    Ok(Held::Torn(versions))
}

/// A parity group's disk files: `disks` of them, stripe units of `unit` bytes; the first
/// `stripes` stripes (those the workload writes) are checked after each recovery.
#[derive(Copy, Clone)]
struct ParityCheck {
    disks: usize,
    unit: usize,
    stripes: usize,
}

/// Every checked stripe's units XOR to zero across the group's disk files: the parity is
/// the XOR of the data.
fn assert_parity(data: &Path, p: ParityCheck, what: &str) {
    use std::os::unix::fs::FileExt;
    let len = p.unit * p.stripes;
    let mut x = vec![0u8; len];
    let mut buf = vec![0u8; len];
    for d in 0..p.disks {
        let f = std::fs::File::open(data.join(format!("disk-{d:03}.img"))).expect("a disk file");
        f.read_exact_at(&mut buf, 0).expect("the checked stripes");
        for (a, b) in x.iter_mut().zip(&buf) {
            *a ^= b;
        }
    }
    if let Some(at) = x.iter().position(|&b| b != 0) {
        panic!(
            "{what}: stripe {} (byte {} of its unit): parity is not the XOR of the data",
            at / p.unit,
            at % p.unit
        );
    }
}

/// `blocks_atomic`: the layout never leaves a block torn (see the module's comment).
fn crash_many(layout: &str, toml: &str, blocks_atomic: bool) {
    crash_many_checked(layout, toml, blocks_atomic, None)
}

/// [`crash_many`], checking a parity group's parity after every recovery.
fn crash_many_checked(layout: &str, toml: &str, blocks_atomic: bool, parity: Option<ParityCheck>) {
    let crashes: u32 = std::env::var("SPINDLE_CRASHES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(200);
    let dir = tempfile::tempdir().expect("tempdir");
    let exp = dir.path().join("exp.toml");
    std::fs::write(&exp, toml).expect("write experiment");
    let data = dir.path().join("data");
    let sock = dir.path().join("nbd.sock");
    let mut rng = Rng(0x5EED_0000 ^ (layout.len() as u64 * 7919));
    let mut state = vec![BlockState::default(); BLOCKS as usize];
    let mut version = 0u64;
    let (mut acked_total, mut durable_total, mut tears) = (0u64, 0u64, 0u64);
    let mut acked = HashSet::new();
    for cycle in 0..=crashes {
        let what = format!("{layout}, after crash {cycle}");
        let mut server = start(&exp, &data, &sock);
        let mut c = server.connect();
        let rounds = if cycle == crashes { 3 } else { 1 };
        let held = verify(&mut c, &state, &acked, rounds, &what);
        if let Some(p) = parity {
            // Only reads since the recovery: the files hold what it left.
            assert_parity(&data, p, &what);
        }
        let torn: Vec<u64> = (0..BLOCKS)
            .filter(|&b| matches!(held[b as usize], Held::Torn(_)))
            .collect();
        assert!(
            !blocks_atomic || torn.is_empty(),
            "{what}: blocks {torn:?} torn, on a layout that must never tear one: {:?}",
            torn.iter().map(|&b| &held[b as usize]).collect::<Vec<_>>()
        );
        tears += torn.len() as u64;
        if cycle == crashes {
            server.kill();
            break;
        }
        // What is held now is the baseline (a torn block rewritten whole, as a file
        // system's recovery would): make it durable before the next crash.
        let mut baseline: Vec<u64> = held
            .iter()
            .map(|h| match h {
                Held::Intact(v) => *v,
                Held::Torn(_) => 0, // rewritten just below
            })
            .collect();
        for &b in &torn {
            version += 1;
            baseline[b as usize] = version;
            assert!(c.write(b, version), "{what}: the server went away");
        }
        while !c.inflight.is_empty() {
            c.reply()
                .unwrap_or_else(|| panic!("{what}: a rewrite of a torn block unanswered"));
        }
        assert!(c.flush(Vec::new()));
        c.reply()
            .unwrap_or_else(|| panic!("{what}: flush unanswered"));
        for (s, v) in state.iter_mut().zip(baseline) {
            *s = BlockState {
                durable: v,
                maybe: Vec::new(),
            };
        }
        // The workload, killed after a random time.
        let kill_after = Duration::from_millis(20 + rng.below(400));
        let t0 = Instant::now();
        let mut since_flush = 0u32;
        let mut acked_unflushed: Vec<(u64, u64)> = Vec::new();
        'load: loop {
            while c.inflight.len() < QD {
                let ok = if since_flush >= FLUSH_EVERY {
                    since_flush = 0;
                    c.flush(std::mem::take(&mut acked_unflushed))
                } else {
                    since_flush += 1;
                    version += 1;
                    let b = rng.below(BLOCKS);
                    state[b as usize].maybe.push(version);
                    c.write(b, version)
                };
                if !ok {
                    break 'load;
                }
            }
            if t0.elapsed() >= kill_after {
                break;
            }
            match c.reply() {
                Some((Sent::Write { block, version }, _)) => {
                    acked_total += 1;
                    acked.insert(version);
                    acked_unflushed.push((block, version));
                }
                Some((Sent::Flush { covers }, _)) => {
                    for (b, v) in covers {
                        let s = &mut state[b as usize];
                        if v > s.durable {
                            s.durable = v;
                            s.maybe.retain(|&m| m > v);
                            durable_total += 1;
                        }
                    }
                }
                Some((Sent::Read { .. }, _)) => unreachable!("no reads in the workload"),
                None => break,
            }
        }
        server.kill();
    }
    eprintln!(
        "{layout}: {crashes} crashes, {acked_total} writes acknowledged, {durable_total} \
         made durable by a flush, all intact; {tears} blocks torn by a crash in an \
         unacknowledged write (every sector intact)"
    );
    assert!(
        durable_total > u64::from(crashes),
        "the workload made too few writes durable to test anything"
    );
}

/// The torn-block rule on made-up blocks: sectors of two versions pass only when the newer
/// was never acknowledged; a sector of no version, or of a version older than the durable
/// one, fails.
#[test]
fn a_torn_block_passes_only_if_an_unacknowledged_write_was_cut() {
    let block = 5;
    let mix = |old: u64, new: u64, cut: usize| {
        let mut b = payload(block, old);
        b[cut * SECTOR..].copy_from_slice(&payload(block, new)[cut * SECTOR..]);
        b
    };
    let s = BlockState {
        durable: 3,
        maybe: vec![7, 9],
    };
    let check = |data: &[u8], acked: &[u64]| {
        let acked: HashSet<u64> = acked.iter().copied().collect();
        torn(block, data, &s, &acked).ok()
    };
    let cut = mix(3, 7, 5);
    assert_eq!(
        check(&cut, &[]),
        Some(Held::Torn(vec![3, 3, 3, 3, 3, 7, 7, 7]))
    );
    assert_eq!(
        check(&cut, &[9]),
        Some(Held::Torn(vec![3, 3, 3, 3, 3, 7, 7, 7]))
    );
    // Version 7 was acknowledged: it reached every sector, or a newer write did.
    assert_eq!(check(&cut, &[7]), None);
    // An acknowledged write under an unacknowledged one that was cut.
    assert_eq!(
        check(&mix(7, 9, 2), &[7]),
        Some(Held::Torn(vec![7, 7, 9, 9, 9, 9, 9, 9]))
    );
    // Older than durable, a byte changed inside a sector, another block's bytes.
    assert_eq!(check(&mix(1, 7, 4), &[]), None);
    let mut flipped = cut.clone();
    flipped[SECTOR + 100] ^= 1;
    assert_eq!(check(&flipped, &[]), None);
    let mut foreign = cut;
    foreign[..SECTOR].copy_from_slice(&payload(block + 1, 3)[..SECTOR]);
    assert_eq!(check(&foreign, &[]), None);
}

const DRIVE: &str = "seed = 7\n[drive]\nmodel = \"st39133lwv\"\n";
const LOAD: &str = "[workload]\nkind = \"closed\"\nqueue_depth = 16\nread_fraction = 0.0\n\
                    size_bytes = 4096\n[run]\nrequests = 1000\n";

#[test]
fn mirrored_raid10_with_delayed_copies_loses_no_flushed_write() {
    crash_many(
        "raid-10 2x1x2, delayed",
        &format!(
            "{DRIVE}[array]\nlayout = \"raid-10\"\nds = 2\nscheduler = \"satf\"\n\
             writes = \"delayed\"\nnvram_entries = 32\ndata_set_bytes = 67108864\n{LOAD}"
        ),
        true,
    );
}

#[test]
fn sr_array_with_delayed_replicas_loses_no_flushed_write() {
    crash_many(
        "sr-array 2x3, delayed",
        &format!(
            "{DRIVE}[array]\nlayout = \"sr-array\"\nds = 2\ndr = 3\nscheduler = \"satf\"\n\
             writes = \"delayed\"\nnvram_entries = 32\ndata_set_bytes = 67108864\n{LOAD}"
        ),
        false,
    );
}

#[test]
fn ew_array_with_an_eager_background_copy_loses_no_flushed_write() {
    // A small map NVRAM (252 update records per buffer) makes the map log append and
    // checkpoint many times per run, so crashes land among appends and checkpoints too.
    crash_many(
        "ew-array 2x1x2, one synchronous copy",
        &format!(
            "{DRIVE}[array]\nlayout = \"ew-array\"\ndm = 2\nds = 1\ndd = 2\nsync_copies = 1\n\
             scheduler = \"satf-ew\"\nmap_nvram_bytes = 4096\n\
             data_set_bytes = 67108864\n{LOAD}"
        ),
        true,
    );
}

#[test]
fn paged_disk_with_bad_tenants_loses_no_flushed_write() {
    // 4 KiB pages (the client's block), 4 copies each; a small map NVRAM (60 records) makes
    // the page map log flush often. A page rewritten in place (its only copy: a bad tenant
    // under the head) may tear, as on a standard disk.
    crash_many(
        "paged 4-way, bad tenants",
        &format!(
            "{DRIVE}[array]\nlayout = \"paged\"\npage_kb = 4\nreplicas = 4\n\
             map_nvram_bytes = 512\n{LOAD}"
        ),
        false,
    );
}

#[test]
fn paged_disk_with_its_idle_cleaner_loses_no_flushed_write() {
    // As above, with the cleaner copying pages home between the load's requests: a crash may
    // fall inside a cleaning copy or before its map record is flushed.
    crash_many(
        "paged 4-way, idle cleaner",
        &format!(
            "{DRIVE}[array]\nlayout = \"paged\"\npage_kb = 4\nreplicas = 4\n\
             map_nvram_bytes = 512\ncleaner = \"idle\"\ncleaner_idle_ms = 1.0\n{LOAD}"
        ),
        false,
    );
}

#[test]
fn ddm_with_its_background_move_home_loses_no_flushed_write() {
    crash_many(
        "ddm 1x2, two synchronous copies",
        &format!(
            "{DRIVE}[array]\nlayout = \"ddm\"\nds = 1\ndd = 2\nscheduler = \"freebw-hybrid\"\n\
             map_nvram_bytes = 4096\ndata_set_bytes = 67108864\n{LOAD}"
        ),
        true,
    );
}

#[test]
fn raid5_without_a_write_cache_loses_no_flushed_write_and_keeps_parity() {
    // Parity is recomputed from the data of every stripe a crash caught mid-update (the
    // NVRAM write-intent records): checked in the disk files after every recovery, which
    // also checks the emulator's XOR of host and disk bytes. A kill seldom lands between an
    // update's parity and data writes (performed microseconds apart); the library's
    // byte-model test (raid5::array::tests::data) crashes between every two. The
    // 96 blocks of 4 KiB the workload writes are the first six stripes (four data units
    // of 16 KiB each).
    crash_many_checked(
        "raid-5 1x5, no write cache",
        &format!(
            "{DRIVE}[array]\nlayout = \"raid-5\"\ndisks = 5\nwrite_cache_bytes = 0\n\
             stripe_unit_bytes = 16384\ndata_set_bytes = 67108864\n{LOAD}"
        ),
        true,
        Some(ParityCheck {
            disks: 5,
            unit: 16384,
            stripes: 6,
        }),
    );
}

#[test]
fn raid4_without_a_write_cache_loses_no_flushed_write() {
    // 64 KiB units, three data units a stripe: the 384 KiB written are two stripes.
    crash_many_checked(
        "raid-4 1x4, no write cache",
        &format!(
            "{DRIVE}[array]\nlayout = \"raid-4\"\ndisks = 4\ngroup_width = 4\n\
             write_cache_bytes = 0\nscheduler = \"satf\"\ndata_set_bytes = 67108864\n{LOAD}"
        ),
        true,
        Some(ParityCheck {
            disks: 4,
            unit: 65536,
            stripes: 2,
        }),
    );
}

#[test]
fn raid5_with_its_nvram_write_cache_loses_no_acknowledged_write() {
    // The default 1 MiB write cache is NVRAM: a write is answered once its bytes are in the
    // image, and destaged later (linear threshold). Recovery writes every cached block newer
    // than the disks and recomputes those stripes' parity, checked in the disk files after
    // every recovery. A kill in the middle of an in-place overwrite of a dirty block in the
    // mapped image can leave it torn (an unacknowledged write cut), so tears are allowed.
    crash_many_checked(
        "raid-5 1x5, 1 MiB write cache",
        &format!(
            "{DRIVE}[array]\nlayout = \"raid-5\"\ndisks = 5\nstripe_unit_bytes = 16384\n\
             data_set_bytes = 67108864\n{LOAD}"
        ),
        false,
        Some(ParityCheck {
            disks: 5,
            unit: 16384,
            stripes: 6,
        }),
    );
}
