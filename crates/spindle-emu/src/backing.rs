//! The backing store: one sparse file per physical disk, `disk-NNN.img` in the data
//! directory, each as large as the drive, addressed in the drive's sectors.
//!
//! A `store.json` beside them records what the files were created for (disks, sector size,
//! capacity, layout); opening a directory made for another array is refused, so data is
//! never read through the wrong layout. A `running` marker exists while an emulator uses
//! the directory: found at open, it says the last run did not stop cleanly. `nvram.img` is
//! the controller's NVRAM (its table of pending writes, the EW map updates): what a crash
//! must not lose, written before the host is answered (see `spindle::engine::data`), mapped
//! into memory while serving (`nvram.rs`).

use crate::nvram::NvramImage;
use serde::{Deserialize, Serialize};
use spindle::drive::Run;
use spindle::engine::{CopyRuns, NvramWrite};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

const NVRAM_FILE: &str = "nvram.img";

/// What a data directory holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoreShape {
    pub disks: usize,
    pub sector_bytes: u32,
    pub disk_sectors: u64,
    /// The array's layout as a report names it (e.g. `raid-10 3x1x2`).
    pub layout: String,
    pub drive: String,
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {msg}")]
    Mismatch { path: PathBuf, msg: String },
}

pub struct BackingStore {
    dir: PathBuf,
    shape: StoreShape,
    files: Vec<File>,
    nvram: File,
    unclean: bool,
}

impl BackingStore {
    /// Opens the store in `dir`, creating the directory and the sparse disk files if they
    /// do not exist; an existing store must have been made for the same `shape`.
    pub fn open(dir: &Path, shape: StoreShape) -> Result<BackingStore, StoreError> {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| StoreError::Io { path, source }
        };
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        let meta = dir.join("store.json");
        match std::fs::read(&meta) {
            Ok(bytes) => {
                let old: StoreShape =
                    serde_json::from_slice(&bytes).map_err(|e| StoreError::Mismatch {
                        path: meta.clone(),
                        msg: format!("not a spindle store description: {e}"),
                    })?;
                if old != shape {
                    return Err(StoreError::Mismatch {
                        path: meta,
                        msg: format!(
                            "this data directory holds {} disks of {} ({}, {} sectors of {} B); \
                             the experiment asks for {} disks of {} ({}, {} sectors of {} B): \
                             use another --data directory",
                            old.disks,
                            old.drive,
                            old.layout,
                            old.disk_sectors,
                            old.sector_bytes,
                            shape.disks,
                            shape.drive,
                            shape.layout,
                            shape.disk_sectors,
                            shape.sector_bytes
                        ),
                    });
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let text = serde_json::to_vec_pretty(&shape).expect("plain struct");
                // Written whole before any disk file, then renamed: a crash leaves no
                // half description.
                let tmp = dir.join("store.json.tmp");
                std::fs::write(&tmp, text).map_err(io(&tmp))?;
                std::fs::rename(&tmp, &meta).map_err(io(&meta))?;
            }
            Err(e) => return Err(io(&meta)(e)),
        }
        let bytes = shape.disk_sectors * u64::from(shape.sector_bytes);
        let mut files = Vec::with_capacity(shape.disks);
        for d in 0..shape.disks {
            let path = dir.join(format!("disk-{d:03}.img"));
            let f = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&path)
                .map_err(io(&path))?;
            let len = f.metadata().map_err(io(&path))?.len();
            if len != bytes {
                if len != 0 {
                    return Err(StoreError::Mismatch {
                        path,
                        msg: format!("{len} bytes, expected {bytes}"),
                    });
                }
                f.set_len(bytes).map_err(io(&path))?;
            }
            files.push(f);
        }
        let nvram_path = dir.join(NVRAM_FILE);
        let nvram = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&nvram_path)
            .map_err(io(&nvram_path))?;
        let marker = dir.join("running");
        let unclean = marker.exists();
        std::fs::write(&marker, b"").map_err(io(&marker))?;
        Ok(BackingStore {
            dir: dir.to_path_buf(),
            shape,
            files,
            nvram,
            unclean,
        })
    }

    pub fn nvram_path(&self) -> PathBuf {
        self.dir.join(NVRAM_FILE)
    }

    fn nvram_error(&self) -> impl FnOnce(std::io::Error) -> StoreError {
        let path = self.nvram_path();
        move |source| StoreError::Io { path, source }
    }

    /// The NVRAM image as the last run left it (empty for a new directory).
    pub fn read_nvram(&self) -> Result<Vec<u8>, StoreError> {
        std::fs::read(self.nvram_path()).map_err(self.nvram_error())
    }

    /// The NVRAM image, mapped for the emulator's NVRAM writes.
    pub fn nvram_image(&self) -> Result<NvramImage, StoreError> {
        self.nvram
            .try_clone()
            .and_then(|f| NvramImage::open(self.nvram_path(), f))
            .map_err(self.nvram_error())
    }

    /// Replaces the NVRAM image, atomically, by `writes` applied to an empty image; the
    /// disk files are made durable first (they hold what the old image protected).
    pub fn replace_nvram(
        &mut self,
        writes: impl IntoIterator<Item = NvramWrite>,
    ) -> Result<(), StoreError> {
        self.sync_disks()?;
        let path = self.nvram_path();
        let tmp = self.dir.join("nvram.img.tmp");
        let io = |p: &Path| {
            let p = p.to_path_buf();
            move |source| StoreError::Io { path: p, source }
        };
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)
            .map_err(io(&tmp))?;
        for w in writes {
            let bytes = w.as_literal().ok_or_else(|| StoreError::Mismatch {
                path: path.clone(),
                msg: "the controller's fresh NVRAM image is not literal bytes".into(),
            })?;
            f.write_all_at(bytes, w.offset).map_err(io(&tmp))?;
        }
        f.sync_all().map_err(io(&tmp))?;
        std::fs::rename(&tmp, &path).map_err(io(&path))?;
        File::open(&self.dir)
            .and_then(|d| d.sync_all())
            .map_err(io(&self.dir))?;
        self.nvram = f;
        Ok(())
    }

    /// Makes every disk file durable.
    pub fn sync_disks(&self) -> Result<(), StoreError> {
        for (d, f) in self.files.iter().enumerate() {
            f.sync_data().map_err(|source| StoreError::Io {
                path: self.path(d),
                source,
            })?;
        }
        Ok(())
    }

    /// `disk` failed: its file stops receiving writes, so a durable marker names it
    /// ([`Self::interrupted_rebuild`]) until a rebuild onto a spare has ended. A directory
    /// served degraded is then never served again as if that file were current.
    pub fn mark_failed(&mut self, disk: usize) -> Result<(), StoreError> {
        let marker = self.rebuild_marker();
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| StoreError::Io { path, source }
        };
        std::fs::write(&marker, format!("{disk}\n")).map_err(io(&marker))?;
        File::open(&marker)
            .and_then(|f| f.sync_all())
            .map_err(io(&marker))?;
        File::open(&self.dir)
            .and_then(|d| d.sync_all())
            .map_err(io(&self.dir))
    }

    /// A failed disk's spare takes its place: the failure's marker is made durable first (a
    /// crash before the rebuild ends then finds it: [`Self::interrupted_rebuild`]), then the
    /// disk's file is emptied — a new disk holds nothing until the rebuild writes it.
    pub fn replace_disk(&mut self, disk: usize) -> Result<(), StoreError> {
        self.mark_failed(disk)?;
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| StoreError::Io { path, source }
        };
        let len = self.shape.disk_sectors * u64::from(self.shape.sector_bytes);
        let path = self.path(disk);
        let f = &self.files[disk];
        f.set_len(0)
            .and_then(|()| f.set_len(len))
            .and_then(|()| f.sync_all())
            .map_err(io(&path))
    }

    /// The spare of `disk` is rebuilt: once its file is durable, the marker goes.
    pub fn rebuilt(&mut self, disk: usize) -> Result<(), StoreError> {
        self.files[disk]
            .sync_all()
            .map_err(|source| StoreError::Io {
                path: self.path(disk),
                source,
            })?;
        let marker = self.rebuild_marker();
        std::fs::remove_file(&marker).map_err(|source| StoreError::Io {
            path: marker,
            source,
        })
    }

    /// The disk that had failed, and whose rebuild onto a spare had not finished, when the
    /// directory was last used: its file is stale, or holds only what the rebuild wrote.
    pub fn interrupted_rebuild(&self) -> Option<usize> {
        std::fs::read_to_string(self.rebuild_marker())
            .ok()
            .and_then(|t| t.trim().parse().ok())
    }

    fn rebuild_marker(&self) -> PathBuf {
        self.dir.join("rebuilding")
    }

    /// Whether the previous user of the directory did not stop cleanly.
    pub fn was_unclean(&self) -> bool {
        self.unclean
    }

    /// Makes every disk file and the NVRAM image durable and removes the `running` marker:
    /// a clean stop.
    pub fn close_clean(self) -> Result<(), StoreError> {
        for (d, f) in self.files.iter().enumerate() {
            f.sync_all().map_err(|source| StoreError::Io {
                path: self.path(d),
                source,
            })?;
        }
        self.nvram.sync_all().map_err(self.nvram_error())?;
        let marker = self.dir.join("running");
        std::fs::remove_file(&marker).map_err(|source| StoreError::Io {
            path: marker,
            source,
        })
    }

    pub fn shape(&self) -> &StoreShape {
        &self.shape
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path(&self, disk: usize) -> PathBuf {
        self.dir.join(format!("disk-{disk:03}.img"))
    }

    fn check(&self, disk: usize, runs: &[Run], len: usize) {
        let sb = self.shape.sector_bytes as usize;
        let sectors: usize = runs.iter().map(|r| r.sectors as usize).sum();
        assert!(
            disk < self.files.len(),
            "disk {disk} of {}",
            self.files.len()
        );
        assert_eq!(sectors * sb, len, "runs and buffer differ in length");
        for r in runs {
            assert!(
                r.lba + u64::from(r.sectors) <= self.shape.disk_sectors,
                "run {r:?} beyond disk {disk}"
            );
        }
    }

    /// Reads `runs` of `disk`, in order, into `buf`.
    pub fn read_runs(&self, disk: usize, runs: &[Run], buf: &mut [u8]) -> Result<(), StoreError> {
        self.check(disk, runs, buf.len());
        let sb = u64::from(self.shape.sector_bytes);
        let mut at = 0usize;
        for r in runs {
            let n = (u64::from(r.sectors) * sb) as usize;
            self.files[disk]
                .read_exact_at(&mut buf[at..at + n], r.lba * sb)
                .map_err(|source| StoreError::Io {
                    path: self.path(disk),
                    source,
                })?;
            at += n;
        }
        Ok(())
    }

    /// Writes `buf` to `runs` of `disk`, in order.
    pub fn write_runs(&self, disk: usize, runs: &[Run], buf: &[u8]) -> Result<(), StoreError> {
        self.check(disk, runs, buf.len());
        let sb = u64::from(self.shape.sector_bytes);
        let mut at = 0usize;
        for r in runs {
            let n = (u64::from(r.sectors) * sb) as usize;
            self.files[disk]
                .write_all_at(&buf[at..at + n], r.lba * sb)
                .map_err(|source| StoreError::Io {
                    path: self.path(disk),
                    source,
                })?;
            at += n;
        }
        Ok(())
    }

    /// Copies the bytes of `src_runs` on disk `src` to every copy in `copies` on `disk`.
    pub fn copy_runs(
        &self,
        (src, src_runs): (usize, &[Run]),
        disk: usize,
        copies: &[CopyRuns],
    ) -> Result<(), StoreError> {
        let sectors: u64 = src_runs.iter().map(|r| u64::from(r.sectors)).sum();
        let mut bytes = vec![0; (sectors * u64::from(self.shape.sector_bytes)) as usize];
        self.read_runs(src, src_runs, &mut bytes)?;
        copies
            .iter()
            .try_for_each(|c| self.write_runs(disk, c, &bytes))
    }

    /// Handles on the disk files and the NVRAM image for a thread that makes them durable
    /// (`fsync`).
    pub fn sync_handles(&self) -> Result<Vec<(PathBuf, File)>, StoreError> {
        let clone = |f: &File, path: PathBuf| match f.try_clone() {
            Ok(f) => Ok((path, f)),
            Err(source) => Err(StoreError::Io { path, source }),
        };
        let mut out = (0..self.files.len())
            .map(|d| clone(&self.files[d], self.path(d)))
            .collect::<Result<Vec<_>, _>>()?;
        out.push(clone(&self.nvram, self.nvram_path())?);
        Ok(out)
    }
}
