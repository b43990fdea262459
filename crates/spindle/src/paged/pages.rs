//! One disk's page map (paged-disk paper, 3.2): the tracks cut into page slots, each page's
//! replicas evenly spaced around its home track, and where every page lives now — at home
//! (a set of its home replicas) or as a bad tenant in one slot of another page's track.
//!
//! **Layout.** The disk's page region (LBAs `0 .. region_sectors`) is walked track by track
//! ([`crate::drive::Geometry::run_on_track`]): a track of `S` page slots (`S = sectors /
//! page_sectors`; a page never spans a track, the leftover sectors are unused) holds
//! `P = floor(S / r)` pages, `r` = replicas. Home replica `j` of the track's `i`-th page is
//! slot `i + j·P`: the replicas are `P` slots apart, evenly spaced up to the `S − r·P`
//! leftover slots at the track's end, which start unallocated. Zones vary `S`, so `P`.
//! Replica 0 is the page's **home replica**: its slot is never written by another page.
//!
//! **State.** Per page a [`PageState`]: `Home(mask)` — the home replicas holding its newest
//! acknowledged version (bit j), or `Tenant(slot)` — its one copy, a bad tenant. Per slot the
//! page it holds or [`NONE`] (unallocated). The two agree at all times
//! ([`PageMap::check`]).
//!
//! Pure: no clock, no I/O. Caller bugs (an out-of-range page) panic.

use crate::drive::{Drive, Target};
use std::sync::Arc;

/// No page: an unallocated slot.
pub const NONE: u32 = u32::MAX;
const TENANT: u32 = 1 << 31;

/// One track of the page region.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Track {
    pub first_lba: u64,
    pub cylinder: u32,
    pub head: u32,
    /// Page slots `S`.
    pub slots: u32,
    /// Pages homed here `P = floor(S / r)`.
    pub pages: u32,
    pub first_slot: u32,
    pub first_page: u32,
}

/// Where a page lives, encoded in 32 bits (the map log's record).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum PageState {
    /// Its home replicas holding the newest acknowledged version (bit j: replica j).
    Home(u8),
    /// A bad tenant: its one copy in this slot.
    Tenant(u32),
}

impl PageState {
    pub fn encode(self) -> u32 {
        match self {
            PageState::Home(m) => u32::from(m),
            PageState::Tenant(s) => {
                assert!(s < TENANT, "slot {s} fits 31 bits");
                TENANT | s
            }
        }
    }

    /// The state of a record; `None` for a value no state encodes.
    pub fn decode(v: u32) -> Option<PageState> {
        if v & TENANT != 0 {
            Some(PageState::Tenant(v & !TENANT))
        } else {
            u8::try_from(v).ok().map(PageState::Home)
        }
    }
}

/// The immutable cut of a disk into tracks and slots, shared by every disk of an array.
#[derive(Debug)]
pub struct Cut {
    pub tracks: Vec<Track>,
    pub slots: u32,
    pub pages: u32,
    pub replicas: u32,
    pub page_sectors: u32,
    /// Track index by `cylinder · surfaces + head` (the first with that position), or NONE.
    by_position: Vec<u32>,
    surfaces: u32,
}

impl Cut {
    /// Cuts LBAs `0 .. region_sectors` of `drive` into page slots of `page_sectors` on tracks
    /// of at least `replicas` slots (a track with fewer holds no page and is skipped).
    pub fn new(
        drive: &Drive,
        region_sectors: u64,
        page_sectors: u32,
        replicas: u32,
    ) -> Result<Cut, String> {
        assert!(page_sectors > 0 && replicas > 0);
        let geo = drive.geometry();
        let end = region_sectors.min(drive.capacity_sectors());
        let mut tracks = Vec::new();
        let (mut slots, mut pages) = (0u64, 0u64);
        let mut lba = 0u64;
        while lba < end {
            let run = u64::from(geo.run_on_track(lba)).min(end - lba);
            let s = u32::try_from(run / u64::from(page_sectors)).expect("slots on a track fit");
            let p = s / replicas;
            if p > 0 {
                let chs = geo.lba_to_chs(lba);
                let first_slot = u32::try_from(slots)
                    .ok()
                    .filter(|&v| v < TENANT)
                    .ok_or("more than 2^31 page slots on a disk")?;
                let first_page =
                    u32::try_from(pages).map_err(|_| "more than 2^32 pages on a disk")?;
                tracks.push(Track {
                    first_lba: lba,
                    cylinder: chs.cylinder,
                    head: chs.head,
                    slots: s,
                    pages: p,
                    first_slot,
                    first_page,
                });
                slots += u64::from(s);
                pages += u64::from(p);
            }
            lba += run.max(1);
        }
        if tracks.is_empty() {
            return Err(format!(
                "no track of the {} holds {replicas} pages of {page_sectors} sectors",
                drive.id
            ));
        }
        let slots = u32::try_from(slots)
            .ok()
            .filter(|&v| v < TENANT)
            .ok_or("more than 2^31 page slots on a disk")?;
        let pages = u32::try_from(pages).map_err(|_| "more than 2^32 pages on a disk")?;
        let surfaces = geo.surfaces();
        let mut by_position = vec![NONE; geo.cylinders() as usize * surfaces as usize];
        for (i, t) in tracks.iter().enumerate() {
            let k = t.cylinder as usize * surfaces as usize + t.head as usize;
            if by_position[k] == NONE {
                by_position[k] = u32::try_from(i).expect("tracks fit u32");
            }
        }
        Ok(Cut {
            tracks,
            slots,
            pages,
            replicas,
            page_sectors,
            by_position,
            surfaces,
        })
    }

    /// The track holding slot `s`.
    pub fn track_of_slot(&self, s: u32) -> usize {
        assert!(s < self.slots, "slot {s} beyond {}", self.slots);
        self.tracks.partition_point(|t| t.first_slot <= s) - 1
    }

    /// Page `p`'s home track.
    pub fn track_of_page(&self, p: u32) -> usize {
        assert!(p < self.pages, "page {p} beyond {}", self.pages);
        self.tracks.partition_point(|t| t.first_page <= p) - 1
    }

    /// Home replica `j` of page `p`.
    pub fn home_slot(&self, p: u32, j: u32) -> u32 {
        assert!(j < self.replicas, "replica {j} of {}", self.replicas);
        let t = &self.tracks[self.track_of_page(p)];
        t.first_slot + (p - t.first_page) + j * t.pages
    }

    /// `(page, replica)` whose home slot `s` is, or `None` for a leftover slot.
    pub fn home_of_slot(&self, s: u32) -> Option<(u32, u32)> {
        let t = &self.tracks[self.track_of_slot(s)];
        let k = s - t.first_slot;
        (k < t.pages * self.replicas).then(|| (t.first_page + k % t.pages, k / t.pages))
    }

    /// Whether `s` is some page's home replica (replica 0).
    pub fn is_home_replica(&self, s: u32) -> bool {
        matches!(self.home_of_slot(s), Some((_, 0)))
    }

    /// Slot `s`'s first LBA.
    pub fn lba(&self, s: u32) -> u64 {
        let t = &self.tracks[self.track_of_slot(s)];
        t.first_lba + u64::from((s - t.first_slot) * self.page_sectors)
    }

    /// Slot `s`'s rotational target on `drive` (the drive the cut was made from).
    pub fn target(&self, drive: &Drive, s: u32) -> Target {
        drive.locate(self.lba(s))
    }

    /// The tracks under the head at `(cylinder, head)` (usually one; a track split by a slip
    /// is several).
    pub fn tracks_at(&self, cylinder: u32, head: u32) -> impl Iterator<Item = usize> + '_ {
        let k = cylinder as usize * self.surfaces as usize + head as usize;
        let first = self.by_position.get(k).copied().unwrap_or(NONE);
        let start = if first == NONE {
            self.tracks.len()
        } else {
            first as usize
        };
        self.tracks[start..]
            .iter()
            .take_while(move |t| t.cylinder == cylinder && t.head == head)
            .enumerate()
            .map(move |(i, _)| start + i)
    }
}

/// One disk's page map (module doc). Equal maps hold the same states (over the same cut).
#[derive(Clone, Debug)]
pub struct PageMap {
    pub cut: Arc<Cut>,
    state: Vec<u32>,
    slot_page: Vec<u32>,
    /// Pages living as bad tenants.
    tenants: u64,
}

impl PartialEq for PageMap {
    fn eq(&self, o: &PageMap) -> bool {
        self.state == o.state && self.slot_page == o.slot_page && self.tenants == o.tenants
    }
}

impl PageMap {
    /// Every page at home with all its replicas; the leftover slots unallocated.
    pub fn new(cut: Arc<Cut>) -> PageMap {
        let full = PageState::Home(((1u32 << cut.replicas) - 1) as u8).encode();
        let mut slot_page = vec![NONE; cut.slots as usize];
        for t in &cut.tracks {
            for k in 0..t.pages * cut.replicas {
                slot_page[(t.first_slot + k) as usize] = t.first_page + k % t.pages;
            }
        }
        PageMap {
            state: vec![full; cut.pages as usize],
            slot_page,
            tenants: 0,
            cut,
        }
    }

    pub fn pages(&self) -> u32 {
        self.cut.pages
    }

    pub fn state(&self, p: u32) -> PageState {
        PageState::decode(self.state[p as usize]).expect("a valid state")
    }

    /// The page slot `s` holds, or [`NONE`].
    pub fn page_at(&self, s: u32) -> u32 {
        self.slot_page[s as usize]
    }

    /// Pages living as bad tenants now.
    pub fn tenants(&self) -> u64 {
        self.tenants
    }

    /// The slots holding page `p`'s newest acknowledged version.
    pub fn copies(&self, p: u32) -> impl Iterator<Item = u32> + '_ {
        let st = self.state(p);
        let r = self.cut.replicas;
        let (tenant, mask) = match st {
            PageState::Tenant(s) => (Some(s), 0u8),
            PageState::Home(m) => (None, m),
        };
        tenant.into_iter().chain(
            (0..r)
                .filter(move |j| mask & (1 << j) != 0)
                .map(move |j| self.cut.home_slot(p, j)),
        )
    }

    pub fn copy_count(&self, p: u32) -> u32 {
        match self.state(p) {
            PageState::Tenant(_) => 1,
            PageState::Home(m) => m.count_ones(),
        }
    }

    /// Sets page `p`'s state, updating the slots (old copies unallocated, new ones held).
    /// Returns the record to log.
    pub fn set(&mut self, p: u32, st: PageState) -> u32 {
        let old: Vec<u32> = self.copies(p).collect();
        for s in old {
            debug_assert_eq!(self.slot_page[s as usize], p);
            self.slot_page[s as usize] = NONE;
        }
        if matches!(self.state(p), PageState::Tenant(_)) {
            self.tenants -= 1;
        }
        self.state[p as usize] = st.encode();
        let new: Vec<u32> = self.copies(p).collect();
        for s in new {
            assert!(
                self.slot_page[s as usize] == NONE,
                "slot {s} of page {p} still holds page {}",
                self.slot_page[s as usize]
            );
            self.slot_page[s as usize] = p;
        }
        if matches!(st, PageState::Tenant(_)) {
            self.tenants += 1;
        }
        st.encode()
    }

    /// Drops slot `s` from the copies of the page it holds (about to be overwritten);
    /// returns `(page, its new state)`, or `None` for an unallocated slot.
    pub fn invalidate(&mut self, s: u32) -> Option<(u32, PageState)> {
        let p = self.slot_page[s as usize];
        if p == NONE {
            return None;
        }
        let st = match self.state(p) {
            PageState::Tenant(t) => {
                assert_eq!(t, s);
                PageState::Home(0)
            }
            PageState::Home(m) => {
                let (q, j) = self.cut.home_of_slot(s).expect("a home slot");
                assert_eq!(q, p);
                PageState::Home(m & !(1 << j))
            }
        };
        self.set(p, st);
        Some((p, st))
    }

    /// Whether a write of page `p` may take slot `s` as a bad tenant (3.2): not another
    /// page's home replica, and unallocated, holding `p`, or holding a page with ≥ 2 copies.
    pub fn tenant_ok(&self, p: u32, s: u32) -> bool {
        let q = self.slot_page[s as usize];
        if q == p {
            return true;
        }
        if let Some((h, 0)) = self.cut.home_of_slot(s) {
            if h != p {
                return false;
            }
        }
        q == NONE || self.copy_count(q) >= 2
    }

    /// Page `p`'s home replicas a full replicated write may take: those not held by another
    /// page (a valid bad tenant). Replica 0 always qualifies.
    pub fn writable_home(&self, p: u32) -> impl Iterator<Item = (u32, u32)> + '_ {
        (0..self.cut.replicas)
            .map(move |j| (j, self.cut.home_slot(p, j)))
            .filter(move |&(_, s)| {
                let q = self.slot_page[s as usize];
                q == NONE || q == p
            })
    }

    /// Checks the slots and states agree (O(slots): tests).
    pub fn check(&self) -> Result<(), String> {
        let mut seen = vec![NONE; self.cut.slots as usize];
        let mut tenants = 0;
        for p in 0..self.cut.pages {
            if matches!(self.state(p), PageState::Tenant(_)) {
                tenants += 1;
            }
            let home0 = self.cut.home_slot(p, 0);
            let h = self.slot_page[home0 as usize];
            if h != NONE && h != p {
                return Err(format!("page {p}'s home replica holds page {h}"));
            }
            for s in self.copies(p) {
                if seen[s as usize] != NONE {
                    return Err(format!("slot {s} mapped twice"));
                }
                seen[s as usize] = p;
            }
        }
        if seen != self.slot_page {
            return Err("slot table disagrees with page states".into());
        }
        if tenants != self.tenants {
            return Err(format!("{tenants} tenants, counted {}", self.tenants));
        }
        Ok(())
    }

    /// The map whose page states are `bytes` (a checkpoint: 4 bytes per page, little-endian,
    /// in page order; trailing bytes ignored).
    pub fn from_states(cut: Arc<Cut>, bytes: &[u8]) -> Result<PageMap, String> {
        let n = cut.pages as usize;
        if bytes.len() < 4 * n {
            return Err(format!(
                "{} bytes hold fewer than {n} page states",
                bytes.len()
            ));
        }
        let mut m = PageMap {
            state: vec![PageState::Home(0).encode(); n],
            slot_page: vec![NONE; cut.slots as usize],
            tenants: 0,
            cut,
        };
        for (p, c) in bytes[..4 * n].chunks_exact(4).enumerate() {
            let v = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
            m.apply_record(u32::try_from(p).expect("pages fit u32"), v)?;
        }
        Ok(m)
    }

    /// The raw states (the map log's image of the map).
    pub fn raw_states(&self) -> &[u32] {
        &self.state
    }

    /// Sets a state from a log record during recovery.
    pub fn apply_record(&mut self, p: u32, v: u32) -> Result<(), String> {
        if p >= self.cut.pages {
            return Err(format!("record names page {p}, beyond {}", self.cut.pages));
        }
        let st = PageState::decode(v).ok_or_else(|| format!("bad state {v:#x} for page {p}"))?;
        match st {
            PageState::Tenant(s) if s >= self.cut.slots => {
                return Err(format!("page {p} a tenant in slot {s}, beyond the disk"))
            }
            PageState::Home(m) if u32::from(m) >> self.cut.replicas != 0 => {
                return Err(format!(
                    "page {p}: replica mask {m:#b} beyond {} replicas",
                    self.cut.replicas
                ))
            }
            _ => {}
        }
        // Another page may still hold the slot in a record order where it leaves later
        // (never: records are applied in the order the map changed).
        let new: Vec<u32> = match st {
            PageState::Tenant(s) => vec![s],
            PageState::Home(m) => (0..self.cut.replicas)
                .filter(|j| m & (1 << j) != 0)
                .map(|j| self.cut.home_slot(p, j))
                .collect(),
        };
        let old: Vec<u32> = self.copies(p).collect();
        for s in new {
            let q = self.slot_page[s as usize];
            if q != NONE && q != p && !old.contains(&s) {
                return Err(format!(
                    "record puts page {p} in slot {s}, held by page {q}"
                ));
            }
        }
        self.set(p, st);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::drive::builtin_drive;

    fn cut(r: u32) -> Arc<Cut> {
        let d = builtin_drive("ibm18es").expect("drive");
        Arc::new(Cut::new(&d, 200_000, 16, r).expect("cut"))
    }

    #[test]
    fn replicas_are_evenly_spaced_on_one_track_and_pages_never_span_tracks() {
        let c = cut(4);
        let d = builtin_drive("ibm18es").expect("drive");
        let geo = d.geometry();
        for p in (0..c.pages).step_by(7) {
            let t = c.track_of_page(p);
            for j in 0..4 {
                let s = c.home_slot(p, j);
                assert_eq!(c.track_of_slot(s), t);
                assert_eq!(c.home_of_slot(s), Some((p, j)));
                let lba = c.lba(s);
                assert!(geo.run_on_track(lba) >= 16, "page {p} spans a track");
            }
            let tr = &c.tracks[t];
            assert_eq!(tr.pages, tr.slots / 4);
        }
    }

    #[test]
    fn a_bad_tenant_frees_its_old_copies_and_takes_one_replica() {
        let c = cut(2);
        let mut m = PageMap::new(c.clone());
        m.check().expect("consistent");
        let (p, q) = (0u32, c.tracks[3].first_page);
        let target = c.home_slot(q, 1);
        assert!(m.tenant_ok(p, target));
        assert!(!m.tenant_ok(p, c.home_slot(q, 0)), "home replica refused");
        m.invalidate(target);
        m.set(p, PageState::Tenant(target));
        m.check().expect("consistent");
        assert_eq!(m.copy_count(q), 1);
        assert_eq!(m.page_at(c.home_slot(p, 0)), NONE);
        assert!(!m.tenant_ok(p, c.home_slot(q, 0)));
        assert_eq!(
            m.writable_home(q).count(),
            1,
            "the tenant's slot is skipped"
        );
        assert_eq!(m.tenants(), 1);
        let enc = PageState::Tenant(target).encode();
        assert_eq!(PageState::decode(enc), Some(PageState::Tenant(target)));
    }
}
