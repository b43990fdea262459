//! `spindle serve --record FILE`: the host requests the emulator serves, written as a
//! DiskSim ASCII trace that spindle's own readers replay (`spindle run` with
//! `workload.kind = "trace"`, `spindle trace stats`).
//!
//! One line per read or write the core accepted: `arrival_ms device lba sectors flags`, the
//! arrival in milliseconds since the emulator started with six decimals (exact to the
//! nanosecond: the clock thread's own arrival instant, the one the core was given), device
//! 0, the address and length in 512-byte sectors, flags 1 for a read and 0 for a write.
//! TRIM and WRITE_ZEROES are recorded as writes (the emulator serves them as timed writes
//! of zeroes); FUA is not recorded (a replay has no data to make durable). A FLUSH has no
//! DiskSim form: it is a comment line, `# flush ARRIVAL_MS`, which the readers skip (so a
//! replay ignores it, as the simulator has no host cache to flush) and which keeps the
//! commit points for whoever reads the file. Requests refused before entering the core
//! (unaligned, beyond the array, empty) are not recorded. The file opens with comment
//! lines saying what it is and ends with a summary comment after a clean stop.
//!
//! Cost on the clock thread: a push into a batch; a full batch (or one 100 ms old) is sent
//! to a writer thread, which formats and writes it through a 1 MiB buffered writer. The
//! clock thread never formats, writes or waits for the file. A write error stops the
//! recording (the emulator carries on) and is reported at the end.

use spindle::{Nanos, Op};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, Sender};
use std::thread::JoinHandle;

/// Entries per batch handed to the writer thread.
const BATCH: usize = 1024;
/// A batch older than this is handed over when the next request arrives, so a long
/// recording reaches the file as it goes.
const BATCH_AGE_NS: u64 = 100_000_000;
/// The writer thread's buffer.
const BUFFER_BYTES: usize = 1 << 20;
/// The trace's sector: DiskSim addresses are in 512-byte sectors.
const TRACE_SECTOR: u64 = 512;

/// The record file, opened (created or truncated) before the emulator starts, so a bad
/// path is an error before anything is served.
pub struct RecordFile {
    path: PathBuf,
    file: File,
}

impl RecordFile {
    /// Creates `path`, or truncates it if it is a regular file; refuses anything else
    /// (a directory, a device, a FIFO, a socket) with the reason.
    pub fn create(path: &Path) -> Result<RecordFile, String> {
        let shown = path.display();
        if let Ok(meta) = std::fs::metadata(path) {
            if !meta.is_file() {
                return Err(format!(
                    "--record {shown}: exists and is not a regular file ({}); not overwriting it",
                    kind(&meta.file_type())
                ));
            }
        }
        // O_NONBLOCK: a FIFO that appeared since the check fails to open instead of
        // blocking; the type is checked again on what was opened.
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
            .open(path)
            .map_err(|e| format!("--record {shown}: cannot create it: {e}"))?;
        let meta = file
            .metadata()
            .map_err(|e| format!("--record {shown}: {e}"))?;
        if !meta.is_file() {
            return Err(format!(
                "--record {shown}: is not a regular file ({}); not overwriting it",
                kind(&meta.file_type())
            ));
        }
        file.set_len(0)
            .map_err(|e| format!("--record {shown}: cannot truncate it: {e}"))?;
        Ok(RecordFile {
            path: path.to_path_buf(),
            file,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

fn kind(t: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if t.is_dir() {
        "a directory"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

/// What a recording wrote, reported when the emulator stops.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Recorded {
    pub path: PathBuf,
    pub reads: u64,
    pub writes: u64,
    pub flushes: u64,
    /// The first error writing the file: the recording stopped there and is incomplete.
    pub error: Option<String>,
}

impl std::fmt::Display for Recorded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "recorded {} requests ({} reads, {} writes) and {} flushes to {}",
            self.reads + self.writes,
            self.reads,
            self.writes,
            self.flushes,
            self.path.display()
        )?;
        if let Some(e) = &self.error {
            write!(f, "; incomplete: {e}")?;
        }
        Ok(())
    }
}

/// One recorded host command; times are the clock thread's, since the emulator started.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Entry {
    Io {
        arrival: Nanos,
        op: Op,
        /// Byte offset and length (multiples of the array's sector).
        offset: u64,
        len: u32,
    },
    Flush {
        arrival: Nanos,
    },
}

impl Entry {
    fn arrival(&self) -> Nanos {
        match *self {
            Entry::Io { arrival, .. } | Entry::Flush { arrival } => arrival,
        }
    }
}

/// The clock thread's end of a recording.
pub(crate) struct Recorder {
    tx: Option<Sender<Vec<Entry>>>,
    batch: Vec<Entry>,
    thread: Option<JoinHandle<Recorded>>,
    last: Nanos,
}

impl Recorder {
    /// Starts the writer thread on `file`; `header` (lines without `# `) opens the file as
    /// comments. `sector_bytes` is the array's: it must be a multiple of the trace's 512.
    pub fn start(
        file: RecordFile,
        header: &[String],
        sector_bytes: u32,
    ) -> Result<Recorder, String> {
        if u64::from(sector_bytes) % TRACE_SECTOR != 0 {
            return Err(format!(
                "--record {}: the trace counts 512-byte sectors, and this array's sector is \
                 {sector_bytes} bytes",
                file.path.display()
            ));
        }
        let (tx, rx) = mpsc::channel();
        let header = header.to_vec();
        let thread = std::thread::Builder::new()
            .name("spindle-record".into())
            .spawn(move || write_all(file, &header, rx))
            .map_err(|e| format!("cannot start the record thread: {e}"))?;
        Ok(Recorder {
            tx: Some(tx),
            batch: Vec::with_capacity(BATCH),
            thread: Some(thread),
            last: Nanos::ZERO,
        })
    }

    /// Records `e` (arrivals must not go back in time): a push; every [`BATCH`] entries,
    /// or when the batch is [`BATCH_AGE_NS`] old, the batch goes to the writer thread.
    pub fn record(&mut self, e: Entry) {
        let at = e.arrival();
        assert!(
            at >= self.last,
            "recorded arrival went back: {at:?} < {:?}",
            self.last
        );
        self.last = at;
        let oldest = self.batch.first().map_or(at, Entry::arrival);
        self.batch.push(e);
        if self.batch.len() >= BATCH || at.0.saturating_sub(oldest.0) >= BATCH_AGE_NS {
            self.hand_over();
        }
    }

    fn hand_over(&mut self) {
        if self.batch.is_empty() {
            return;
        }
        let full = std::mem::replace(&mut self.batch, Vec::with_capacity(BATCH));
        if let Some(tx) = &self.tx {
            // The writer only ends once the sender is dropped: a send cannot fail here.
            let _ = tx.send(full);
        }
    }

    /// Hands over what is left, waits for the writer to flush and `fsync` the file.
    pub fn finish(mut self) -> Recorded {
        self.hand_over();
        self.tx = None;
        let thread = self.thread.take().expect("the writer runs until finish");
        thread.join().unwrap_or_else(|_| Recorded {
            error: Some("the record thread panicked".into()),
            ..Recorded::default()
        })
    }
}

/// The writer thread: formats every batch into the buffered file; at the end a summary
/// comment, a flush and an `fsync`.
fn write_all(file: RecordFile, header: &[String], rx: Receiver<Vec<Entry>>) -> Recorded {
    let RecordFile { path, file } = file;
    let mut out = BufWriter::with_capacity(BUFFER_BYTES, file);
    let mut rec = Recorded {
        path,
        ..Recorded::default()
    };
    let mut failed = header.iter().try_for_each(|l| writeln!(out, "# {l}")).err();
    // Each line is formatted whole, then written with one call: the buffer is flushed
    // between lines, never inside one (a kill can still cut the flush's own write).
    let mut line = Vec::with_capacity(64);
    while let Ok(batch) = rx.recv() {
        for e in &batch {
            match *e {
                Entry::Io { op: Op::Read, .. } => rec.reads += 1,
                Entry::Io { op: Op::Write, .. } => rec.writes += 1,
                Entry::Flush { .. } => rec.flushes += 1,
            }
            if failed.is_none() {
                line.clear();
                failed = write_entry(&mut line, e)
                    .and_then(|()| out.write_all(&line))
                    .err();
            }
        }
    }
    if failed.is_none() {
        failed = writeln!(
            out,
            "# end: {} requests ({} reads, {} writes), {} flushes",
            rec.reads + rec.writes,
            rec.reads,
            rec.writes,
            rec.flushes
        )
        .and_then(|()| out.flush())
        .and_then(|()| out.get_ref().sync_all())
        .err();
    }
    rec.error = failed.map(|e| format!("{}: {e}", rec.path.display()));
    rec
}

/// `ms.nnnnnn`: milliseconds with six decimals, exact to the nanosecond.
fn write_ms(out: &mut impl Write, t: Nanos) -> std::io::Result<()> {
    write!(out, "{}.{:06}", t.0 / 1_000_000, t.0 % 1_000_000)
}

fn write_entry(out: &mut impl Write, e: &Entry) -> std::io::Result<()> {
    match *e {
        Entry::Io {
            arrival,
            op,
            offset,
            len,
        } => {
            write_ms(out, arrival)?;
            let flags = if op == Op::Read { 1 } else { 0 };
            writeln!(
                out,
                " 0 {} {} {flags}",
                offset / TRACE_SECTOR,
                u64::from(len) / TRACE_SECTOR
            )
        }
        Entry::Flush { arrival } => {
            out.write_all(b"# flush ")?;
            write_ms(out, arrival)?;
            out.write_all(b"\n")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use spindle::workload::trace::{self, TraceFormat, TraceRecord};

    fn io(arrival: u64, op: Op, offset: u64, len: u32) -> Entry {
        Entry::Io {
            arrival: Nanos(arrival),
            op,
            offset,
            len,
        }
    }

    /// Every entry, more than a batch of them, comes back through the DiskSim reader with
    /// its exact arrival; flushes are comments; the summary is the last line.
    #[test]
    fn a_recording_reads_back_exactly() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rec.trace");
        let file = RecordFile::create(&path).unwrap();
        let mut r = Recorder::start(file, &["test header".into()], 512).unwrap();
        let mut want = Vec::new();
        for i in 0..(3 * BATCH as u64 + 5) {
            let op = if i % 3 == 0 { Op::Read } else { Op::Write };
            let e = io(i * 1_234_567 + 1, op, i * 4096, 8192);
            r.record(e);
            want.push(TraceRecord {
                arrival: Nanos(i * 1_234_567 + 1),
                device: 0,
                lba: i * 8,
                sectors: 16,
                op,
            });
            if i % 100 == 7 {
                r.record(Entry::Flush {
                    arrival: Nanos(i * 1_234_567 + 2),
                });
            }
        }
        let done = r.finish();
        assert_eq!(done.error, None);
        assert_eq!(done.reads + done.writes, want.len() as u64);
        assert_eq!(done.flushes, 31);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.starts_with("# test header\n0.000001 0 0 16 1\n"),
            "{text:.80}"
        );
        assert!(
            text.contains("\n# flush 8.641971\n"),
            "the eighth request's flush"
        );
        assert!(text.ends_with("# end: 3077 requests (1026 reads, 2051 writes), 31 flushes\n"));
        let got: Vec<TraceRecord> = trace::open(TraceFormat::DiskSim, text.as_bytes())
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(got, want);
        let (format, detected) = trace::detect_and_open(text.as_bytes()).unwrap();
        assert_eq!(format, TraceFormat::DiskSim);
        assert_eq!(detected.count(), want.len());
    }

    #[test]
    fn refuses_what_is_not_a_regular_file() {
        let dir = tempfile::tempdir().unwrap();
        let e = RecordFile::create(dir.path()).err().unwrap();
        assert!(
            e.contains("exists and is not a regular file (a directory)"),
            "{e}"
        );
        let e = RecordFile::create(Path::new("/dev/null")).err().unwrap();
        assert!(e.contains("(a character device)"), "{e}");
        let e = RecordFile::create(&dir.path().join("no/such/dir/rec.trace"))
            .err()
            .unwrap();
        assert!(
            e.contains("cannot create it: No such file or directory"),
            "{e}"
        );
        // A regular file is truncated.
        let p = dir.path().join("old.trace");
        std::fs::write(&p, "old contents\n").unwrap();
        let r = Recorder::start(RecordFile::create(&p).unwrap(), &[], 512).unwrap();
        let done = r.finish();
        assert_eq!(done.error, None);
        assert_eq!(
            std::fs::read_to_string(&p).unwrap(),
            "# end: 0 requests (0 reads, 0 writes), 0 flushes\n"
        );
        let e = Recorder::start(RecordFile::create(&p).unwrap(), &[], 520)
            .err()
            .unwrap();
        assert!(e.contains("sector is 520 bytes"), "{e}");
    }
}
