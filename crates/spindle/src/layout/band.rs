//! The band: where one disk's share of the data set lies, with its rotational replicas.
//!
//! Without replication (Dr = 1) a disk's data offset is its LBA: the data fills the first
//! LBAs, the outer cylinders. With Dr > 1 the band is a list of *groups* of physical tracks,
//! filled from the outer edge, each holding some data sectors Dr times:
//!
//! - `even` (fig. 2.6b): one track holds ⌊spt/Dr⌋ data sectors; replica k of a sector lies
//!   ⌊k·spt/Dr⌋ sectors after replica 0, so replicas are 1/Dr of a rotation apart.
//! - `random` (fig. 2.6c): one track holds Dr copies of ⌊spt/(Dr·c)⌋ chunks of c sectors
//!   (c = 4 KiB, the dissertation's block); every copy of every chunk sits in a chunk slot
//!   drawn by a seeded shuffle of the track's slots, so a sector's replicas are at random
//!   angles. A piece never spans two chunks.
//! - `track-group` (fig. 2.11b, the prototype's layout): Dr consecutive tracks hold the same
//!   spt data sectors, track k rotated by k/Dr of a rotation from track 0, so a sequential
//!   read runs at full bandwidth and a write reaches every replica in one rotation if the
//!   track switch fits between consecutive replicas. A rotated replica may wrap around the
//!   end of its track: it is then two runs on the same track.
//!
//! Tracks that are not whole (a slipped sector, a zone boundary inside a group) are skipped
//! in replicated bands, so every replica angle is exact.

use crate::drive::{Drive, Run};
use crate::Op;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;
use serde::{Deserialize, Serialize};

use crate::sched::MAX_REPLICAS;

/// How rotational replicas are placed (the (a), (b), (c)).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Placement {
    Even,
    Random,
    #[default]
    TrackGroup,
}

impl Placement {
    pub fn name(self) -> &'static str {
        match self {
            Placement::Even => "even",
            Placement::Random => "random",
            Placement::TrackGroup => "track-group",
        }
    }
}

#[derive(Clone, Debug)]
struct Group {
    /// First data offset held here.
    data_start: u64,
    /// Data sectors held.
    n: u32,
    /// Sectors per track of the group's tracks.
    spt: u32,
    /// First LBA of each replica's track (`even`/`random`: all replicas on `track[0]`).
    track: [u64; MAX_REPLICAS],
    /// `even`: replica k's offset from replica 0; `track-group`: replica k's rotation on its
    /// track, in sectors.
    shift: [u32; MAX_REPLICAS],
}

/// A replica of a piece: one run, or two when it wraps around its track.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ReplicaRuns {
    pub first: Run,
    pub wrap: Option<Run>,
}

impl ReplicaRuns {
    /// The runs in byte order.
    pub fn to_vec(self) -> Vec<Run> {
        std::iter::once(self.first).chain(self.wrap).collect()
    }
}

#[derive(Clone)]
pub struct Band {
    dr: u32,
    placement: Placement,
    /// Dr = 1: the data occupies LBAs `0..plain`.
    plain: u64,
    groups: Vec<Group>,
    /// An index into `groups` by data offset: `lookup[j]` is the group holding offset
    /// `j << lookup_shift` (a group's search is then over the few groups of one slice).
    lookup: Vec<u32>,
    lookup_shift: u32,
    /// `random`: the chunk size in sectors, and the shuffle's seed.
    chunk: u32,
    seed: u64,
}

impl std::fmt::Debug for Band {
    // A band has one group per track: print its summary, not the table.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Band")
            .field("dr", &self.dr)
            .field("placement", &self.placement)
            .field("data_sectors", &self.data_sectors())
            .field("groups", &self.groups.len())
            .finish()
    }
}

impl Band {
    /// Dr = 1 over `sectors` sectors: offset = LBA.
    pub fn identity(sectors: u64) -> Band {
        Band {
            dr: 1,
            placement: Placement::default(),
            plain: sectors,
            groups: Vec::new(),
            lookup: Vec::new(),
            lookup_shift: 0,
            chunk: 1,
            seed: 0,
        }
    }

    /// A band holding `data` sectors with `dr` replicas each on `drive`; if they do not fit,
    /// an error when `exact`, otherwise as many as fit ([`Band::data_sectors`]).
    pub fn build(
        drive: &Drive,
        dr: u32,
        placement: Placement,
        data: u64,
        exact: bool,
        seed: u64,
    ) -> Result<Band, String> {
        let capacity = drive.capacity_sectors();
        if dr == 1 {
            if data > capacity && exact {
                return Err(too_large(drive, data, 1));
            }
            return Ok(Band {
                placement,
                ..Band::identity(data.min(capacity))
            });
        }
        if dr as usize > MAX_REPLICAS {
            return Err(format!(
                "Dr = {dr} rotational replicas: at most {MAX_REPLICAS} are supported"
            ));
        }
        let geo = drive.geometry();
        let chunk = (4096 / geo.sector_bytes()).max(1);
        let mut groups: Vec<Group> = Vec::new();
        let mut have = 0u64;
        let mut lba = 0u64;
        let mut pending: Vec<(u64, u32)> = Vec::with_capacity(dr as usize);
        while have < data && lba < capacity {
            let run = geo.run_on_track(lba);
            let spt = geo.sectors_per_track(geo.lba_to_chs(lba).cylinder);
            let whole = run == spt;
            let start = lba;
            lba += u64::from(run);
            if !whole {
                pending.clear();
                continue;
            }
            let tracks_needed = if placement == Placement::TrackGroup {
                dr as usize
            } else {
                1
            };
            if pending.first().is_some_and(|&(_, s)| s != spt) {
                pending.clear();
            }
            pending.push((start, spt));
            if pending.len() < tracks_needed {
                continue;
            }
            let n = match placement {
                Placement::Even => spt / dr,
                Placement::Random => spt / (dr * chunk) * chunk,
                Placement::TrackGroup => spt,
            };
            if n == 0 {
                return Err(format!(
                    "Dr = {dr} replicas ({} placement) do not fit in a {spt}-sector track",
                    placement.name()
                ));
            }
            let mut g = Group {
                data_start: have,
                n,
                spt,
                track: [start; MAX_REPLICAS],
                shift: [0; MAX_REPLICAS],
            };
            match placement {
                Placement::Even => {
                    for k in 0..dr as usize {
                        g.shift[k] = (k as u64 * u64::from(spt) / u64::from(dr)) as u32;
                    }
                }
                Placement::Random => {}
                Placement::TrackGroup => {
                    let idx = |l: u64| geo.angle_index(geo.lba_to_chs(l)).0;
                    let base = idx(pending[0].0);
                    for (k, &(t, _)) in pending.iter().enumerate() {
                        g.track[k] = t;
                        // Replica k starts k/Dr of a rotation after replica 0.
                        let want = (k as u64 * u64::from(spt) + u64::from(dr) / 2) / u64::from(dr)
                            % u64::from(spt);
                        let want = want as u32;
                        g.shift[k] = (base + want + spt - idx(t)) % spt;
                    }
                }
            }
            if groups.is_empty() {
                check_one_rotation(drive, dr, placement, &g)?;
            }
            have += u64::from(n);
            groups.push(g);
            pending.clear();
        }
        if have < data && exact {
            return Err(too_large(drive, data, dr));
        }
        let (lookup, lookup_shift) = Self::lookup(&groups);
        Ok(Band {
            dr,
            placement,
            plain: 0,
            groups,
            lookup,
            lookup_shift,
            chunk,
            seed,
        })
    }

    /// The index of `groups` by offset: slices of a power of two sectors no longer than the
    /// smallest group (so one slice meets at most two groups), coarser if that would make
    /// more than a million slices.
    fn lookup(groups: &[Group]) -> (Vec<u32>, u32) {
        let Some(last) = groups.last() else {
            return (Vec::new(), 0);
        };
        let data = last.data_start + u64::from(last.n);
        let min_n = groups.iter().map(|g| g.n).min().expect("non-empty").max(1);
        let mut shift = 31 - min_n.leading_zeros();
        while (data >> shift) > 1 << 20 {
            shift += 1;
        }
        let slices = (data >> shift) + 1;
        let mut lookup = Vec::with_capacity(slices as usize);
        let mut i = 0usize;
        for j in 0..slices {
            let at = j << shift;
            while i + 1 < groups.len() && groups[i + 1].data_start <= at {
                i += 1;
            }
            lookup.push(u32::try_from(i).expect("groups fit u32"));
        }
        (lookup, shift)
    }

    /// Data sectors the band holds.
    pub fn data_sectors(&self) -> u64 {
        match self.groups.last() {
            None => self.plain,
            Some(g) => g.data_start + u64::from(g.n),
        }
    }

    pub fn replicas(&self) -> u32 {
        self.dr
    }

    pub fn placement(&self) -> Placement {
        self.placement
    }

    /// How many sectors from `offset` (at most `len`) keep every replica one piece.
    pub fn contiguous(&self, offset: u64, len: u64) -> u64 {
        if self.dr == 1 {
            return len;
        }
        let g = &self.groups[self.group_of(offset)];
        let within = offset - g.data_start;
        let mut end = u64::from(g.n);
        if self.placement == Placement::Random {
            let c = u64::from(self.chunk);
            end = end.min((within / c + 1) * c);
        }
        len.min(end - within)
    }

    fn group_of(&self, offset: u64) -> usize {
        let j = (offset >> self.lookup_shift) as usize;
        let i = match self.lookup.get(j) {
            Some(&lo) => {
                let lo = lo as usize;
                let hi = self
                    .lookup
                    .get(j + 1)
                    .map_or(self.groups.len(), |&h| h as usize + 1);
                lo + self.groups[lo..hi].partition_point(|g| g.data_start <= offset)
            }
            None => self.groups.len(),
        };
        assert!(i > 0, "offset {offset} before the band");
        let g = &self.groups[i - 1];
        assert!(
            offset < g.data_start + u64::from(g.n),
            "offset {offset} beyond the band"
        );
        i - 1
    }

    /// Replica `k` of the `sectors` data sectors at `offset` (a piece: see
    /// [`Band::contiguous`]).
    pub fn replica(&self, offset: u64, sectors: u32, k: u32) -> ReplicaRuns {
        self.piece(offset, sectors).replica(k)
    }

    /// The replicas of the `sectors` data sectors at `offset` (a piece), its track group
    /// found once for all of them.
    pub fn piece(&self, offset: u64, sectors: u32) -> PieceReplicas<'_> {
        PieceReplicas {
            band: self,
            offset,
            sectors,
            group: if self.dr == 1 {
                0
            } else {
                self.group_of(offset)
            },
        }
    }
}

/// One piece's replicas ([`Band::piece`]).
#[derive(Copy, Clone)]
pub struct PieceReplicas<'a> {
    band: &'a Band,
    offset: u64,
    sectors: u32,
    /// The piece's track group (with rotational replicas).
    group: usize,
}

impl PieceReplicas<'_> {
    /// Replica `k`: [`Band::replica`]`(offset, sectors, k)`.
    pub fn replica(&self, k: u32) -> ReplicaRuns {
        let (band, offset, sectors, gi) = (self.band, self.offset, self.sectors, self.group);
        assert!(k < band.dr, "replica {k} of {}", band.dr);
        if band.dr == 1 {
            return ReplicaRuns {
                first: Run {
                    lba: offset,
                    sectors,
                },
                wrap: None,
            };
        }
        let g = &band.groups[gi];
        let within = (offset - g.data_start) as u32;
        let k = k as usize;
        let one = |lba| ReplicaRuns {
            first: Run { lba, sectors },
            wrap: None,
        };
        match band.placement {
            Placement::Even => one(g.track[0] + u64::from(within + g.shift[k])),
            Placement::Random => {
                let c = band.chunk;
                let chunks = g.n / c;
                let slot = band.shuffle(gi, chunks)[k * chunks as usize + (within / c) as usize];
                one(g.track[0] + u64::from(slot * c + within % c))
            }
            Placement::TrackGroup => {
                let pos = (within + g.shift[k]) % g.spt;
                let to_end = g.spt - pos;
                if sectors <= to_end {
                    one(g.track[k] + u64::from(pos))
                } else {
                    ReplicaRuns {
                        first: Run {
                            lba: g.track[k] + u64::from(pos),
                            sectors: to_end,
                        },
                        wrap: Some(Run {
                            lba: g.track[k],
                            sectors: sectors - to_end,
                        }),
                    }
                }
            }
        }
    }
}

impl Band {
    /// The chunk slots of group `gi`: entry k·chunks + j is where copy k of chunk j lies.
    fn shuffle(&self, gi: usize, chunks: u32) -> Vec<u32> {
        let mut slots: Vec<u32> = (0..chunks * self.dr).collect();
        let mut rng =
            Pcg64Mcg::seed_from_u64(self.seed ^ (gi as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        slots.shuffle(&mut rng);
        slots
    }
}

fn too_large(drive: &Drive, data: u64, dr: u32) -> String {
    format!(
        "the data set does not fit: each disk must hold {data} data sectors{}, but a {} holds {} sectors",
        if dr > 1 {
            format!(" with {dr} rotational replicas each")
        } else {
            String::new()
        },
        drive.id,
        drive.capacity_sectors()
    )
}

/// Refuses a Dr whose replicas cannot all be written in one rotation: on one track that
/// always holds; across a track group the switch to the next replica's track (the larger of
/// the drive's head switch and its track skew, which is the manufacturer's allowance for
/// the switch) must fit between the end of a one-sector replica and the start of the next.
/// The first group (outer edge) is checked: it starts a cylinder, so its switches are head
/// switches.
fn check_one_rotation(
    drive: &Drive,
    dr: u32,
    placement: Placement,
    g: &Group,
) -> Result<(), String> {
    if placement != Placement::TrackGroup {
        return Ok(());
    }
    let geo = drive.geometry();
    let period = drive.period().0;
    let spt = u64::from(g.spt);
    let sector_ns = period / spt;
    let gap = (spt / u64::from(dr)).saturating_sub(1) * sector_ns;
    let mut worst = 0u64;
    for k in 1..dr as usize {
        let (a, b) = (geo.lba_to_chs(g.track[k - 1]), geo.lba_to_chs(g.track[k]));
        if a.cylinder != b.cylinder && geo.surfaces() > 1 {
            // A group crossing a cylinder boundary pays a one-cylinder seek there, which the
            // drive model times; the limit is set by the head switches within a cylinder.
            continue;
        }
        let mech = drive.seek_span(a.cylinder, a.head, b, Op::Write).0;
        // The skew: from the end of track k-1's last sector to track k's first sector.
        let end_idx = u64::from(geo.angle_index(a).0) + spt;
        let skew = (u64::from(geo.angle_index(b).0) + 2 * spt - end_idx % spt) % spt * sector_ns;
        worst = worst.max(mech.max(skew));
    }
    if worst <= gap {
        return Ok(());
    }
    let max_dr = (1..dr)
        .rev()
        .find(|&d| (spt / u64::from(d)).saturating_sub(1) * sector_ns >= worst)
        .unwrap_or(1);
    Err(format!(
        "Dr = {dr} replicas cannot be written in one rotation on {}: switching to the next \
         replica's track takes {:.3} ms but consecutive replicas are only {:.3} ms apart \
         (track-group placement); at most Dr = {max_dr} on this drive",
        drive.id,
        worst as f64 / 1e6,
        gap as f64 / 1e6
    ))
}
