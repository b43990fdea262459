//! Writing output files the way every command does (`trace convert`, `drives import -o`,
//! `run --series`, `validate --out`):
//!
//! - `-` is standard output;
//! - a path that does not exist or is a regular file gets a temporary file beside it, synced
//!   and renamed over it on [`Output::commit`], so a failure leaves no half-written file;
//! - a symbolic link is followed: the file it points to is the output (the link stays);
//! - an existing file that is not a regular file (a device such as `/dev/null`, a FIFO) is
//!   written through directly, never replaced;
//! - a directory, or a link to nothing, is refused.

use anyhow::{anyhow, bail, Context};
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// How an output path is written (see the module documentation).
#[derive(Clone, Debug, PartialEq, Eq)]
enum Mode {
    Stdout,
    /// Written in place: a device, a FIFO, a socket.
    Direct(PathBuf),
    /// A temporary file renamed over this path.
    Replace(PathBuf),
}

/// Decides how `path` is written, creating nothing; errors name the path.
fn mode(path: &Path) -> anyhow::Result<Mode> {
    if path.as_os_str() == "-" {
        return Ok(Mode::Stdout);
    }
    let shown = path.display();
    let link = match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Ok(Mode::Replace(path.to_path_buf()))
        }
        Err(e) => return Err(e).with_context(|| shown.to_string()),
        Ok(m) => m,
    };
    let target = if link.file_type().is_symlink() {
        std::fs::canonicalize(path)
            .with_context(|| format!("{shown}: a symbolic link to nothing"))?
    } else {
        path.to_path_buf()
    };
    let meta = std::fs::metadata(&target).with_context(|| shown.to_string())?;
    if meta.is_dir() {
        bail!("{shown}: is a directory");
    }
    if meta.is_file() {
        Ok(Mode::Replace(target))
    } else {
        Ok(Mode::Direct(target))
    }
}

/// Refuses, before any work is done, an output path that cannot be written (a directory, a
/// link to nothing).
pub fn check_writable(path: &Path) -> anyhow::Result<()> {
    mode(path).map(|_| ())
}

/// Where the bytes go until [`Output::commit`].
pub enum Sink {
    Stdout(io::Stdout),
    File(File),
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Sink::Stdout(s) => s.write(buf),
            Sink::File(f) => f.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Sink::Stdout(s) => s.flush(),
            Sink::File(f) => f.flush(),
        }
    }
}

/// An output being written; a temporary file is removed if dropped before
/// [`Output::commit`].
pub struct Output {
    shown: String,
    mode: Mode,
    tmp: Option<PathBuf>,
}

impl Output {
    /// Opens `path` for writing as the module documentation says.
    pub fn create(path: &Path) -> anyhow::Result<(Output, Sink)> {
        let shown = path.display().to_string();
        let mode = mode(path)?;
        let (tmp, sink) = match &mode {
            Mode::Stdout => (None, Sink::Stdout(io::stdout())),
            Mode::Direct(target) => {
                let f = OpenOptions::new()
                    .write(true)
                    .open(target)
                    .with_context(|| shown.clone())?;
                (None, Sink::File(f))
            }
            Mode::Replace(target) => {
                let (tmp, f) = temp_beside(target).with_context(|| shown.clone())?;
                (Some(tmp), Sink::File(f))
            }
        };
        Ok((Output { shown, mode, tmp }, sink))
    }

    /// Flushes `sink` and puts the output in place (sync and rename for a replaced file).
    pub fn commit(mut self, mut sink: Sink) -> anyhow::Result<()> {
        let shown = self.shown.clone();
        let fail = |e: io::Error| anyhow!("writing {shown}: {e}");
        sink.flush().map_err(fail)?;
        if let (Mode::Replace(target), Some(tmp)) = (&self.mode, &self.tmp) {
            if let Sink::File(f) = &sink {
                f.sync_all().map_err(fail)?;
            }
            drop(sink);
            std::fs::rename(tmp, target).map_err(fail)?;
            self.tmp = None;
        }
        Ok(())
    }
}

impl Drop for Output {
    fn drop(&mut self) {
        if let Some(tmp) = &self.tmp {
            let _ = std::fs::remove_file(tmp);
        }
    }
}

/// A new file beside `dest`, named after it.
fn temp_beside(dest: &Path) -> io::Result<(PathBuf, File)> {
    let name = dest
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "not a file name"))?
        .to_string_lossy()
        .into_owned();
    let dir = match dest.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    for attempt in 0..1000u32 {
        let tmp = dir.join(format!(
            ".{name}.spindle-tmp-{}-{attempt}",
            std::process::id()
        ));
        match OpenOptions::new().write(true).create_new(true).open(&tmp) {
            Ok(file) => return Ok((tmp, file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::other("cannot create a temporary file beside it"))
}

/// Writes `bytes` to `path` through [`Output`]: whole or not at all for a file.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let (out, mut sink) = Output::create(path)?;
    sink.write_all(bytes)
        .map_err(|e| anyhow!("writing {}: {e}", path.display()))?;
    out.commit(sink)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_of_path_is_written_its_own_way() {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("out.txt");
        assert_eq!(mode(Path::new("-")).unwrap(), Mode::Stdout);
        assert_eq!(mode(&file).unwrap(), Mode::Replace(file.clone()));
        std::fs::write(&file, "old").unwrap();
        let link = dir.path().join("link.txt");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        let real = std::fs::canonicalize(&file).unwrap();
        assert_eq!(mode(&link).unwrap(), Mode::Replace(real));
        assert_eq!(
            mode(Path::new("/dev/null")).unwrap(),
            Mode::Direct("/dev/null".into())
        );
        assert!(mode(dir.path()).is_err(), "a directory is refused");
        let dangling = dir.path().join("dangling");
        std::os::unix::fs::symlink(dir.path().join("nothing"), &dangling).unwrap();
        assert!(mode(&dangling).is_err(), "a link to nothing is refused");

        write_atomically(&link, b"new").unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "new");
        write_atomically(Path::new("/dev/null"), b"gone").unwrap();
        let names = std::fs::read_dir(dir.path()).unwrap().count();
        assert_eq!(names, 3, "no temporary file left");
    }
}
