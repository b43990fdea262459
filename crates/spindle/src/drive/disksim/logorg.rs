//! DiskSim 4.0 logical organisations (`disksim_logorg`, src/disksim_logorg.c and
//! disksim_redun.c): the array a `.parv` builds over its disks, read into a plain
//! [`DiskSimArray`] that the experiment config turns into a spindle array.
//!
//! Accepted: exactly one `disksim_logorg` block, `Addressing mode = Array`, `Distribution
//! scheme = Striped`, and the four redundancy schemes `Noredun`, `Shadowed`, `Parity_disk`,
//! `Parity_rotated`, over instances of one `disksim_disk` block. Every parameter of
//! logorg.modspec is either mapped, or refused (with the reason) at a value spindle cannot
//! honour, or — for the parameters DiskSim itself reads only under another redundancy
//! scheme, and the time-stamp log, which is output only — accepted with its reason recorded
//! in [`DiskSimArray::notes`].

use super::libparam::{self, Top};
use super::{DiskSimError, Reader};
use crate::raid5::ParityRotation;

/// DiskSim's redundancy schemes (`logorg_redun`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Redundancy {
    Noredun,
    Shadowed,
    ParityDisk,
    ParityRotated,
}

impl Redundancy {
    pub fn name(self) -> &'static str {
        match self {
            Redundancy::Noredun => "Noredun",
            Redundancy::Shadowed => "Shadowed",
            Redundancy::ParityDisk => "Parity_disk",
            Redundancy::ParityRotated => "Parity_rotated",
        }
    }

    pub fn is_parity(self) -> bool {
        matches!(self, Redundancy::ParityDisk | Redundancy::ParityRotated)
    }
}

/// A DiskSim array as spindle can run it.
#[derive(Clone, Debug, PartialEq)]
pub struct DiskSimArray {
    /// The file holding the `disksim_logorg` block, and the block's name.
    pub file: String,
    pub name: String,
    /// The member devices in DiskSim's order (for `Shadowed`: the data disks, then each
    /// further copy of them, as `logorg_shadowed` numbers them).
    pub devices: Vec<String>,
    /// The `disksim_disk` block every member instantiates.
    pub disk_spec: String,
    pub redundancy: Redundancy,
    /// `Stripe unit`, in 512-byte DiskSim blocks.
    pub stripe_unit_sectors: u32,
    /// `Number of copies` for `Shadowed`; 1 otherwise.
    pub copies: u32,
    /// Parity schemes: the parity group's width (every device).
    pub group_width: Option<u32>,
    /// Parity schemes: `Parity rotation type` (`Dedicated` for `Parity_disk`).
    pub rotation: Option<ParityRotation>,
    /// Parity schemes: spindle's `reconstruct_fraction` equivalent of `RMW vs. reconstruct`.
    pub reconstruct_fraction: Option<f64>,
    /// Parameters accepted without effect, and why.
    pub notes: Vec<String>,
}

impl DiskSimArray {
    /// Data disks: the devices less the copies or the parity.
    pub fn data_disks(&self) -> u32 {
        let n = self.devices.len() as u32;
        match self.redundancy {
            Redundancy::Noredun => n,
            Redundancy::Shadowed => n / self.copies,
            Redundancy::ParityDisk | Redundancy::ParityRotated => n - 1,
        }
    }
}

/// Reads the logical organisation of the DiskSim `.parv` at `path` (includes through
/// `read_file`, as [`super::import_parv`]).
pub fn import_logorg(
    path: &str,
    read_file: &dyn Fn(&str) -> Result<String, String>,
) -> Result<DiskSimArray, DiskSimError> {
    let top = libparam::parse_top(path, read_file)?;
    read_logorg(path, &top)
}

/// The one `disksim_logorg` block and its `devices`, as written (ranges expanded).
pub(super) fn the_logorg<'t>(
    path: &str,
    top: &'t Top,
) -> Result<(&'t libparam::Block, Vec<String>), DiskSimError> {
    let orgs: Vec<&libparam::Block> = top
        .blocks
        .iter()
        .filter(|b| b.type_name == "disksim_logorg")
        .collect();
    let b = match orgs.as_slice() {
        [one] => *one,
        [] => {
            return Err(DiskSimError {
                file: path.into(),
                block: "disksim_logorg".into(),
                param: String::new(),
                msg: "no disksim_logorg block: the file describes no array".into(),
            })
        }
        many => {
            return Err(DiskSimError {
                file: path.into(),
                block: "disksim_logorg".into(),
                param: String::new(),
                msg: format!(
                    "spindle runs one array per experiment; found {} logical organisations ({})",
                    many.len(),
                    many.iter()
                        .map(|b| format!("{} in {}", b.name, b.file))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            })
        }
    };
    let mut r = Reader::new(b, format!("disksim_logorg {}", b.name))?;
    let list = r.list("devices")?;
    let mut devices = Vec::with_capacity(list.len());
    for v in list {
        let Some(w) = v.as_word() else {
            return Err(r.err(
                "devices",
                format!("entries must be device names, got {}", v.show()),
            ));
        };
        if devices.iter().any(|d| d == w) {
            return Err(r.err("devices", format!("{w} is listed twice")));
        }
        devices.push(w.to_string());
    }
    if devices.is_empty() {
        return Err(r.err("devices", "the list is empty"));
    }
    Ok((b, devices))
}

/// The `disksim_disk` block each device instantiates: one block for all, else an error.
pub(super) fn member_disk_spec(
    path: &str,
    top: &Top,
    org: &libparam::Block,
    devices: &[String],
) -> Result<String, DiskSimError> {
    let err = |param: &str, msg: String| {
        let line = org
            .params
            .iter()
            .find(|p| p.name == param)
            .map(|p| format!("line {}: ", p.line))
            .unwrap_or_default();
        DiskSimError {
            file: org.file.clone(),
            block: format!("disksim_logorg {}", org.name),
            param: param.into(),
            msg: format!("{line}{msg}"),
        }
    };
    let mut spec: Option<(&str, &str)> = None;
    for d in devices {
        let inst = top
            .instances
            .iter()
            .find(|i| i.names.iter().any(|n| n == d))
            .ok_or_else(|| err("devices", format!("{d} is not instantiated")))?;
        let block = top.blocks.iter().find(|b| b.name == inst.spec);
        match block {
            Some(b) if b.type_name == "disksim_disk" => {}
            Some(b) => {
                return Err(err(
                    "devices",
                    format!(
                        "{d} is a {} ({}); spindle's arrays are built of disks",
                        b.type_name, b.name
                    ),
                ))
            }
            None => {
                return Err(DiskSimError {
                    file: inst.file.clone(),
                    block: format!("instantiate [ {d} ] (line {})", inst.line),
                    param: inst.spec.clone(),
                    msg: format!("no block of that name (in {path} or its includes)"),
                })
            }
        }
        match spec {
            None => spec = Some((d, &inst.spec)),
            Some((first, s)) if s != inst.spec => {
                return Err(err(
                    "devices",
                    format!(
                        "{first} is a {s} but {d} is a {}: spindle's arrays are of one drive model",
                        inst.spec
                    ),
                ))
            }
            Some(_) => {}
        }
    }
    Ok(spec.map(|(_, s)| s.to_string()).unwrap_or_default())
}

/// Reads and checks the logical organisation of a parsed `.parv`.
pub(super) fn read_logorg(path: &str, top: &Top) -> Result<DiskSimArray, DiskSimError> {
    let (b, devices) = the_logorg(path, top)?;
    let disk_spec = member_disk_spec(path, top, b, &devices)?;
    let mut r = Reader::new(b, format!("disksim_logorg {}", b.name))?;
    r.get("devices");
    let mut notes = Vec::new();

    let addressing = r.word("Addressing mode")?;
    match addressing {
        "Array" => {}
        "Parts" => {
            return Err(r.err(
                "Addressing mode",
                "Parts is not supported: it addresses each member disk as its own device; \
                 spindle's array is one logical volume (use Array)",
            ))
        }
        other => {
            return Err(r.err(
                "Addressing mode",
                format!("must be Array or Parts, got {other}"),
            ))
        }
    }
    let distribution = r.word("Distribution scheme")?;
    match distribution {
        "Striped" => {}
        "Asis" => {
            return Err(r.err(
                "Distribution scheme",
                "Asis is not supported: DiskSim allows it only with Parts addressing \
                 (\"Can't have ASIS organization with array addressing\"); use Striped",
            ))
        }
        "Random" | "Ideal" => {
            return Err(r.err(
                "Distribution scheme",
                format!(
                    "{distribution} is not supported: it sends each request to a disk chosen \
                     per request, not where its data lies (logorg.modspec: for constant \
                     access-time load-balancing experiments only); use Striped"
                ),
            ))
        }
        other => {
            return Err(r.err(
                "Distribution scheme",
                format!("must be Asis, Striped, Random or Ideal, got {other}"),
            ))
        }
    }
    let redundancy = match r.word("Redundancy scheme")? {
        "Noredun" => Redundancy::Noredun,
        "Shadowed" => Redundancy::Shadowed,
        "Parity_disk" => Redundancy::ParityDisk,
        "Parity_rotated" => Redundancy::ParityRotated,
        other => {
            return Err(r.err(
                "Redundancy scheme",
                format!("must be Noredun, Shadowed, Parity_disk or Parity_rotated, got {other}"),
            ))
        }
    };
    if let Some(p) = r.get("Components") {
        match p.value.as_word() {
            Some("Whole") => {}
            Some("Partial") => {
                return Err(r.err(
                    "Components",
                    "Partial is not supported (nor by DiskSim 4.0): members are whole disks",
                ))
            }
            _ => {
                return Err(r.err(
                    "Components",
                    format!("must be Whole, got {}", p.value.show()),
                ))
            }
        }
    }
    let stripe_unit = r.int("Stripe unit")?;
    let stripe_unit_sectors = u32::try_from(stripe_unit)
        .ok()
        .filter(|&u| u > 0)
        .ok_or_else(|| {
            r.err(
                "Stripe unit",
                format!("must be within 1..={}, got {stripe_unit}", u32::MAX),
            )
        })?;
    let sync = r.int_in("Synch writes for safety", 0, 1)?;
    let copies_n = r.int("Number of copies")?;
    if copies_n < 1 {
        return Err(r.err("Number of copies", format!("must be > 0, got {copies_n}")));
    }
    let copy_choice = r.int_in("Copy choice on read", 1, 6)?;
    let rmw = r.f64("RMW vs. reconstruct")?;
    if !(0.0..=1.0).contains(&rmw) {
        return Err(r.err(
            "RMW vs. reconstruct",
            format!("must be within 0.0..=1.0, got {rmw}"),
        ));
    }
    let parity_unit = r.int("Parity stripe unit")?;
    if parity_unit < 1 {
        return Err(r.err(
            "Parity stripe unit",
            format!("must be > 0, got {parity_unit}"),
        ));
    }
    let rot = r.int_in("Parity rotation type", 1, 4)?;
    for p in [
        "Time stamp interval",
        "Time stamp start time",
        "Time stamp stop time",
        "Time stamp file name",
    ] {
        if r.get(p).is_some() {
            notes.push(format!(
                "{p}: a log of queue lengths DiskSim writes; no effect on timing"
            ));
        }
    }
    let n = devices.len() as u32;
    let mut copies = 1;
    let (mut group_width, mut rotation, mut reconstruct_fraction) = (None, None, None);
    match redundancy {
        Redundancy::Noredun => {}
        Redundancy::Shadowed => {
            let c = u32::try_from(copies_n).unwrap_or(u32::MAX);
            if !n.is_multiple_of(c) {
                return Err(r.err(
                    "Number of copies",
                    format!(
                        "{n} devices are not a whole number of sets of {c} copies (DiskSim: \
                         \"Number of devices not multiple of number of copies\")"
                    ),
                ));
            }
            copies = c;
            if c > 1 && copy_choice != 6 {
                return Err(r.err(
                    "Copy choice on read",
                    format!(
                        "{copy_choice} is not supported: spindle sends a read to the idle copy \
                         whose head is closest (policy 6, shortest queue then shortest seek); \
                         it has no primary-only, random, round-robin or seek-only choice"
                    ),
                ));
            }
        }
        Redundancy::ParityDisk | Redundancy::ParityRotated => {
            if n < 3 {
                return Err(r.err(
                    "devices",
                    format!(
                        "{} needs at least 3 devices in spindle (two data disks and parity), got {n}",
                        redundancy.name()
                    ),
                ));
            }
            if sync != 1 {
                return Err(r.err(
                    "Synch writes for safety",
                    "0 is not supported: spindle issues a stripe update's writes once all its \
                     reads are done, which is DiskSim's 1",
                ));
            }
            group_width = Some(n);
            if redundancy == Redundancy::ParityRotated {
                if parity_unit != stripe_unit {
                    return Err(r.err(
                        "Parity stripe unit",
                        format!(
                            "{parity_unit} differs from Stripe unit {stripe_unit}: spindle \
                             rotates parity every stripe (parity unit = stripe unit)"
                        ),
                    ));
                }
                // disksim_logorg.h: 1 left symmetric, 2 left asymmetric, 3 right asymmetric,
                // 4 right symmetric.
                rotation = Some(match rot {
                    1 => ParityRotation::LeftSymmetric,
                    2 => ParityRotation::LeftAsymmetric,
                    3 => ParityRotation::RightAsymmetric,
                    _ => ParityRotation::RightSymmetric,
                });
                if rot != 1 {
                    notes.push(format!(
                        "Parity rotation type = {rot}: DiskSim 4.0 itself builds only type 1's \
                         table for a Striped array (logorg_create_table); spindle follows \
                         logorg.modspec's meaning"
                    ));
                }
            } else {
                rotation = Some(ParityRotation::Dedicated);
                notes.push(
                    "Parity stripe unit, Parity rotation type: not read by DiskSim for Parity_disk"
                        .into(),
                );
            }
            reconstruct_fraction = Some(reconstruct_fraction_of(rmw, n));
        }
    }
    if !redundancy.is_parity() {
        notes.push(format!(
            "Synch writes for safety, RMW vs. reconstruct, Parity stripe unit, Parity rotation \
             type: read by DiskSim only for parity schemes, not {}",
            redundancy.name()
        ));
    }
    if redundancy != Redundancy::Shadowed {
        notes.push(format!(
            "Number of copies, Copy choice on read: read by DiskSim only for Shadowed, not {}",
            redundancy.name()
        ));
    } else if copies == 1 {
        notes.push("Copy choice on read: one copy, nothing to choose".into());
    }
    r.finish()?;
    Ok(DiskSimArray {
        file: b.file.clone(),
        name: b.name.clone(),
        devices,
        disk_spec,
        redundancy,
        stripe_unit_sectors,
        copies,
        group_width,
        rotation,
        reconstruct_fraction,
        notes,
    })
}

/// spindle's `reconstruct_fraction` for DiskSim's `RMW vs. reconstruct = rmw` over `n`
/// devices. DiskSim sets `rmwpoint = (int)(rmw * n)` (disksim_logorg_loadparams, n counting
/// the parity disk) and reconstructs a partial stripe when the data units it touches number
/// at least `rmwpoint` (logorg_parity_table); spindle reconstructs when the sectors written
/// exceed `fraction` of the stripe's `n - 1` units. `(rmwpoint - 0.5) / (n - 1)`, within
/// [0, 1], makes the two choose alike for every write of whole stripe units; a write that
/// covers units partly counts as whole units in DiskSim and by its sectors in spindle.
pub fn reconstruct_fraction_of(rmw: f64, n: u32) -> f64 {
    let point = (rmw * f64::from(n)).floor();
    ((point - 0.5) / f64::from(n - 1)).clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests;
