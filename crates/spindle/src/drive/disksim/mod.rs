//! DiskSim 4.0 parameter-file import (`.parv`, `.diskspecs`, `.model`, `.seek`).
//! (Being written: the entry point's signature is fixed so the CLI and validation can use it.)

use super::DriveSpec;

/// A DiskSim file that cannot be imported: which file, which block, which parameter.
#[derive(Debug, thiserror::Error)]
#[error("{file}: {block}: {param}: {msg}")]
pub struct DiskSimError {
    pub file: String,
    pub block: String,
    pub param: String,
    pub msg: String,
}

/// Imports the disk of a DiskSim `.parv` file (following `source` includes through
/// `read_file`, which resolves names relative to the including file) as a spindle drive.
pub fn import_parv(path: &str, read_file: &dyn Fn(&str) -> Result<String, String>) -> Result<DriveSpec, DiskSimError> {
    let _ = read_file;
    Err(DiskSimError { file: path.into(), block: String::new(), param: String::new(), msg: "DiskSim import is not built yet".into() })
}
