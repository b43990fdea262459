//! What every array controller shares: the [`Engine`] contract drivers use (host requests
//! in, disk-busy and completion actions out, with `now` as an argument), the bytes behind
//! disk operations ([`data`]), and the machinery the controllers are built from.

pub mod accounting;
pub mod data;
mod failure;
mod host;
mod outbox;
mod slab;

pub use accounting::{Busy, Cause, CauseShares, DiskClock};
pub use data::{
    xor_pieces, Bytes, CopyRuns, DataMove, DiskReader, NvramBytes, NvramWrite, Piece, RecoverError,
    Source,
};
pub use failure::{
    rebuild_step_due, FailureClock, FailureConfig, REBUILD_STEPS_IN_FLIGHT, REBUILD_STEP_BYTES,
};
pub use host::{HostSlot, HostTable};
pub use outbox::Outbox;
pub use slab::Slab;

/// Asks the CPU to bring in the cache line at `at`, so a miss on it overlaps other work; no
/// effect on results.
#[inline]
pub fn prefetch<T>(at: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint that never faults and reads nothing into the program.
    // SSE is baseline on x86_64.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(at.cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}

use crate::drive::{Access, HeadState, PowerCommand, PowerTotals};
use crate::sched::SchedStats;
use crate::{Nanos, Op, Span};
use serde::Serialize;

/// A host (client) request in logical sectors of the drive's sector size.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct HostRequest {
    /// Issue order, unique per run.
    pub id: u64,
    pub op: Op,
    pub lba: u64,
    pub sectors: u32,
    pub arrival: Nanos,
}

/// Where a host request's response time went, summed along its critical path.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Breakdown {
    pub queue: Span,
    pub overhead: Span,
    pub seek: Span,
    pub rotation: Span,
    pub transfer: Span,
    pub switches: Span,
}

impl Breakdown {
    /// The breakdown of a request whose critical path is `access`, after `queue` waiting.
    pub fn of(access: &Access, queue: Span) -> Breakdown {
        Breakdown {
            queue,
            overhead: access.overhead,
            seek: access.seek,
            rotation: access.rotation,
            transfer: access.transfer,
            switches: access.switches,
        }
    }
}

/// An answered host request.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Completion {
    pub id: u64,
    pub op: Op,
    pub sectors: u32,
    pub arrival: Nanos,
    pub done: Nanos,
    pub breakdown: Breakdown,
}

impl Completion {
    pub fn latency(&self) -> Span {
        self.done.since(self.arrival)
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Event {
    Host(HostRequest),
    DiskDone {
        disk: usize,
    },
    /// A time the controller asked for with [`Action::Wake`] has come.
    Wake,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Disk `disk` started an operation that ends at `until`.
    DiskBusy {
        disk: usize,
        until: Nanos,
    },
    Complete(Completion),
    /// Call [`Engine::handle`] with [`Event::Wake`] at `at` (a controller's own timer: a
    /// paced rebuild, a scheduled disk failure). Controllers that never ask need no driver
    /// support beyond this.
    Wake {
        at: Nanos,
    },
}

/// A disk failure and the rebuild of its contents onto a spare, for a controller with
/// redundancy (parity arrays).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct RebuildStatus {
    pub disk: usize,
    pub failed_at: Nanos,
    /// When the rebuild began (after the work the disk had accepted was done); `None`
    /// before, or when the array runs degraded with no rebuild.
    pub started: Option<Nanos>,
    pub done: Option<Nanos>,
    pub stripes_done: u64,
    pub stripes_total: u64,
}

/// Latent sector errors met and repaired, cumulative (a report takes differences over its
/// window): mirrored and rotationally replicated layouts (`array.latent_error_rate`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct LatentCounters {
    /// Disk reads that met an unreadable sector (each is served again by another copy).
    pub errors: u64,
    /// Host reads (parts) with no readable copy left: answered without their data.
    pub unrecoverable: u64,
    /// Repair writes done, and the sectors they rewrote.
    pub repairs: u64,
    pub repaired_sectors: u64,
    /// Repairs dropped because a newer write reached their sectors first.
    pub superseded: u64,
}

/// Per-disk counters, readable at any time.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct DiskCounters {
    pub ops: u64,
    /// Delayed writes (replica propagations) served.
    pub propagations: u64,
    /// Busy time spent appending the logical-to-physical map log and its checkpoints
    /// (eager-writing arrays; part of the busy time).
    pub map_logging: Span,
    pub sched: SchedStats,
}

/// A controller's write-cache counters, cumulative (a report takes differences over its
/// window).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct CacheCounters {
    pub capacity_blocks: u64,
    /// Blocks occupied now (dirty, or waiting for destage).
    pub occupied_blocks: u64,
    /// ∫ occupied blocks dt, block·ns.
    pub occupied_block_ns: u128,
    pub host_write_blocks: u64,
    /// Blocks written to disk: destaged data and parity, and classic updates' data and
    /// parity.
    pub disk_write_blocks: u64,
    /// Host writes that found the write cache full.
    pub overflows: u64,
    pub host_reads: u64,
    /// Host reads answered from the caches without a disk access.
    pub read_hits: u64,
    /// Host reads that needed a disk access, answered, and their response times summed
    /// (ns): the paper's "host reads serviced by the disks".
    pub disk_reads: u64,
    pub disk_read_ns: u128,
    /// Destage write accesses (a same-track batch is one) and their service times summed
    /// (ns): positioning and transfer, queueing excluded (the paper's fig. 13).
    pub destage_writes: u64,
    pub destage_write_ns: u128,
}

/// Deferred work a controller owes at an instant: disk operations no host request waits
/// for (delayed replica writes, eager propagations, DDM home moves, map log appends, and
/// later destage and cleaning), queued or running, and the NVRAM entries kept for them.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Backlog {
    /// Deferred disk operations pending (queued or in flight).
    pub ops: u64,
    /// Bytes those operations will write (or read).
    pub bytes: u64,
    /// Entries of the NVRAM table recording work still to do (pieces with copies to
    /// propagate; eager writing: blocks waiting for propagation or a move home).
    pub nvram_entries: u64,
}

/// The paged disk's page state at an instant, summed over its disks (docs/paged.md).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PagedStatus {
    /// Pages living as bad tenants.
    pub tenants: u64,
    /// Pages at home with fewer than all their replicas.
    pub thin: u64,
    /// Pages the cleaner has moved home or re-replicated so far.
    pub cleaned: u64,
    /// Host requests accepted so far that are not whole pages (offset or length), each of
    /// whose pages became its own disk command.
    pub unaligned: u64,
    /// The page size in bytes.
    pub page_bytes: u64,
}

/// What a driver needs of an array controller: the SR-Mirror family's [`crate::array::Array`] and the
/// eager-writing [`crate::ew::EwArray`] both are deterministic sans-I/O state machines fed
/// with [`Engine::handle`] and drained with [`Engine::poll_action`] (see [`crate::array::Array`]).
pub trait Engine: Send {
    fn handle(&mut self, now: Nanos, ev: Event);
    #[must_use]
    fn poll_action(&mut self) -> Option<Action>;
    /// Host requests accepted and not yet answered.
    fn outstanding(&self) -> usize;
    /// Logical capacity in sectors.
    fn capacity_sectors(&self) -> u64;
    /// A hint, without effect on results: a host request for `lba` is coming soon, so the
    /// controller may start loading what its address mapping will need (a large drive
    /// layout's table, out of cache for a random address) while other events run.
    fn prefetch(&self, lba: u64) {
        let _ = lba;
    }
    fn disk_count(&self) -> usize;
    fn sector_bytes(&self) -> u32;
    /// The smallest unit and alignment, in bytes, of the host requests this controller
    /// accepts with data moves on (every request's offset and length a multiple of it): a
    /// sector, or a larger block for a controller that places whole blocks (the EW-Array's
    /// 4 KiB).
    fn io_align_bytes(&self) -> u32 {
        self.sector_bytes()
    }
    /// Cumulative busy time of `disk` by cause up to instant `t` (t ≥ the last event
    /// handled).
    fn busy(&self, disk: usize, t: Nanos) -> Busy;
    fn counters(&self, disk: usize) -> DiskCounters;
    /// Cumulative power totals of `disk` up to instant `t` (t ≥ the last event handled), for
    /// a drive with power data (docs/power.md).
    fn power(&self, disk: usize, t: Nanos) -> Option<PowerTotals> {
        let _ = (disk, t);
        None
    }
    /// Commands `disk` down to a low-power state or back up at `now` (≥ the last event
    /// handled): the explicit spin-down policy's API (any policy accepts it). A request that
    /// reaches a disk that is down waits for it to come back. No effect on a drive without
    /// power data.
    fn power_command(&mut self, now: Nanos, disk: usize, cmd: PowerCommand) {
        let _ = (now, disk, cmd);
    }
    /// The deferred work pending now (after the last event handled).
    fn backlog(&self) -> Backlog {
        Backlog::default()
    }
    /// The write cache's counters up to instant `t` (t ≥ the last event handled), for a
    /// controller with one.
    fn cache(&self, t: Nanos) -> Option<CacheCounters> {
        let _ = t;
        None
    }
    /// The failed disk and its rebuild, once a disk has failed.
    fn rebuild(&self) -> Option<RebuildStatus> {
        None
    }
    /// Latent sector errors met and repaired so far, for a controller simulating them.
    fn latent(&self) -> Option<LatentCounters> {
        None
    }
    /// The paged disk's bad tenants and cleaning so far.
    fn paged(&self) -> Option<PagedStatus> {
        None
    }
    /// Time to rebuild the controller's volatile state after a crash now (eager-writing
    /// arrays: reading the map log), if it has any.
    fn recovery_time(&self) -> Option<Span> {
        None
    }
    /// Drivers that move real bytes turn this on before the first event: from then on
    /// every disk operation started is also described by a [`DataMove`] for
    /// [`Engine::poll_data`]. Returns `false` if this engine cannot describe its bytes.
    fn enable_data_moves(&mut self) -> bool {
        false
    }
    /// Drivers of real disks (`spindle serve --disks`, docs/calibrate.md "The real
    /// driver") turn this on, after [`Engine::enable_data_moves`] and before the first
    /// event: a disk operation then ends when the real disk answers — [`Event::DiskDone`]
    /// comes at that instant, which the `until` of its [`Action::DiskBusy`] only predicted
    /// — and each disk's platter turns at the phase the driver measured
    /// ([`Engine::set_disk_head`]). Refused, with the reason, by a controller whose work a
    /// real driver cannot carry out.
    fn enable_real_disks(&mut self) -> Result<(), String> {
        Err(
            "this controller cannot drive real disks: only the mirrored family (JBOD, \
             striping, RAID-10, SR-Array, SR-Mirror with foreground writes) can"
                .into(),
        )
    }
    /// Where head tracking has `disk`'s arm and platter (real disks only; see
    /// [`Engine::enable_real_disks`]): the model's angle at instant `t` is
    /// `(t + head.phase_ns) mod period`. While an operation runs, its end still places the
    /// arm when it completes.
    fn set_disk_head(&mut self, disk: usize, head: HeadState) {
        let _ = (disk, head);
    }
    /// The next data move, in the order the operations started (drain it before acting on
    /// later completions).
    #[must_use]
    fn poll_data(&mut self) -> Option<DataMove> {
        None
    }
    /// The next change to the NVRAM image, in order (see [`data`]: apply it before acting
    /// on later actions).
    #[must_use]
    fn poll_nvram(&mut self) -> Option<NvramWrite> {
        None
    }
    /// On a freshly built controller with data moves on, before its first event: rebuilds
    /// what a crash lost from the NVRAM image `nvram` and the disks, and returns the repair
    /// moves to perform before serving (see [`data`]).
    fn recover(
        &mut self,
        nvram: &[u8],
        read: &mut DiskReader<'_>,
    ) -> Result<Vec<DataMove>, RecoverError> {
        let _ = read;
        if nvram.iter().any(|&b| b != 0) {
            return Err(RecoverError(
                "this controller keeps no NVRAM, but the image is not empty".into(),
            ));
        }
        Ok(Vec::new())
    }
}

impl<E: Engine + ?Sized> Engine for Box<E> {
    fn handle(&mut self, now: Nanos, ev: Event) {
        (**self).handle(now, ev)
    }
    fn poll_action(&mut self) -> Option<Action> {
        (**self).poll_action()
    }
    fn outstanding(&self) -> usize {
        (**self).outstanding()
    }
    fn capacity_sectors(&self) -> u64 {
        (**self).capacity_sectors()
    }
    fn prefetch(&self, lba: u64) {
        (**self).prefetch(lba)
    }
    fn disk_count(&self) -> usize {
        (**self).disk_count()
    }
    fn sector_bytes(&self) -> u32 {
        (**self).sector_bytes()
    }
    fn io_align_bytes(&self) -> u32 {
        (**self).io_align_bytes()
    }
    fn busy(&self, disk: usize, t: Nanos) -> Busy {
        (**self).busy(disk, t)
    }
    fn counters(&self, disk: usize) -> DiskCounters {
        (**self).counters(disk)
    }
    fn power(&self, disk: usize, t: Nanos) -> Option<PowerTotals> {
        (**self).power(disk, t)
    }
    fn power_command(&mut self, now: Nanos, disk: usize, cmd: PowerCommand) {
        (**self).power_command(now, disk, cmd)
    }
    fn backlog(&self) -> Backlog {
        (**self).backlog()
    }
    fn cache(&self, t: Nanos) -> Option<CacheCounters> {
        (**self).cache(t)
    }
    fn recovery_time(&self) -> Option<Span> {
        (**self).recovery_time()
    }
    fn rebuild(&self) -> Option<RebuildStatus> {
        (**self).rebuild()
    }
    fn latent(&self) -> Option<LatentCounters> {
        (**self).latent()
    }
    fn paged(&self) -> Option<PagedStatus> {
        (**self).paged()
    }
    fn enable_data_moves(&mut self) -> bool {
        (**self).enable_data_moves()
    }
    fn enable_real_disks(&mut self) -> Result<(), String> {
        (**self).enable_real_disks()
    }
    fn set_disk_head(&mut self, disk: usize, head: HeadState) {
        (**self).set_disk_head(disk, head)
    }
    fn poll_data(&mut self) -> Option<DataMove> {
        (**self).poll_data()
    }
    fn poll_nvram(&mut self) -> Option<NvramWrite> {
        (**self).poll_nvram()
    }
    fn recover(
        &mut self,
        nvram: &[u8],
        read: &mut DiskReader<'_>,
    ) -> Result<Vec<DataMove>, RecoverError> {
        (**self).recover(nvram, read)
    }
}
