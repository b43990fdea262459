//! DiskSim 4.0 parameter-file import (`.parv`, `.diskspecs`, `.model`, `.seek`).
//!
//! [`import_parv`] reads a DiskSim system description, finds its disk (its one disk, or the
//! members of its one array, instances of one `disksim_disk` block whose buses and
//! controllers give them one transfer time) and the buses and controller between it and the
//! driver, and turns the disk into a spindle [`DriveSpec`]:
//! `dm_layout_g1` into `zones` + `[layout]` (DiskSim-exact mapping, see [`layout_g1`]),
//! `dm_mech_g1` into rpm, seek, head switch and write settle, and the `disksim_disk` buffer
//! and controller parameters into `[cache]`. Every value carries a provenance entry naming
//! the DiskSim file and parameter.
//!
//! Nothing is ignored silently: every parameter is mapped, or listed below (with the reason
//! it cannot change a single disk's timing in spindle's model), or accepted only at the value
//! that switches its feature off. Anything else is a [`DiskSimError`] naming the file, the
//! block and the parameter. Three known gaps are imported but recorded under
//! `provenance["not_carried.…"]`: a negative write settle (the schema needs >= 0),
//! request-size watermarks (`[cache]` watermarks are fractions of a segment) and a write
//! per-block bus time that differs from the read one (`[cache]` has one `bus_sector_ms`).
//!
//! The array itself (`disksim_logorg`) is read by [`import_logorg`] (module [`logorg`]); the
//! drive importer checks only that several disks are its members. Buses or controllers that
//! several member disks share are recorded under `not_carried.shared_interconnect`.
//!
//! No I/O: files come through the caller's `read_file`, which is given paths already joined
//! to the including file's directory.

mod cache;
pub mod layout_g1;
pub(crate) mod libparam;
pub mod logorg;
mod mech;
pub(crate) mod seekfile;

use super::cache_spec::{CacheSpec, ExtraWriteDisconnect};
use super::layout_spec::{LayoutSpec, LayoutZone, Mapping, Sparing};
use super::spec::{DriveSpec, NoiseSpec, SeekSpec, SkewUnit, ZoneSpec};
use libparam::{Block, Kind, Param, Top, Topo, Value};
use std::collections::BTreeMap;

pub use logorg::{import_logorg, DiskSimArray, Redundancy};

/// A bus's or controller's per-block read and write times, its block, and the parameter.
type BusTime<'a> = (f64, f64, &'a Block, &'static str);

/// The way from the driver to one disk.
struct Interface<'a> {
    /// The buses' and controllers' instance names.
    nodes: Vec<&'a str>,
    /// The names of the blocks on it.
    blocks: Vec<&'a str>,
    times: Vec<BusTime<'a>>,
}

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
/// `read_file`, which is called with each included name joined to the including file's
/// directory) as a spindle drive.
pub fn import_parv(
    path: &str,
    read_file: &dyn Fn(&str) -> Result<String, String>,
) -> Result<DriveSpec, DiskSimError> {
    let top = libparam::parse_top(path, read_file)?;
    Importer::new(path, read_file, &top).run()
}

/// Parameters that cannot change one disk's timing in spindle's model, by block type:
/// accepted with any value.
const IGNORED: &[(&str, &str, &str)] = &[
    // Simulator-wide settings and statistics printing.
    (
        "disksim_global",
        "Init Seed",
        "seeds DiskSim's random streams; the imported disk has no randomness",
    ),
    ("disksim_global", "Real Seed", "as Init Seed"),
    (
        "disksim_global",
        "Statistic warm-up time",
        "statistics only",
    ),
    ("disksim_global", "Statistic warm-up IOs", "statistics only"),
    (
        "disksim_global",
        "Stat definition file",
        "histogram bins for DiskSim's report",
    ),
    (
        "disksim_global",
        "Output file for trace of I/O requests simulated",
        "an output file",
    ),
    (
        "disksim_global",
        "Detailed execution trace",
        "an output file",
    ),
    ("disksim_stats", "*", "what DiskSim prints"),
    ("disksim_iodriver_stats", "*", "what DiskSim prints"),
    ("disksim_bus_stats", "*", "what DiskSim prints"),
    ("disksim_ctlr_stats", "*", "what DiskSim prints"),
    ("disksim_device_stats", "*", "what DiskSim prints"),
    ("disksim_pf_stats", "*", "what DiskSim prints"),
    ("disksim_bus", "Print stats", "what DiskSim prints"),
    ("disksim_ctlr", "Print stats", "what DiskSim prints"),
    ("disksim_disk", "Print stats", "what DiskSim prints"),
    // Workload generators and the host-side process model: spindle's experiment sets these.
    (
        "disksim_synthio",
        "*",
        "synthetic workload generator (spindle's [workload])",
    ),
    (
        "disksim_pf",
        "*",
        "host process-flow model (CPUs, think-time scale), not the disk",
    ),
    // The host driver's queue: spindle's [array] scheduler plays that part.
    (
        "disksim_iodriver",
        "Scheduler",
        "host-side queue; spindle's scheduler is set per experiment",
    ),
    (
        "disksim_iodriver",
        "Use queueing in subsystem",
        "host-side queueing, as Scheduler",
    ),
    // A single disk on its own bus has no one to arbitrate with.
    (
        "disksim_bus",
        "type",
        "exclusive vs interleaved matters only with several devices",
    ),
    (
        "disksim_bus",
        "Arbitration type",
        "matters only with several devices",
    ),
    // The disk's own hints and no-op switches.
    (
        "disksim_disk",
        "Avg sectors per cylinder",
        "exported to external schedulers; 'not used by the disk itself' (disk.modspec)",
    ),
    (
        "disksim_disk",
        "Calc sector by sector",
        "'no effect on simulation accuracy' and always on (disk.modspec)",
    ),
    (
        "disksim_disk",
        "Max queue length",
        "spindle's drive serves one request at a time; queues live in the array",
    ),
    // DiskSim recomputes the capacity from the zones (layout_g1_load.c checknumblocks).
    (
        "dm_disk",
        "Block count",
        "DiskSim overrides it with the zone sum; recorded in provenance",
    ),
];

/// Parameters accepted only at the value that leaves their feature off (spindle has no model
/// of the feature): (block type, parameter, the accepted value).
const OFF_ONLY: &[(&str, &str, f64)] = &[
    ("disksim_iodriver", "Constant access time", 0.0),
    ("disksim_bus", "Arbitration time", 0.0),
    ("disksim_ctlr", "Scale for delays", 0.0),
    ("disksim_ctlr", "Maximum queue length", 0.0),
    ("disksim_disk", "Time scale for overheads", 1.0),
    ("disksim_disk", "Allow almost read hits", 0.0),
    ("disksim_disk", "Allow sneaky full read hits", 0.0),
    ("disksim_disk", "Allow sneaky partial read hits", 0.0),
    ("disksim_disk", "Allow sneaky intermediate read hits", 0.0),
    ("disksim_disk", "Allow write prebuffering", 0.0),
    ("disksim_disk", "Preseeking level", 0.0),
    ("disksim_disk", "Disconnect write if seek", 0.0),
    ("dm_mech_g1", "Percent error in rpms", 0.0),
];

/// The disk's internal queue parameters: ignored when the disk holds one request
/// (`Max queue length` <= 1) or serves in arrival order (`Scheduling policy = 1`, FCFS).
const QUEUE: &[&str] = &[
    "Scheduling policy",
    "Cylinder mapping strategy",
    "Write initiation delay",
    "Read initiation delay",
    "Sequential stream scheme",
    "Maximum concat size",
    "Overlapping request scheme",
    "Sequential stream diff maximum",
    "Scheduling timeout scheme",
    "Timeout time/weight",
    "Timeout scheduling",
    "Scheduling priority scheme",
    "Priority scheduling",
];

/// One block being read: which parameters have been consumed.
struct Reader<'b> {
    block: &'b Block,
    path: String,
    used: Vec<bool>,
}

impl<'b> Reader<'b> {
    fn new(block: &'b Block, path: String) -> Result<Reader<'b>, DiskSimError> {
        let r = Reader {
            block,
            path,
            used: vec![false; block.params.len()],
        };
        for (i, p) in block.params.iter().enumerate() {
            if block.params[..i].iter().any(|q| q.name == p.name) {
                return Err(r.err(&p.name, "given twice"));
            }
        }
        Ok(r)
    }

    /// An error about `param`, with its line when the block has it.
    fn err(&self, param: &str, msg: impl Into<String>) -> DiskSimError {
        let msg = msg.into();
        let msg = match self.block.params.iter().find(|p| p.name == param) {
            Some(p) => format!("line {}: {msg}", p.line),
            None => msg,
        };
        DiskSimError {
            file: self.block.file.clone(),
            block: self.path.clone(),
            param: param.into(),
            msg,
        }
    }

    fn get(&mut self, name: &str) -> Option<&'b Param> {
        let i = self.block.params.iter().position(|p| p.name == name)?;
        self.used[i] = true;
        Some(&self.block.params[i])
    }

    fn req(&mut self, name: &str) -> Result<&'b Value, DiskSimError> {
        match self.get(name) {
            Some(p) => Ok(&p.value),
            None => Err(self.err(name, "required parameter is missing")),
        }
    }

    fn f64(&mut self, name: &str) -> Result<f64, DiskSimError> {
        let v = self.req(name)?;
        v.as_f64()
            .ok_or_else(|| self.err(name, format!("expected a number, got {}", v.show())))
    }

    fn nonneg(&mut self, name: &str) -> Result<f64, DiskSimError> {
        let v = self.f64(name)?;
        if !(v.is_finite() && v >= 0.0) {
            return Err(self.err(name, format!("must be >= 0, got {v}")));
        }
        Ok(v)
    }

    fn int(&mut self, name: &str) -> Result<i64, DiskSimError> {
        let v = self.req(name)?;
        v.as_int()
            .ok_or_else(|| self.err(name, format!("expected an integer, got {}", v.show())))
    }

    fn int_in(&mut self, name: &str, lo: i64, hi: i64) -> Result<i64, DiskSimError> {
        let v = self.int(name)?;
        if !(lo..=hi).contains(&v) {
            return Err(self.err(name, format!("must be within {lo}..={hi}, got {v}")));
        }
        Ok(v)
    }

    fn u32(&mut self, name: &str) -> Result<u32, DiskSimError> {
        let v = self.int(name)?;
        u32::try_from(v)
            .map_err(|_| self.err(name, format!("must be within 0..={}, got {v}", u32::MAX)))
    }

    fn flag(&mut self, name: &str) -> Result<bool, DiskSimError> {
        Ok(self.int_in(name, 0, 1)? == 1)
    }

    fn word(&mut self, name: &str) -> Result<&'b str, DiskSimError> {
        let v = self.req(name)?;
        v.as_word()
            .ok_or_else(|| self.err(name, format!("expected a word, got {}", v.show())))
    }

    fn block(&mut self, name: &str) -> Result<&'b Block, DiskSimError> {
        let v = self.req(name)?;
        match &v.kind {
            Kind::Block(b) => Ok(b),
            _ => Err(self.err(name, format!("expected a block, got {}", v.show()))),
        }
    }

    fn list(&mut self, name: &str) -> Result<&'b [Value], DiskSimError> {
        let v = self.req(name)?;
        match &v.kind {
            Kind::List(l) => Ok(l),
            _ => Err(self.err(name, format!("expected a list, got {}", v.show()))),
        }
    }

    /// Consumes the block type's ignored and off-only parameters.
    fn common(&mut self, type_name: &str) -> Result<(), DiskSimError> {
        for (i, p) in self.block.params.iter().enumerate() {
            if IGNORED
                .iter()
                .any(|(t, n, _)| *t == type_name && (*n == "*" || *n == p.name))
            {
                self.used[i] = true;
            }
            if let Some((_, _, off)) = OFF_ONLY
                .iter()
                .find(|(t, n, _)| *t == type_name && *n == p.name)
            {
                if p.value.as_f64() != Some(*off) {
                    return Err(self.err(
                        &p.name,
                        format!(
                            "{} is not supported: spindle models only {off} (the feature off)",
                            p.value.show()
                        ),
                    ));
                }
                self.used[i] = true;
            }
        }
        Ok(())
    }

    /// Every parameter must have been consumed.
    fn finish(self) -> Result<(), DiskSimError> {
        for (p, used) in self.block.params.iter().zip(&self.used) {
            if !used {
                return Err(self.err(
                    &p.name,
                    format!("unknown or unsupported parameter (value {}); nothing in spindle carries it", p.value.show()),
                ));
            }
        }
        Ok(())
    }
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

struct Importer<'a> {
    path: &'a str,
    read_file: &'a dyn Fn(&str) -> Result<String, String>,
    top: &'a Top,
    prov: BTreeMap<String, String>,
}

impl<'a> Importer<'a> {
    fn new(
        path: &'a str,
        read_file: &'a dyn Fn(&str) -> Result<String, String>,
        top: &'a Top,
    ) -> Self {
        Importer {
            path,
            read_file,
            top,
            prov: BTreeMap::new(),
        }
    }

    fn err(&self, block: &str, param: &str, msg: impl Into<String>) -> DiskSimError {
        DiskSimError {
            file: self.path.into(),
            block: block.into(),
            param: param.into(),
            msg: msg.into(),
        }
    }

    fn cite(
        &mut self,
        key: &str,
        block: &Block,
        param: &str,
        value: impl std::fmt::Display,
        note: &str,
    ) {
        let text = format!(
            "DISKSIM:{} \"{param} = {value}\"{}{note}",
            file_name(&block.file),
            if note.is_empty() { "" } else { " " }
        );
        self.prov.insert(key.to_string(), text);
    }

    /// The block an instance name stands for.
    fn block_of(&self, instance: &str) -> Result<&'a Block, DiskSimError> {
        let inst = self
            .top
            .instances
            .iter()
            .find(|i| i.names.iter().any(|n| n == instance))
            .ok_or_else(|| self.err("topology", instance, "component is not instantiated"))?;
        self.top
            .blocks
            .iter()
            .find(|b| b.name == inst.spec)
            .ok_or_else(|| DiskSimError {
                file: inst.file.clone(),
                block: format!("instantiate [ {instance} ] (line {})", inst.line),
                param: inst.spec.clone(),
                msg: "no block of that name".into(),
            })
    }

    fn run(mut self) -> Result<DriveSpec, DiskSimError> {
        let top = self.top;
        let mut disks: Vec<&str> = Vec::new();
        for inst in &top.instances {
            if let Some(b) = top.blocks.iter().find(|b| b.name == inst.spec) {
                if b.type_name == "disksim_disk" {
                    disks.extend(inst.names.iter().map(String::as_str));
                }
            }
        }
        // One disk, or the members of the file's one array, all of one disk block.
        let members: Vec<&str> = match disks.as_slice() {
            [_] => disks.clone(),
            [] => {
                return Err(self.err(
                    "instantiate",
                    "disksim_disk",
                    "spindle imports one disk model; found no disk instance",
                ))
            }
            _ => {
                let (org, devices) = logorg::the_logorg(self.path, top).map_err(|e| {
                    DiskSimError {
                        msg: format!(
                            "{} disks ({}): spindle imports several disks only as the members of one array: {}",
                            disks.len(),
                            disks.join(", "),
                            e.msg
                        ),
                        ..e
                    }
                })?;
                if let Some(d) = disks.iter().find(|d| !devices.iter().any(|x| x == *d)) {
                    return Err(self.err(
                        "instantiate",
                        d,
                        format!(
                            "disk {d} is not a member of disksim_logorg {}: spindle imports several disks only as the members of one array",
                            org.name
                        ),
                    ));
                }
                logorg::member_disk_spec(self.path, top, org, &devices)?;
                disks.sort_by_key(|d| devices.iter().position(|x| x == d));
                disks.clone()
            }
        };
        let disk_name = members[0];
        let mut on_path: Vec<&str> = Vec::new();
        let mut bus_times = Vec::new();
        let mut per_block: Option<(f64, f64, &str)> = None;
        let mut users: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for &disk in &members {
            let Interface {
                nodes,
                blocks,
                times,
            } = self.interface(disk)?;
            let rd = times.iter().map(|t| t.0).fold(0.0, f64::max);
            let wr = times.iter().map(|t| t.1).fold(0.0, f64::max);
            match per_block {
                None => {
                    per_block = Some((rd, wr, disk));
                    bus_times = times;
                }
                Some((r0, w0, d0)) if (r0, w0) != (rd, wr) => {
                    return Err(self.err(
                        "topology",
                        disk,
                        format!(
                            "its buses and controllers give a per-block transfer time of {rd}/{wr} ms (read/write), {d0}'s give {r0}/{w0}: spindle's array disks are one drive model"
                        ),
                    ));
                }
                Some(_) => {}
            }
            for b in blocks {
                if !on_path.contains(&b) {
                    on_path.push(b);
                }
            }
            for n in nodes {
                users.entry(n).or_default().push(disk);
            }
        }
        let shared: Vec<String> = users
            .iter()
            .filter(|(_, ds)| ds.len() > 1)
            .map(|(n, ds)| format!("{n} ({})", ds.join(", ")))
            .collect();
        if !shared.is_empty() {
            self.prov.insert(
                "not_carried.shared_interconnect".into(),
                format!(
                    "DISKSIM:{}: the array's disks share {}; DiskSim serialises their transfers on an exclusive bus, spindle gives each disk its own interface",
                    file_name(self.path),
                    shared.join("; ")
                ),
            );
        }
        self.check_other_blocks(&on_path, &members)?;
        let disk_block = self.block_of(disk_name)?;
        self.disk(disk_block, &bus_times)
    }

    /// The topology from the driver to `disk`: the node names, their blocks' names, and the
    /// per-block transfer times of the buses and controllers on it.
    fn interface(&self, disk: &str) -> Result<Interface<'a>, DiskSimError> {
        let top = self.top;
        let path = find_path(&top.topology, disk)
            .ok_or_else(|| self.err("topology", disk, "the disk is not in the topology"))?;
        let mut nodes: Vec<&str> = Vec::new();
        let mut on_path: Vec<&str> = Vec::new();
        let mut bus_times: Vec<BusTime<'a>> = Vec::new();
        for node in &path {
            let b = self.block_of(&node.name)?;
            on_path.push(&b.name);
            if b.type_name != node.type_name {
                return Err(self.err(
                    "topology",
                    &node.name,
                    format!(
                        "is a {} in the topology but instantiates a {}",
                        node.type_name, b.type_name
                    ),
                ));
            }
            match b.type_name.as_str() {
                "disksim_iodriver" => self.check_driver(b)?,
                "disksim_bus" => {
                    let mut r = Reader::new(b, format!("disksim_bus {}", b.name))?;
                    r.common("disksim_bus")?;
                    let rd = r.nonneg("Read block transfer time")?;
                    let wr = r.nonneg("Write block transfer time")?;
                    r.finish()?;
                    bus_times.push((rd, wr, b, "Read/Write block transfer time"));
                    nodes.push(&node.name);
                }
                "disksim_ctlr" => {
                    let mut r = Reader::new(b, format!("disksim_ctlr {}", b.name))?;
                    r.common("disksim_ctlr")?;
                    let t = r.int("type")?;
                    if t != 1 {
                        return Err(r.err(
                            "type",
                            format!("controller type {t} is not supported: only 1 (pass-through)"),
                        ));
                    }
                    let bulk = r.nonneg("Bulk sector transfer time")?;
                    r.finish()?;
                    bus_times.push((bulk, bulk, b, "Bulk sector transfer time"));
                    nodes.push(&node.name);
                }
                "disksim_disk" => {}
                other => {
                    return Err(self.err(
                        "topology",
                        &node.name,
                        format!("component type {other} is not supported"),
                    ))
                }
            }
        }
        Ok(Interface {
            nodes,
            blocks: on_path,
            times: bus_times,
        })
    }

    fn check_driver(&self, b: &Block) -> Result<(), DiskSimError> {
        let mut r = Reader::new(b, format!("disksim_iodriver {}", b.name))?;
        r.common("disksim_iodriver")?;
        let t = r.int("type")?;
        if t != 1 {
            return Err(r.err(
                "type",
                format!("driver type {t} is not supported: only 1 (requests pass to the device)"),
            ));
        }
        r.finish()
    }

    /// Every block not on the disk's path: statistics, workload, logical organisation, or
    /// components the disk never talks to.
    fn check_other_blocks(&self, on_path: &[&str], members: &[&str]) -> Result<(), DiskSimError> {
        for b in &self.top.blocks {
            if on_path.contains(&b.name.as_str()) {
                continue;
            }
            match b.type_name.as_str() {
                "disksim_global" | "disksim_stats" | "disksim_pf" | "disksim_synthio" => {
                    let mut r = Reader::new(b, format!("{} {}", b.type_name, b.name))?;
                    r.common(&b.type_name)?;
                    r.finish()?;
                }
                // One disk: the logorg must pass addresses through. Several: the logorg is the
                // array they form (its members checked in `run`); its parameters shape the
                // array, not the drive, and are read by `logorg::import_logorg`.
                "disksim_logorg" if members.len() == 1 => self.check_logorg(b, members[0])?,
                "disksim_logorg" => {}
                // Components not connected to the disk (or never instantiated) are not part of
                // its timing.
                "disksim_bus" | "disksim_ctlr" | "disksim_disk" | "disksim_iodriver" => {}
                other => {
                    return Err(DiskSimError {
                        file: b.file.clone(),
                        block: format!("{other} {}", b.name),
                        param: String::new(),
                        msg: "block type not supported by the importer".into(),
                    })
                }
            }
        }
        Ok(())
    }

    /// A logical organisation of just this disk, addresses passed through unchanged.
    fn check_logorg(&self, b: &Block, disk: &str) -> Result<(), DiskSimError> {
        let mut r = Reader::new(b, format!("disksim_logorg {}", b.name))?;
        let devices = r.list("devices")?;
        if devices.len() != 1 || devices[0].as_word() != Some(disk) {
            return Err(r.err("devices", format!("must be [ {disk} ] (one disk)")));
        }
        // Striping over one disk maps every address to itself.
        for (param, wants) in [
            ("Distribution scheme", &["Asis", "Striped"][..]),
            ("Redundancy scheme", &["Noredun"][..]),
        ] {
            let got = r.word(param)?;
            if !wants.contains(&got) {
                return Err(r.err(
                    param,
                    format!(
                        "{got} is not supported: only {} (one disk, addresses unchanged)",
                        wants.join(" or ")
                    ),
                ));
            }
        }
        // With one device, addresses passed through and no redundancy, the remaining
        // parameters (stripe units, copies, parity, time stamps) have nothing to act on.
        for u in r.used.iter_mut() {
            *u = true;
        }
        r.finish()
    }

    fn disk(
        mut self,
        b: &Block,
        bus_times: &[(f64, f64, &Block, &str)],
    ) -> Result<DriveSpec, DiskSimError> {
        let mut r = Reader::new(b, format!("disksim_disk {}", b.name))?;
        r.common("disksim_disk")?;
        let maxq = r.int("Max queue length")?;
        let sched = r.block("Scheduler")?;
        self.check_disk_queue(sched, maxq, &r.path)?;
        // Interface: DiskSim's per-block time is the largest of the disk's, its bus's and the
        // controller's (disk_get_blktranstime, controller and bus transfer times).
        let disk_bulk = r.nonneg("Bulk sector transfer time")?;
        let (mut rd, mut wr) = (disk_bulk, disk_bulk);
        let mut from = format!(
            "DISKSIM:{} \"Bulk sector transfer time = {disk_bulk}\"",
            file_name(&b.file)
        );
        for (brd, bwr, blk, what) in bus_times {
            if *brd > rd || *bwr > wr {
                from = format!(
                    "DISKSIM:{} {} {} \"{what} = {brd}/{bwr}\"",
                    file_name(&blk.file),
                    blk.type_name,
                    blk.name
                );
            }
            rd = rd.max(*brd);
            wr = wr.max(*bwr);
        }
        if rd != wr {
            self.prov.insert(
                "cache.bus_sector_write_ms".into(),
                format!("{from}: the largest of the disk's, its buses' and controller's per-block times for writes (DiskSim disk_get_blktranstime)"),
            );
        }
        self.prov.insert(
            "cache.bus_sector_ms".into(),
            format!("{from}: the largest of the disk's, its buses' and controller's per-block times for reads (DiskSim disk_get_blktranstime)"),
        );
        let per_request = r.nonneg("Per-request overhead time")?;
        self.cite(
            "cache.per_request_ms",
            b,
            "Per-request overhead time",
            per_request,
            "(delays each request's arrival at the controller, disk_event_arrive; the command overheads are in [cache] too)",
        );
        self.prov.insert(
            "overhead_read_ms".into(),
            format!("DISKSIM:{}: 0; DiskSim's per-request overhead is cache.per_request_ms (an arrival delay, not a cost of each media access)", file_name(&b.file)),
        );
        self.prov.insert(
            "overhead_write_ms".into(),
            format!(
                "DISKSIM:{}: 0; see cache.per_request_ms",
                file_name(&b.file)
            ),
        );
        let mut cache = self.cache(&mut r, rd)?;
        cache.per_request_ms = per_request;
        if rd != wr {
            cache.bus_sector_write_ms = Some(wr);
        }
        let model = r.block("Model")?;
        r.finish()?;
        let mut spec = self.model(model)?;
        spec.overhead_read_ms = 0.0;
        spec.overhead_write_ms = 0.0;
        spec.cache = Some(cache);
        spec.name = format!("{} (DiskSim 4.0 model)", b.name);
        let stem = file_name(self.path).trim_end_matches(".parv");
        spec.id = stem
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_lowercase()
                } else {
                    '_'
                }
            })
            .collect();
        spec.description = format!(
            "Imported from the DiskSim 4.0 parameter file {} by `spindle drives import`: every value \
             is DiskSim's, with the DiskSim-exact layout; see [provenance] (not_carried.* lists what \
             spindle's schema cannot hold yet).",
            file_name(self.path)
        );
        spec.provenance = std::mem::take(&mut self.prov);
        spec.sources.insert(
            "DISKSIM".into(),
            format!(
                "DiskSim 4.0 parameter files imported from {} ({})",
                self.path,
                self.top
                    .files
                    .iter()
                    .map(|f| file_name(f))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        );
        Ok(spec)
    }

    fn check_disk_queue(&self, sched: &Block, maxq: i64, path: &str) -> Result<(), DiskSimError> {
        let mut q = Reader::new(sched, format!("{path} / Scheduler"))?;
        if sched.type_name != "disksim_ioqueue" {
            return Err(q.err("Scheduler", format!("{} is not supported", sched.type_name)));
        }
        let policy = q.int("Scheduling policy")?;
        if maxq > 1 && policy != 1 {
            return Err(q.err(
                "Scheduling policy",
                format!("policy {policy} with Max queue length {maxq}: the disk would reorder requests, which spindle's drive does not model (use 1, FCFS, or a queue of 1)"),
            ));
        }
        // One request at the disk, or arrival order: the queue's knobs have nothing to reorder.
        for (i, p) in sched.params.iter().enumerate() {
            if QUEUE.contains(&p.name.as_str()) {
                q.used[i] = true;
            }
        }
        q.finish()
    }

    /// `dm_disk`: geometry, layout and mechanics.
    fn model(&mut self, b: &Block) -> Result<DriveSpec, DiskSimError> {
        let mut r = Reader::new(b, format!("dm_disk {}", b.name))?;
        if b.type_name != "dm_disk" {
            return Err(r.err(
                "Model",
                format!("{} is not supported: only dm_disk", b.type_name),
            ));
        }
        r.common("dm_disk")?;
        let surfaces = r.u32("Number of data surfaces")?;
        let cylinders = r.u32("Number of cylinders")?;
        // Checked here, before the seek table (one entry per cylinder distance) is built.
        let max = crate::drive::geometry::CYLINDERS_MAX;
        if cylinders == 0 || cylinders > max {
            return Err(r.err(
                "Number of cylinders",
                format!("must be within 1..={max}, got {cylinders}"),
            ));
        }
        self.cite("surfaces", b, "Number of data surfaces", surfaces, "");
        self.cite("cylinders", b, "Number of cylinders", cylinders, "");
        let declared = r.get("Block count").map(|p| p.value.show());
        let layout = r.block("Layout Model")?;
        let mech = r.block("Mechanical Model")?;
        let path = r.path.clone();
        r.finish()?;
        let (zones, layout_spec) = self.layout(layout, &path)?;
        let mut spec = DriveSpec {
            id: String::new(),
            name: String::new(),
            description: String::new(),
            estimated: false,
            rpm: 0.0,
            sector_bytes: 512,
            surfaces,
            cylinders,
            zones,
            slips: Vec::new(),
            seek: SeekSpec::Linear {
                full_ms: 0.0,
                intercept_ms: 0.0,
            },
            head_switch_ms: 0.0,
            write_settle_ms: 0.0,
            // DiskSim's zero-latency switches are the disk's "Immediate buffer read" and
            // "Immediate buffer write" ([cache] immediate_buffer_read/write); its g1
            // mechanics still start every access at the requested sector
            // (`g1_access_block`), so the imported drive keeps the mechanical flag off to
            // reproduce DiskSim (docs/track_aligned.md).
            zero_latency: false,
            overhead_read_ms: 0.0,
            overhead_write_ms: 0.0,
            noise: NoiseSpec::default(),
            layout: layout_spec,
            cache: None,
            power: None,
            provenance: BTreeMap::new(),
            sources: BTreeMap::new(),
        };
        self.prov.insert(
            "sector_bytes".into(),
            format!(
                "DISKSIM:{}: DiskSim blocks are 512 bytes",
                file_name(&b.file)
            ),
        );
        self.mech(mech, &path, &mut spec)?;
        // Capacity as DiskSim computes it: the zone sum, whatever `Block count` says.
        let geo = super::Geometry::new(&spec).map_err(|e| DiskSimError {
            file: b.file.clone(),
            block: path.clone(),
            param: "Layout Model".into(),
            msg: format!("the model does not give a usable drive: {e}"),
        })?;
        let cap = geo.capacity_sectors();
        let note = match declared {
            Some(d) if d == cap.to_string() => format!("equals the declared \"Block count = {d}\""),
            Some(d) => format!("the declared \"Block count = {d}\" is overridden, as DiskSim does (layout_g1_load.c checknumblocks)"),
            None => "no Block count declared".into(),
        };
        self.prov.insert(
            "capacity".into(),
            format!("DISKSIM:{}: {cap} blocks, the sum of dm_layout_g1_compute_blksinband over the zones; {note}", file_name(&b.file)),
        );
        Ok(spec)
    }

    fn layout(
        &mut self,
        b: &Block,
        parent: &str,
    ) -> Result<(Vec<ZoneSpec>, LayoutSpec), DiskSimError> {
        let mut r = Reader::new(b, format!("{parent} / Layout Model ({})", b.type_name))?;
        if b.type_name != "dm_layout_g1" {
            return Err(r.err(
                "Layout Model",
                format!("{} is not supported: only dm_layout_g1", b.type_name),
            ));
        }
        let mapping_n = r.int("LBN-to-PBN mapping scheme")?;
        let mapping = Mapping::from_disksim_number(mapping_n).ok_or_else(|| {
            r.err(
                "LBN-to-PBN mapping scheme",
                format!("must be 0, 1 or 2, got {mapping_n}"),
            )
        })?;
        let sparing_n = r.int("Sparing scheme used")?;
        let sparing = Sparing::from_disksim_number(sparing_n).ok_or_else(|| {
            r.err(
                "Sparing scheme used",
                format!("must be within 0..=10, got {sparing_n}"),
            )
        })?;
        let range = r.int("Rangesize for sparing")?;
        let range = u32::try_from(range)
            .ok()
            .filter(|&x| x > 0)
            .ok_or_else(|| r.err("Rangesize for sparing", format!("must be > 0, got {range}")))?;
        // DiskSim reads a layout-wide "Skew units" into the zones only if it comes first.
        let zones_line = b.params.iter().find(|p| p.name == "Zones").map(|p| p.line);
        let mut unit = SkewUnit::Sectors;
        if let Some(p) = r.get("Skew units") {
            let w = p.value.as_word().unwrap_or("");
            let u = match w {
                "sectors" => SkewUnit::Sectors,
                "revolutions" => SkewUnit::Revolutions,
                _ => {
                    return Err(r.err(
                        "Skew units",
                        format!("must be sectors or revolutions, got {}", p.value.show()),
                    ))
                }
            };
            if zones_line.is_some_and(|zl| p.line < zl) {
                unit = u;
            }
        }
        let list = r.list("Zones")?;
        let path = r.path.clone();
        r.finish()?;
        self.cite("layout.sparing", b, "Sparing scheme used", sparing_n, "");
        self.cite(
            "layout.mapping",
            b,
            "LBN-to-PBN mapping scheme",
            mapping_n,
            "",
        );
        self.cite(
            "layout.sparing_range_cylinders",
            b,
            "Rangesize for sparing",
            range,
            "",
        );
        let mut zones = Vec::new();
        let mut lzones = Vec::new();
        for (i, v) in list.iter().enumerate() {
            let Kind::Block(z) = &v.kind else {
                return Err(DiskSimError {
                    file: b.file.clone(),
                    block: path.clone(),
                    param: format!("Zones[{i}]"),
                    msg: format!("expected a dm_layout_g1_zone block, got {}", v.show()),
                });
            };
            let (zs, lz) = self.zone(z, &format!("{path} / Zones[{i}]"), unit)?;
            zones.push(zs);
            lzones.push(lz);
        }
        if zones.is_empty() {
            return Err(DiskSimError {
                file: b.file.clone(),
                block: path,
                param: "Zones".into(),
                msg: "no zones".into(),
            });
        }
        self.prov.insert(
            "zones".into(),
            format!(
                "DISKSIM:{}: {} dm_layout_g1_zone blocks (\"First/Last cylinder number\", \"Blocks per track\", \"Skew for track switch\", \"Skew for cylinder switch\"; skews in {}), as DiskSim lists them",
                file_name(&b.file),
                zones.len(),
                if unit == SkewUnit::Sectors { "sectors" } else { "revolutions" }
            ),
        );
        self.prov.insert(
            "layout.zones".into(),
            format!("DISKSIM:{}: each zone's \"Number of spares\", \"Empty space at zone front\", \"Offset of first block\", \"slips\", \"defects\"", file_name(&b.file)),
        );
        let layout = LayoutSpec {
            sparing: Some(sparing),
            sparing_range_cylinders: range,
            mapping,
            zones: lzones,
        };
        Ok((zones, layout))
    }

    fn zone(
        &mut self,
        b: &Block,
        path: &str,
        unit: SkewUnit,
    ) -> Result<(ZoneSpec, LayoutZone), DiskSimError> {
        let mut r = Reader::new(b, path.to_string())?;
        if b.type_name != "dm_layout_g1_zone" {
            return Err(r.err(
                "Zones",
                format!("{} is not a dm_layout_g1_zone", b.type_name),
            ));
        }
        if r.get("Skew units").is_some() {
            return Err(r.err("Skew units", "a per-zone skew unit is not supported (DiskSim applies it only to parameters read after it)"));
        }
        let first = r.u32("First cylinder number")?;
        let last = r.u32("Last cylinder number")?;
        let spt = r.u32("Blocks per track")?;
        // Checked here: the layout's run table is built per track and per 256 LBNs.
        let max = crate::drive::geometry::SECTORS_PER_TRACK_MAX;
        if spt == 0 || spt > max {
            return Err(r.err(
                "Blocks per track",
                format!("must be within 1..={max}, got {spt}"),
            ));
        }
        let skew = |r: &mut Reader<'_>, name: &str| -> Result<f64, DiskSimError> {
            let v = r.nonneg(name)?;
            if unit == SkewUnit::Sectors && v >= layout_g1::MAX_SKEW_SECTORS {
                return Err(r.err(name, format!("{}, got {v}", layout_g1::SKEW_SECTORS_RANGE)));
            }
            Ok(v)
        };
        let offset = skew(&mut r, "Offset of first block")?;
        let front = r.u32("Empty space at zone front")?;
        let track_skew = skew(&mut r, "Skew for track switch")?;
        let cyl_skew = skew(&mut r, "Skew for cylinder switch")?;
        let spares = r.u32("Number of spares")?;
        let ints = |r: &Reader<'_>, name: &str, l: &[Value]| -> Result<Vec<u32>, DiskSimError> {
            l.iter()
                .map(|v| {
                    v.as_int()
                        .and_then(|i| u32::try_from(i).ok())
                        .ok_or_else(|| {
                            r.err(
                                name,
                                format!("entries must be integers >= 0, got {}", v.show()),
                            )
                        })
                })
                .collect()
        };
        let slips_l = r.list("slips")?;
        let slips = ints(&r, "slips", slips_l)?;
        let defects_l = r.list("defects")?;
        let d = ints(&r, "defects", defects_l)?;
        if d.len() % 2 != 0 {
            return Err(r.err(
                "defects",
                "needs (defect, replacement) pairs: an even number of entries",
            ));
        }
        r.finish()?;
        let defects = d.chunks(2).map(|c| (c[0], c[1])).collect();
        Ok((
            ZoneSpec {
                first_cylinder: first,
                last_cylinder: last,
                sectors_per_track: spt,
                track_skew,
                cylinder_skew: cyl_skew,
                skew_unit: unit,
                spare_sectors_per_track: 0,
                spare_sectors_per_zone: 0,
            },
            LayoutZone {
                spares,
                front_space_sectors: front,
                first_block_offset: offset,
                slips,
                defects,
            },
        ))
    }
}

/// The chain of topology nodes from the root to the named component.
fn find_path<'t>(nodes: &'t [Topo], name: &str) -> Option<Vec<&'t Topo>> {
    for n in nodes {
        if n.name == name {
            return Some(vec![n]);
        }
        if let Some(mut rest) = find_path(&n.children, name) {
            rest.insert(0, n);
            return Some(rest);
        }
    }
    None
}

#[cfg(test)]
mod tests;
