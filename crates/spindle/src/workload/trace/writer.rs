//! Trace writers: DiskSim ASCII, MQSim ASCII, SPC, MSR Cambridge CSV and fio iolog v3.
//!
//! A [`TraceWriter`] formats one record per line into a reused buffer and writes it to any
//! `Write` (give it a `BufWriter`; it does not buffer itself). What each format keeps:
//!
//! | format  | time written as                  | exact round trip?                              |
//! |---------|----------------------------------|------------------------------------------------|
//! | disksim | ms with 6 decimals               | yes                                            |
//! | mqsim   | integer ns                       | yes                                            |
//! | spc     | s with 9 decimals; size in bytes | yes                                            |
//! | msr     | FILETIME (100-ns ticks)          | times are truncated to 100 ns and, on reading, made relative to the first record |
//! | fio3    | µs since the start               | times truncated to µs; devices renumbered 0, 1, … in order of first appearance |
//!
//! MSR timestamps are written as the Unix epoch in FILETIME (116444736000000000) plus the
//! arrival; the host name is `spindle` and the response time 0. fio files are named
//! `spindle-dev<N>` for device N; each is `add`ed and `open`ed before its first I/O and
//! `close`d at [`TraceWriter::finish`].

use std::collections::BTreeSet;
use std::io::{self, Write};

use super::{TraceFormat, TraceRecord};
use crate::Op;

/// The Windows FILETIME of 1970-01-01 00:00:00 UTC, in 100-ns ticks.
pub const UNIX_EPOCH_FILETIME: u64 = 116_444_736_000_000_000;

/// A format spindle can read but not write.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot write {format} traces (writable: disksim, mqsim, spc, msr, fio3)")]
pub struct UnwritableFormat {
    pub format: TraceFormat,
}

/// A streaming trace writer.
pub struct TraceWriter<W: Write> {
    out: W,
    format: TraceFormat,
    line: Vec<u8>,
    header_written: bool,
    fio_open: BTreeSet<u32>,
    last_us: u64,
    records: u64,
}

fn push_u64(buf: &mut Vec<u8>, mut v: u64) {
    let mut tmp = [0u8; 20];
    let mut i = tmp.len();
    loop {
        i -= 1;
        tmp[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    buf.extend_from_slice(&tmp[i..]);
}

/// Pushes `v` zero-padded to `width` digits (`v < 10^width`, `width <= 20`).
fn push_padded(buf: &mut Vec<u8>, mut v: u64, width: usize) {
    assert!(width <= 20, "a u64 has at most 20 digits");
    let mut tmp = [b'0'; 20];
    for slot in tmp[20 - width..].iter_mut().rev() {
        *slot = b'0' + (v % 10) as u8;
        v /= 10;
    }
    assert_eq!(v, 0, "value has more than {width} digits");
    buf.extend_from_slice(&tmp[20 - width..]);
}

impl<W: Write> TraceWriter<W> {
    pub fn new(format: TraceFormat, out: W) -> Result<Self, UnwritableFormat> {
        if !format.is_writable() {
            return Err(UnwritableFormat { format });
        }
        Ok(TraceWriter {
            out,
            format,
            line: Vec::with_capacity(128),
            header_written: false,
            fio_open: BTreeSet::new(),
            last_us: 0,
            records: 0,
        })
    }

    pub fn format(&self) -> TraceFormat {
        self.format
    }

    /// Records written so far.
    pub fn records(&self) -> u64 {
        self.records
    }

    fn header(&mut self) -> io::Result<()> {
        if !self.header_written {
            self.header_written = true;
            if self.format == TraceFormat::Fio3 {
                self.out.write_all(super::fio::FIO3_HEADER.as_bytes())?;
                self.out.write_all(b"\n")?;
            }
        }
        Ok(())
    }

    fn push_fio_file_line(&mut self, us: u64, device: u32, action: &[u8]) {
        push_u64(&mut self.line, us);
        self.line.extend_from_slice(b" spindle-dev");
        push_u64(&mut self.line, u64::from(device));
        self.line.push(b' ');
        self.line.extend_from_slice(action);
        self.line.push(b'\n');
    }

    /// Writes one record.
    pub fn write(&mut self, rec: &TraceRecord) -> io::Result<()> {
        self.header()?;
        let l = &mut self.line;
        l.clear();
        let t = rec.arrival.0;
        let read = rec.op == Op::Read;
        let bytes = u64::from(rec.sectors) * 512;
        match self.format {
            TraceFormat::DiskSim => {
                push_u64(l, t / 1_000_000);
                l.push(b'.');
                push_padded(l, t % 1_000_000, 6);
                for v in [u64::from(rec.device), rec.lba, u64::from(rec.sectors)] {
                    l.push(b' ');
                    push_u64(l, v);
                }
                l.extend_from_slice(if read { b" 1\n" } else { b" 0\n" });
            }
            TraceFormat::MqSim => {
                for (i, v) in [t, u64::from(rec.device), rec.lba, u64::from(rec.sectors)]
                    .into_iter()
                    .enumerate()
                {
                    if i > 0 {
                        l.push(b' ');
                    }
                    push_u64(l, v);
                }
                l.extend_from_slice(if read { b" 1\n" } else { b" 0\n" });
            }
            TraceFormat::Spc => {
                push_u64(l, u64::from(rec.device));
                l.push(b',');
                push_u64(l, rec.lba);
                l.push(b',');
                push_u64(l, bytes);
                l.extend_from_slice(if read { b",r," } else { b",w," });
                push_u64(l, t / 1_000_000_000);
                l.push(b'.');
                push_padded(l, t % 1_000_000_000, 9);
                l.push(b'\n');
            }
            TraceFormat::Msr => {
                push_u64(l, UNIX_EPOCH_FILETIME + t / 100);
                l.extend_from_slice(b",spindle,");
                push_u64(l, u64::from(rec.device));
                l.extend_from_slice(if read { b",Read," } else { b",Write," });
                let offset = u128::from(rec.lba) * 512;
                let offset = u64::try_from(offset).map_err(|_| {
                    io::Error::new(
                        io::ErrorKind::InvalidInput,
                        format!("lba {} is beyond a 64-bit byte offset", rec.lba),
                    )
                })?;
                push_u64(l, offset);
                l.push(b',');
                push_u64(l, bytes);
                l.extend_from_slice(b",0\n");
            }
            TraceFormat::Fio3 => {
                let us = t / 1000;
                self.last_us = self.last_us.max(us);
                if self.fio_open.insert(rec.device) {
                    self.push_fio_file_line(us, rec.device, b"add");
                    self.push_fio_file_line(us, rec.device, b"open");
                }
                let l = &mut self.line;
                push_u64(l, us);
                l.extend_from_slice(b" spindle-dev");
                push_u64(l, u64::from(rec.device));
                l.extend_from_slice(if read { b" read " } else { b" write " });
                let offset = u64::try_from(u128::from(rec.lba) * 512).map_err(|_| {
                    io::Error::new(
                        io::ErrorKind::InvalidInput,
                        format!("lba {} is beyond a 64-bit byte offset", rec.lba),
                    )
                })?;
                push_u64(l, offset);
                l.push(b' ');
                push_u64(l, bytes);
                l.push(b'\n');
            }
            other => unreachable!("TraceWriter::new rejects {other}"),
        }
        self.out.write_all(&self.line)?;
        self.records += 1;
        Ok(())
    }

    /// Writes what remains (a header for an empty fio log, fio `close` lines), flushes, and
    /// returns the output.
    pub fn finish(mut self) -> io::Result<W> {
        self.header()?;
        if self.format == TraceFormat::Fio3 {
            self.line.clear();
            let devices: Vec<u32> = self.fio_open.iter().copied().collect();
            for d in devices {
                self.push_fio_file_line(self.last_us, d, b"close");
            }
            self.out.write_all(&self.line)?;
        }
        self.out.flush()?;
        Ok(self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Nanos;

    fn write_all(format: TraceFormat, recs: &[TraceRecord]) -> String {
        let mut w = TraceWriter::new(format, Vec::new()).expect("writable");
        for r in recs {
            w.write(r).expect("write to a Vec");
        }
        String::from_utf8(w.finish().expect("flush")).expect("ASCII")
    }

    const RECS: [TraceRecord; 2] = [
        TraceRecord {
            arrival: Nanos(13_191_135),
            device: 30,
            lba: 0,
            sectors: 5,
            op: Op::Read,
        },
        TraceRecord {
            arrival: Nanos(1_532_949_045_363_000),
            device: 11,
            lba: 323_157,
            sectors: 1,
            op: Op::Write,
        },
    ];

    #[test]
    fn formats_each_line() {
        assert_eq!(
            write_all(TraceFormat::DiskSim, &RECS),
            "13.191135 30 0 5 1\n1532949045.363000 11 323157 1 0\n"
        );
        assert_eq!(
            write_all(TraceFormat::MqSim, &RECS),
            "13191135 30 0 5 1\n1532949045363000 11 323157 1 0\n"
        );
        assert_eq!(
            write_all(TraceFormat::Spc, &RECS),
            "30,0,2560,r,0.013191135\n11,323157,512,w,1532949.045363000\n"
        );
        assert_eq!(
            write_all(TraceFormat::Msr, &RECS[..1]),
            "116444736000131911,spindle,30,Read,0,2560,0\n"
        );
        assert_eq!(
            write_all(TraceFormat::Fio3, &RECS),
            "fio version 3 iolog\n13191 spindle-dev30 add\n13191 spindle-dev30 open\n13191 spindle-dev30 read 0 2560\n\
             1532949045363 spindle-dev11 add\n1532949045363 spindle-dev11 open\n1532949045363 spindle-dev11 write 165456384 512\n\
             1532949045363 spindle-dev11 close\n1532949045363 spindle-dev30 close\n"
        );
        assert_eq!(write_all(TraceFormat::Fio3, &[]), "fio version 3 iolog\n");
    }

    #[test]
    fn read_only_formats_are_refused() {
        let e = TraceWriter::new(TraceFormat::Blkparse, Vec::new())
            .err()
            .expect("not writable");
        assert_eq!(
            e.to_string(),
            "cannot write blkparse traces (writable: disksim, mqsim, spc, msr, fio3)"
        );
    }
}
