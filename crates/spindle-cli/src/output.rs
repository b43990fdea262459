//! Writing output files the way every command should: never over something that is not a
//! regular file, never half-written.

use anyhow::{bail, Context};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Refuses, before any work is done, an output path that exists and is not a regular file.
pub fn check_writable(path: &Path) -> anyhow::Result<()> {
    if let Ok(meta) = std::fs::metadata(path) {
        if !meta.is_file() {
            bail!("{}: exists and is not a regular file", path.display());
        }
    }
    Ok(())
}

/// Writes `bytes` to `path` through a temporary file in the same directory, synced, and a
/// rename, so a failure leaves no half-written file. An existing `path` that is not a
/// regular file (a directory, a device, a pipe) is refused, not replaced.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    check_writable(path)?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path
        .file_name()
        .with_context(|| format!("{}: not a file name", path.display()))?;
    let tmp = dir.join(format!(
        ".{}.tmp{}",
        name.to_string_lossy(),
        std::process::id()
    ));
    let write = || -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    };
    write().map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        anyhow::anyhow!("writing {}: {e}", path.display())
    })
}
