//! The controller's NVRAM as shared memory: `nvram.img` mapped into the emulator, so an
//! NVRAM write is a memory store, as on the real controller, never a system call that can
//! wait on the page cache. The mapping is shared with the file: what is stored survives a
//! `kill -9` of the emulator (the kernel writes it back), and `fsync` of the file (FLUSH,
//! FUA, a clean stop) makes it durable.
//!
//! The file grows, in 64 KiB steps, when a write reaches past it; the zeros that pad it are
//! what every controller's image format reads as an empty slot (`spindle::engine::data`).
//! An image nothing was ever written to stays empty: the mark of a new data directory.

use memmap2::MmapMut;
use spindle::engine::NvramWrite;
use std::fs::File;
use std::path::PathBuf;

const GROWTH_BYTES: u64 = 64 * 1024;

pub struct NvramImage {
    path: PathBuf,
    file: File,
    map: Option<MmapMut>,
}

impl NvramImage {
    /// Maps `file`, the image at `path`, as it is.
    pub fn open(path: PathBuf, file: File) -> std::io::Result<NvramImage> {
        let mut image = NvramImage {
            path,
            file,
            map: None,
        };
        let len = image.file.metadata()?.len();
        if len > 0 {
            image.map_to(len)?;
        }
        Ok(image)
    }

    pub fn path(&self) -> &PathBuf {
        &self.path
    }

    fn map_to(&mut self, len: u64) -> std::io::Result<()> {
        self.map = None;
        if self.file.metadata()?.len() < len {
            self.file.set_len(len)?;
        }
        // SAFETY: the emulator owns the data directory (its `running` marker); nothing else
        // changes or truncates the image while it is mapped.
        self.map = Some(unsafe { MmapMut::map_mut(&self.file)? });
        Ok(())
    }

    /// Reads `buf.len()` bytes from `offset` (zeros beyond the image's end).
    pub fn read(&self, offset: u64, buf: &mut [u8]) {
        buf.fill(0);
        let Some(map) = self.map.as_ref() else {
            return;
        };
        let start = (offset as usize).min(map.len());
        let end = (offset as usize + buf.len()).min(map.len());
        buf[..end - start].copy_from_slice(&map[start..end]);
    }

    /// Applies one NVRAM write of literal bytes to the image (see [`NvramWrite`]: an XOR
    /// write's bytes are computed by the caller).
    pub fn write(&mut self, w: &NvramWrite) -> std::io::Result<()> {
        let bytes = w
            .as_literal()
            .expect("an XOR NVRAM write is resolved before it is stored");
        self.write_at(w.offset, bytes)
    }

    /// Stores `bytes` at byte `offset`, growing the image as needed.
    pub fn write_at(&mut self, offset: u64, bytes: &[u8]) -> std::io::Result<()> {
        let end = offset + bytes.len() as u64;
        let len = self.map.as_ref().map_or(0, |m| m.len() as u64);
        if end > len {
            self.map_to(end.div_ceil(GROWTH_BYTES) * GROWTH_BYTES)?;
        }
        let map = self.map.as_mut().expect("mapped above");
        map[offset as usize..end as usize].copy_from_slice(bytes);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::OpenOptions;

    fn open(path: &std::path::Path) -> NvramImage {
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .unwrap();
        NvramImage::open(path.to_path_buf(), f).unwrap()
    }

    fn write(offset: u64, bytes: &[u8]) -> NvramWrite {
        NvramWrite::literal(offset, bytes.to_vec())
    }

    #[test]
    fn writes_reach_the_file_and_it_grows_in_zero_padded_steps() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nvram.img");
        let mut image = open(&path);
        // Nothing written: the file stays empty (a new data directory's mark).
        drop(image);
        assert_eq!(std::fs::read(&path).unwrap().len(), 0);
        image = open(&path);
        image.write(&write(0, b"HEADER")).unwrap();
        image.write(&write(100, &[7; 32])).unwrap();
        // Past the first step: the mapping grows and keeps what was written.
        image.write(&write(GROWTH_BYTES + 10, b"far")).unwrap();
        image.write(&write(2, b"ZZ")).unwrap();
        // Read through the file, not the mapping: a reader after a crash sees this.
        let got = std::fs::read(&path).unwrap();
        assert_eq!(got.len() as u64, 2 * GROWTH_BYTES);
        assert_eq!(&got[..6], b"HEZZER".as_slice());
        assert_eq!(&got[100..132], &[7; 32]);
        let at = (GROWTH_BYTES + 10) as usize;
        assert_eq!(&got[at..at + 3], b"far".as_slice());
        assert!(got[6..100].iter().all(|&b| b == 0));
        assert!(got[at + 3..].iter().all(|&b| b == 0));
        // Reopened, the image is as left and writable in place.
        drop(image);
        let mut image = open(&path);
        image.write(&write(100, &[9; 4])).unwrap();
        let got = std::fs::read(&path).unwrap();
        assert_eq!(got.len() as u64, 2 * GROWTH_BYTES);
        assert_eq!(&got[100..104], &[9; 4]);
        assert_eq!(&got[104..132], &[7; 28]);
    }
}
