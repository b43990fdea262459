//! What `spindle calibrate` measures: an NBD export, a block device or a file, read one
//! request at a time and timed by the caller's clock.
//!
//! Files and block devices are opened read-only with `O_DIRECT` (read-write only when the
//! caller allows writes: `--allow-writes`) (no page cache between the
//! timer and the disk); a file system that refuses `O_DIRECT` is opened without it, and
//! [`Target::describe`] says so.

use crate::nbd::client::{NbdClient, NbdUri};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::time::Instant;

/// Why a target could not be opened or read.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    #[error("{target}: {msg}")]
    Open { target: String, msg: String },
    #[error("{target}: reading {sectors} sectors at LBA {lba}: {msg}")]
    Read {
        target: String,
        lba: u64,
        sectors: u32,
        msg: String,
    },
}

/// A block target read one request at a time.
pub trait Target {
    /// The target as named on the command line, and how it is read.
    fn describe(&self) -> String;
    fn sectors(&self) -> u64;
    fn sector_bytes(&self) -> u32;
    /// Reads `sectors` sectors at `lba`; returns when the answer arrived.
    fn read(&mut self, lba: u64, sectors: u32) -> Result<Instant, TargetError>;
    /// Reads `buf.len()` bytes (whole sectors) at `lba` into `buf`; returns when the answer
    /// arrived.
    fn read_into(&mut self, lba: u64, buf: &mut [u8]) -> Result<Instant, TargetError>;
    /// Makes every write answered so far durable (NBD FLUSH; `fdatasync`).
    fn flush(&mut self) -> Result<(), TargetError>;
    /// Writes `data` (whole sectors) at `lba`; returns when the answer arrived. Refused by
    /// a target opened read-only.
    fn write(&mut self, lba: u64, data: &[u8]) -> Result<Instant, TargetError>;
}

fn read_only(name: &str, lba: u64, data: &[u8]) -> TargetError {
    TargetError::Read {
        target: name.to_string(),
        lba,
        sectors: (data.len() / 512) as u32,
        msg: "a write to a target opened read-only (calibrate writes only with --allow-writes)"
            .into(),
    }
}

/// Opens `name`: an `nbd://` or `nbd+unix://` URI, else a path; `writable`: writes allowed
/// (else every write is refused here, before it reaches the target).
pub fn open(name: &str, writable: bool) -> Result<Box<dyn Target>, TargetError> {
    let err = |msg: String| TargetError::Open {
        target: name.to_string(),
        msg,
    };
    if name.starts_with("nbd://") || name.starts_with("nbd+unix://") {
        let uri = NbdUri::parse(name).map_err(err)?;
        let client = NbdClient::connect(&uri).map_err(|e| err(e.to_string()))?;
        let sector_bytes = client.block_min().max(512);
        return Ok(Box::new(Nbd {
            name: name.to_string(),
            client,
            sector_bytes,
            buf: Vec::new(),
            writable,
        }));
    }
    File::open(name, writable).map(|f| Box::new(f) as Box<dyn Target>)
}

struct Nbd {
    name: String,
    client: NbdClient,
    sector_bytes: u32,
    buf: Vec<u8>,
    writable: bool,
}

impl Target for Nbd {
    fn describe(&self) -> String {
        format!("{} (NBD)", self.name)
    }

    fn sectors(&self) -> u64 {
        self.client.size() / u64::from(self.sector_bytes)
    }

    fn sector_bytes(&self) -> u32 {
        self.sector_bytes
    }

    fn read(&mut self, lba: u64, sectors: u32) -> Result<Instant, TargetError> {
        let len = sectors as usize * self.sector_bytes as usize;
        self.buf.resize(len, 0);
        self.client
            .read_timed(lba * u64::from(self.sector_bytes), &mut self.buf)
            .map_err(|e| TargetError::Read {
                target: self.name.clone(),
                lba,
                sectors,
                msg: e.to_string(),
            })
    }

    fn read_into(&mut self, lba: u64, buf: &mut [u8]) -> Result<Instant, TargetError> {
        self.client
            .read_timed(lba * u64::from(self.sector_bytes), buf)
            .map_err(|e| TargetError::Read {
                target: self.name.clone(),
                lba,
                sectors: (buf.len() / self.sector_bytes as usize) as u32,
                msg: e.to_string(),
            })
    }

    fn flush(&mut self) -> Result<(), TargetError> {
        self.client.flush().map_err(|e| TargetError::Read {
            target: self.name.clone(),
            lba: 0,
            sectors: 0,
            msg: format!("flushing: {e}"),
        })
    }

    fn write(&mut self, lba: u64, data: &[u8]) -> Result<Instant, TargetError> {
        if !self.writable {
            return Err(read_only(&self.name, lba, data));
        }
        self.client
            .write_timed(lba * u64::from(self.sector_bytes), data)
            .map_err(|e| TargetError::Read {
                target: self.name.clone(),
                lba,
                sectors: (data.len() / self.sector_bytes as usize) as u32,
                msg: format!("writing: {e}"),
            })
    }
}

/// Alignment of `O_DIRECT` buffers: a page covers every logical block size.
const ALIGN: usize = 4096;

struct File {
    name: String,
    file: std::fs::File,
    direct: bool,
    writable: bool,
    sectors: u64,
    /// An `ALIGN`-aligned window into `raw`.
    raw: Vec<u8>,
}

impl File {
    fn open(name: &str, writable: bool) -> Result<File, TargetError> {
        let err = |msg: String| TargetError::Open {
            target: name.to_string(),
            msg,
        };
        let open = |flags: i32| {
            std::fs::OpenOptions::new()
                .read(true)
                .write(writable)
                .custom_flags(flags)
                .open(name)
        };
        let (file, direct) = match open(libc::O_DIRECT) {
            Ok(f) => (f, true),
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                (open(0).map_err(|e| err(e.to_string()))?, false)
            }
            Err(e) => return Err(err(e.to_string())),
        };
        // A block device's size is where its end seeks to; a file's is its length.
        use std::io::Seek;
        let bytes = (&file)
            .seek(std::io::SeekFrom::End(0))
            .map_err(|e| err(format!("finding its size: {e}")))?;
        Ok(File {
            name: name.to_string(),
            file,
            direct,
            writable,
            sectors: bytes / 512,
            raw: Vec::new(),
        })
    }
}

impl Target for File {
    fn describe(&self) -> String {
        match self.direct {
            true => format!("{} (O_DIRECT)", self.name),
            false => format!("{} (page cache: O_DIRECT refused)", self.name),
        }
    }

    fn sectors(&self) -> u64 {
        self.sectors
    }

    fn sector_bytes(&self) -> u32 {
        512
    }

    fn read_into(&mut self, lba: u64, buf: &mut [u8]) -> Result<Instant, TargetError> {
        let at = self.read(lba, (buf.len() / 512) as u32)?;
        let skip = self.raw.as_ptr().align_offset(ALIGN);
        buf.copy_from_slice(&self.raw[skip..skip + buf.len()]);
        Ok(at)
    }

    fn flush(&mut self) -> Result<(), TargetError> {
        self.file.sync_data().map_err(|e| TargetError::Read {
            target: self.name.clone(),
            lba: 0,
            sectors: 0,
            msg: format!("flushing: {e}"),
        })
    }

    fn read(&mut self, lba: u64, sectors: u32) -> Result<Instant, TargetError> {
        let len = sectors as usize * 512;
        self.raw.resize(len + ALIGN, 0);
        let skip = self.raw.as_ptr().align_offset(ALIGN);
        let buf = &mut self.raw[skip..skip + len];
        self.file
            .read_exact_at(buf, lba * 512)
            .map_err(|e| TargetError::Read {
                target: self.name.clone(),
                lba,
                sectors,
                msg: e.to_string(),
            })?;
        Ok(Instant::now())
    }

    fn write(&mut self, lba: u64, data: &[u8]) -> Result<Instant, TargetError> {
        if !self.writable {
            return Err(read_only(&self.name, lba, data));
        }
        self.raw.resize(data.len() + ALIGN, 0);
        let skip = self.raw.as_ptr().align_offset(ALIGN);
        self.raw[skip..skip + data.len()].copy_from_slice(data);
        self.file
            .write_all_at(&self.raw[skip..skip + data.len()], lba * 512)
            .map_err(|e| TargetError::Read {
                target: self.name.clone(),
                lba,
                sectors: (data.len() / 512) as u32,
                msg: format!("writing: {e}"),
            })?;
        Ok(Instant::now())
    }
}
