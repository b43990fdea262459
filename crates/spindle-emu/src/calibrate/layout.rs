//! Tracks, zones, surfaces and skews from timing alone: the track-alignment paper's
//! growing-request scan (a read that runs onto the next track pays the switch and skew),
//! sped up by doubling then bisection, and zone boundaries by bisection over a zone's
//! track grid.

use super::probe::Probe;
use super::{CalibError, Event};
use serde::{Deserialize, Serialize};
use spindle::calib::skew;

/// One track found by the growing scan.
#[derive(Copy, Clone, Debug)]
pub struct Track {
    pub len: u32,
    /// Time per sector, from the longest in-track read.
    pub sector_ns: f64,
}

/// A zone: a run of whole tracks of `spt` LBAs, then maybe a shorter last track (its end
/// taken by spares).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Zone {
    pub first_lba: u64,
    pub lbas: u64,
    pub spt: u32,
    /// LBAs of the zone's short last track (0: none).
    pub partial: u32,
    /// Skews in sectors (head switch, cylinder switch) and the angles they come from (ns of
    /// rotation from a track's first sector to the next track's; the field names are the
    /// state file's).
    pub track_skew: u32,
    pub cylinder_skew: u32,
    pub head_penalty_ns: f64,
    pub cylinder_penalty_ns: f64,
    /// Angle of the zone's first sector's start after the reference sector's start (ns).
    pub first_angle_ns: f64,
}

impl Zone {
    pub fn tracks(&self) -> u64 {
        self.lbas.div_ceil(u64::from(self.spt))
    }
}

/// The longest read of the growing scan (sectors): 32 MiB of 512-byte sectors, the NBD
/// limit on a request, and far more than any zone's track.
const SCAN_MAX: u64 = 1 << 16;

/// The growing-request scan from `start` (the first LBA of a track): the track's length.
pub fn track_at(p: &mut Probe, start: u64) -> Result<Track, CalibError> {
    let cap = p.target.sectors();
    let period = p.period();
    let thr = p.crossing_threshold();
    let room = |n: u64| u32::try_from(n.min(cap - start)).unwrap_or(u32::MAX);
    // Doubling: each length is checked against the sector time the previous one gave.
    let (mut lo, mut slope) = (1u32, f64::NAN);
    let mut hi = None;
    let mut n = 2u32;
    while n <= room(SCAN_MAX) && hi.is_none() {
        let mut d = p.after_pass(start, n, 5)?;
        if !slope.is_nan() && d - period - f64::from(n - 1) * slope > thr {
            // Confirmed, as in `Probe::excess`.
            d = d.min(p.after_pass(start, n, 5)?);
        }
        let t = (d - period) / f64::from(n - 1);
        if slope.is_nan() {
            // Two sectors: a sector time above a twentieth of a revolution is a crossing
            // (no zone has under 20 sectors per track).
            if t > period / 20.0 {
                hi = Some(2);
            } else {
                (lo, slope) = (2, t);
            }
        } else {
            let ex = d - period - f64::from(n - 1) * slope;
            // Zero-latency access: a run the head lands inside is read from there and ends
            // a revolution after landing, however long — so a longer read comes back sooner
            // than its sectors at the shorter reads' pace, which no read that waits for its
            // first sector does (the delays the host adds only lengthen it). The shorter
            // read's pace may itself be a delayed median: both are measured again, and only
            // a read still short of the fresh pace is zero-latency.
            if ex < -thr && n >= 16 {
                let half = n / 2;
                let dh = p.after_pass(start, half, 5)?;
                let dn = p.after_pass(start, n, 5)?;
                let fresh = (dh - period) / f64::from(half - 1);
                let short = dn - period - f64::from(n - 1) * fresh;
                // The landing offset a zero-latency read saves is the round trip and the
                // command overhead (atlas10kv: 0.3-0.5 ms of a 6 ms revolution); the host's
                // systematic delays reach about a sixtieth, so twice that is asked for.
                // And the structural sign, immune to a pace skewed by the host: past the
                // landing offset, doubling a zero-latency read costs almost nothing, while a
                // read that waits for its first sector pays `n` more sectors (a burst of
                // load once made a zone's first track look short on pace alone: atlas10k).
                let doubling_free = short < -thr.max(period / 30.0)
                    && u64::from(2 * n) <= cap - start
                    && p.after_pass(start, 2 * n, 5)? - dn < (f64::from(n) * fresh / 4.0).max(thr);
                if doubling_free {
                    return Err(CalibError::ZeroLatency {
                        target: p.target.describe(),
                        msg: format!(
                            "a read of {n} sectors at LBA {start} after a pass took {:.1} µs, \
                             {:.1} µs less than {n} sectors at the {:.2} µs sector time a read \
                             of {half} gave (both measured twice)",
                            dn / 1e3,
                            -short / 1e3,
                            fresh / 1e3
                        ),
                    });
                }
                if short > thr {
                    hi = Some(n);
                } else {
                    (lo, slope) = (n, (dn - period) / f64::from(n - 1));
                }
                n = n.saturating_mul(2);
                continue;
            }
            if ex > thr {
                hi = Some(n);
            } else {
                (lo, slope) = (n, t);
            }
        }
        n = n.saturating_mul(2);
    }
    let Some(mut hi) = hi else {
        // No crossing: the track runs to the target's end — or a crossing here costs less
        // than the threshold, and no length can be told (a longer read would also pass
        // the NBD limit of 32 MiB a request).
        if cap - start <= SCAN_MAX {
            return Ok(Track {
                len: room(SCAN_MAX),
                sector_ns: slope,
            });
        }
        return Err(p.refuse(
            &format!("the length of the track at LBA {start}"),
            format!(
                "no read of up to {SCAN_MAX} sectors from it ran measurably onto another \
                 track (a crossing must cost over {:.1} µs more than its sectors)",
                thr / 1e3
            ),
        ));
    };
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        let ex = p.excess(start, mid, slope)?;
        if ex > thr {
            hi = mid;
        } else {
            lo = mid;
            if mid > 8 {
                slope += ex / f64::from(mid - 1);
            }
        }
    }
    Ok(Track {
        len: lo,
        sector_ns: slope,
    })
}

/// Whether `lba` starts a whole track of `spt` sectors of a zone whose whole track, read
/// after a pass, takes `base` (measured on the zone's first track: the answer's delivery
/// time, which grows with its length, is in it, as it is in every read compared with it).
fn whole_track(p: &mut Probe, lba: u64, spt: u32, base: f64) -> Result<bool, CalibError> {
    if lba + u64::from(spt) > p.target.sectors() {
        return Ok(false);
    }
    let ex = p.excess_from(lba, spt, base)?;
    Ok(ex.abs() < p.crossing_threshold())
}

/// Whether fresh reads confirm a track of `len` sectors at `start`: `len` sectors read after
/// a pass take `expect` (no crossing), `len + 1` run onto the next track. A second
/// determination, independent of the scan that found `len`.
fn confirms_track(
    p: &mut Probe,
    start: u64,
    len: u32,
    expect: f64,
    sector_ns: f64,
) -> Result<bool, CalibError> {
    let thr = p.crossing_threshold();
    if p.excess_from(start, len, expect)?.abs() > thr {
        return Ok(false);
    }
    if start + u64::from(len) >= p.target.sectors() {
        return Ok(true);
    }
    Ok(p.excess_from(start, len + 1, expect + sector_ns)? > thr)
}

/// The track at `start`, its length found by the growing scan and confirmed by fresh
/// reads; up to three scans, then a refusal naming the track and the noise.
fn measured_track(p: &mut Probe, start: u64) -> Result<Track, CalibError> {
    let mut lens = Vec::new();
    for _ in 0..3 {
        let tr = track_at(p, start)?;
        lens.push(tr.len);
        let expect = p.period() + f64::from(tr.len.saturating_sub(1)) * tr.sector_ns;
        if tr.len >= 2 && confirms_track(p, start, tr.len, expect, tr.sector_ns)? {
            return Ok(tr);
        }
    }
    Err(p.refuse(
        &format!("the length of the track at LBA {start}"),
        format!("three scans found {lens:?} sectors and fresh reads confirmed none"),
    ))
}

/// The last whole track (index from `s`) of the zone whose tracks of `spt` sectors start at
/// `s`: galloping then bisection over the zone's track grid, then both sides of the end
/// measured again — the last track must read whole (and be confirmed `spt` long), the grid
/// point after it must not. Up to three searches, then a refusal.
fn zone_end(p: &mut Probe, s: u64, spt: u32) -> Result<u64, CalibError> {
    let cap = p.target.sectors();
    let tracks_left = (cap - s) / u64::from(spt);
    let at = |k: u64| s + k * u64::from(spt);
    let mut found = Vec::new();
    for _ in 0..3 {
        let base = p.after_pass(s, spt, 7)?;
        let (mut good, mut bad) = (0u64, None);
        let mut k = 1u64;
        while bad.is_none() {
            if k >= tracks_left {
                if whole_track(p, at(tracks_left - 1), spt, base)? {
                    good = tracks_left - 1;
                    bad = Some(tracks_left);
                } else {
                    bad = Some(tracks_left - 1);
                }
                break;
            }
            if whole_track(p, at(k), spt, base)? {
                good = k;
                k *= 2;
            } else {
                bad = Some(k);
            }
            (p.events)(Event::Step);
        }
        let mut bad = bad.expect("set");
        while bad - good > 1 {
            let mid = good + (bad - good) / 2;
            if whole_track(p, at(mid), spt, base)? {
                good = mid;
            } else {
                bad = mid;
            }
            (p.events)(Event::Step);
        }
        found.push(good + 1);
        // The second determination: fresh reads on both sides of the end.
        let sector_ns = p.period() / f64::from(spt);
        let last_whole = whole_track(p, at(good), spt, base)?
            && confirms_track(p, at(good), spt, base, sector_ns)?;
        let past_not = bad >= tracks_left || !whole_track(p, at(bad), spt, base)?;
        if last_whole && past_not {
            return Ok(good);
        }
    }
    Err(p.refuse(
        &format!("the end of the zone of {spt}-sector tracks from LBA {s}"),
        format!(
            "three searches found {found:?} whole tracks and fresh reads on both sides of the \
             end confirmed none"
        ),
    ))
}

/// Whether the `len` sectors from `s` pass under the head at the pace of a track of `spt`
/// sectors rather than of `len`: the angle from the end of the first to the end of the last
/// is `(len − 1)` sector times. It is measured against the same angle on `reference`, a
/// whole track of the zone (paced like `spt` by definition), read the same way: what the
/// host adds to the answers — a delay that grows with how long a request was out, and
/// bursts of load — is then alike in both and cancels in the difference, which is 0 for a
/// track paced like `spt` and `(len − 1)·(P/len − P/spt)` (170 µs for 238 of 245 sectors at
/// 10,000 rpm) for one paced like `len`. A verdict needs two more measurements for it than
/// against it (each decisive: within a quarter of the way from one pace), within five;
/// else refused. (A single measurement used to decide: under load one came 130 µs short
/// and took a new zone's first track for the last one's.)
fn paced_like(
    p: &mut Probe,
    s: u64,
    len: u32,
    spt: u32,
    reference: u64,
) -> Result<bool, CalibError> {
    let period = p.period();
    let k = f64::from(len - 1);
    let apart = k * period / f64::from(len) - k * period / f64::from(spt);
    let mut seen = Vec::new();
    let (mut like_spt, mut like_len) = (0u32, 0u32);
    for _ in 0..5 {
        let g = p.angle_gap(s, s + u64::from(len) - 1, ANGLE_REPS)?;
        let r = p.angle_gap(reference, reference + u64::from(len) - 1, ANGLE_REPS)?;
        let d = spindle::calib::wrap(g - r + period / 2.0, period) - period / 2.0;
        let x = d / apart;
        seen.push(d);
        if x < 0.25 {
            like_spt += 1;
        } else if x > 0.75 {
            like_len += 1;
        }
        if like_spt >= like_len + 2 {
            return Ok(true);
        }
        if like_len >= like_spt + 2 {
            return Ok(false);
        }
    }
    Err(p.refuse(
        &format!("whether the {len}-sector track at LBA {s} ends a zone of {spt}"),
        format!(
            "its first-to-last sector angle less a whole track's measured [{}] µs, never \
             clearly 0 ({spt} a track) or {:.1} ({len} a track) twice more than the other",
            seen.iter()
                .map(|x| format!("{:.1}", x / 1e3))
                .collect::<Vec<_>>()
                .join(", "),
            apart / 1e3
        ),
    ))
}

/// The zones from LBA `from` until the end of the target or `zones_max` zones.
pub fn zones(p: &mut Probe, from: u64, zones_max: usize) -> Result<Vec<Zone>, CalibError> {
    let cap = p.target.sectors();
    let mut out: Vec<Zone> = Vec::new();
    let mut s = from;
    // A track measured ahead (to tell a zone's short last track from a new zone).
    let mut ahead: Option<(u64, Track)> = None;
    while s < cap && out.len() <= zones_max {
        let tr = match ahead.take() {
            Some((at, tr)) if at == s => tr,
            _ => measured_track(p, s)?,
        };
        let len = tr.len;
        // A track shorter than its zone's: that zone's last track cut short by its spares,
        // or the first track of a new zone. The next track decides (a new zone's second
        // track is as long); the sector time cannot, since a zone's spares may leave its
        // last track only a few sectors short, which the noise hides.
        let closes_last = match out.last() {
            Some(z) if z.partial == 0 && len < z.spt => {
                let next = s + u64::from(len);
                if next >= cap {
                    true
                } else {
                    let tn = measured_track(p, next)?;
                    let same = tn.len == len;
                    ahead = Some((next, tn));
                    // As long a next track: a new zone — unless the zone's spares left its
                    // last track exactly as long as the next zone's tracks (ibm18es: 364 of
                    // 374, then a zone of 364). The track's own sector pace, from the angle
                    // between its first and last sectors, tells the two apart.
                    // The zone's last whole track is the pace reference.
                    !same || paced_like(p, s, len, z.spt, s - u64::from(z.spt))?
                }
            }
            _ => false,
        };
        if closes_last {
            let z = out.last_mut().expect("a zone");
            z.partial = len;
            z.lbas += u64::from(len);
            s += u64::from(len);
            p.say(format!(
                "zone {}: its last track (LBA {}..) holds {len} sectors (spares take the rest)",
                out.len() - 1,
                s - u64::from(len)
            ));
            if out.len() == zones_max {
                break;
            }
            continue;
        }
        if out.len() == zones_max {
            break;
        }
        // No zone has under 20 sectors a track: such a "track" is noise the checks missed.
        if len < 20 {
            return Err(p.refuse(
                &format!("the track at LBA {s}"),
                format!("it reads as {len} sectors, too short for a zone's track"),
            ));
        }
        let spt = len;
        let good = zone_end(p, s, spt)?;
        let lbas = (good + 1) * u64::from(spt);
        p.say(format!(
            "zone {}: LBA {s}.., {spt} sectors per track, {} whole tracks (end confirmed)",
            out.len(),
            good + 1
        ));
        out.push(Zone {
            first_lba: s,
            lbas,
            spt,
            partial: 0,
            track_skew: 0,
            cylinder_skew: 0,
            head_penalty_ns: 0.0,
            cylinder_penalty_ns: 0.0,
            first_angle_ns: 0.0,
        });
        s += lbas;
    }
    Ok(out)
}

/// Crossing penalty into track `j` of `z`: a track's worth of sectors read from the middle
/// of track `j − 1`, less the same read of one whole track (`base`, from
/// [`in_track`]) — not less the computed transfer, since a long answer may leave the
/// server later than a short one.
fn crossing(p: &mut Probe, z: &Zone, j: u64, base: f64) -> Result<f64, CalibError> {
    let spt = u64::from(z.spt);
    let lba = z.first_lba + j * spt - spt / 2;
    Ok(p.after_pass(lba, z.spt, 5)? - base)
}

/// A whole track of `z` read after a pass: the baseline of [`crossing`].
fn in_track(p: &mut Probe, z: &Zone) -> Result<f64, CalibError> {
    p.after_pass(z.first_lba, z.spt, 7)
}

/// One determination of a zone's skew of one kind (ns of rotation): the mean angle from
/// the first sector of track `j − 1` to the first sector of track `j`, over the `js` —
/// the skew by its definition (a track's first sector starts that far round from the
/// previous track's), measured as angles, not as durations. The skews of one kind are the
/// zone's: a sample that strays from the others' median by more than the answers' angle
/// tolerance is measured again, and the set is refused when that leaves fewer than three
/// quarters of it — the consistency check across tracks.
fn skew_set(p: &mut Probe, z: &Zone, kind: &str, js: &[u64]) -> Result<Option<f64>, CalibError> {
    if js.is_empty() {
        return Ok(None);
    }
    let period = p.period();
    let spt = u64::from(z.spt);
    let start = |j: u64| z.first_lba + j * spt;
    let mut v = Vec::with_capacity(js.len());
    for &j in js {
        v.push(p.angle_gap(start(j - 1), start(j), ANGLE_REPS)?);
        (p.events)(Event::Step);
    }
    // Angles near 0 and P are neighbours: centred on the densest before comparing.
    let c0 = spindle::calib::rotation::center(&v, period);
    let near = |x: f64| c0 + spindle::calib::wrap(x - c0 + period / 2.0, period) - period / 2.0;
    let tol = p.angle_tolerance();
    let m = spindle::calib::median(&v.iter().map(|&x| near(x)).collect::<Vec<_>>());
    for (i, &j) in js.iter().enumerate() {
        if (near(v[i]) - m).abs() > tol {
            v[i] = p.angle_gap(start(j - 1), start(j), ANGLE_REPS)?;
        }
    }
    let v: Vec<f64> = v.iter().map(|&x| near(x)).collect();
    let m = spindle::calib::median(&v);
    let kept: Vec<f64> = v.iter().copied().filter(|x| (x - m).abs() <= tol).collect();
    if kept.len() * 4 < js.len() * 3 {
        return Err(p.refuse(
            &format!("the {kind} skew of the zone from LBA {}", z.first_lba),
            format!(
                "the first sectors of tracks {js:?} lie [{}] µs after their previous tracks': \
                 not one skew",
                v.iter()
                    .map(|x| format!("{:.0}", x / 1e3))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    }
    Ok(Some(kept.iter().sum::<f64>() / kept.len() as f64))
}

/// Reads of each sector in one angle measurement (after the one that positions the head).
const ANGLE_REPS: usize = 7;

/// A zone's skew of one kind (ns of rotation), from independent determinations (`set(k)`:
/// the tracks of the `k`-th) until two agree within one sector (the skew's resolution): up
/// to four, then a refusal naming the zone, the kind and the noise.
fn skew_angle(
    p: &mut Probe,
    z: &Zone,
    kind: &str,
    set: impl Fn(u64) -> Vec<u64>,
) -> Result<Option<f64>, CalibError> {
    let period = p.period();
    let sector_ns = period / f64::from(z.spt);
    let mut found: Vec<f64> = Vec::new();
    let apart = |a: f64, b: f64| {
        let d = spindle::calib::wrap(a - b, period);
        d.min(period - d)
    };
    for k in 0..4 {
        let Some(v) = skew_set(p, z, kind, &set(k))? else {
            return Ok(None);
        };
        if let Some(w) = found.iter().copied().find(|&w| apart(v, w) <= sector_ns) {
            // The mean of the two, on the circle.
            let d = spindle::calib::wrap(v - w + period / 2.0, period) - period / 2.0;
            return Ok(Some(spindle::calib::wrap(w + d / 2.0, period)));
        }
        found.push(v);
    }
    Err(p.refuse(
        &format!("the {kind} skew of the zone from LBA {}", z.first_lba),
        format!(
            "four determinations ([{}] µs) never agreed within one sector ({:.1} µs)",
            found
                .iter()
                .map(|x| format!("{:.1}", x / 1e3))
                .collect::<Vec<_>>()
                .join(", "),
            sector_ns / 1e3
        ),
    ))
}

/// The surfaces `S` from the first zone's crossings into tracks `1..=j_max`: the fit of
/// [`skew::surfaces`], then checked on fresh crossings (cylinder switches into `S` and `2S`,
/// head switches into 1 and `S + 1` must fall in their classes); a second scan when the
/// check fails, then a refusal.
fn surfaces(p: &mut Probe, z0: &Zone) -> Result<Option<u32>, CalibError> {
    let whole = z0.lbas / u64::from(z0.spt);
    let j_max = whole.saturating_sub(1).min(48);
    if j_max == 0 {
        return Ok(None);
    }
    let mut seen = Vec::new();
    for _ in 0..2 {
        let base0 = in_track(p, z0)?;
        let mut cross = Vec::new();
        for j in 1..=j_max {
            cross.push((j, crossing(p, z0, j, base0)?));
            (p.events)(Event::Step);
        }
        let f = skew::surfaces(&cross, p.crossing_threshold());
        p.say(format!(
            "surfaces: {} (from {} crossings: head switch {:.1} µs, cylinder switch {:.1} µs, \
             spread {:.1} µs)",
            f.surfaces
                .map_or("not told apart".into(), |s| s.to_string()),
            cross.len(),
            f.head_penalty_ns / 1e3,
            f.cylinder_penalty_ns / 1e3,
            f.spread_ns / 1e3
        ));
        let Some(s) = f.surfaces else {
            return Ok(None);
        };
        seen.push(s);
        let s64 = u64::from(s);
        let checks = [(s64, true), (2 * s64, true), (1, false), (s64 + 1, false)];
        let base = in_track(p, z0)?;
        let mut ok = true;
        for (j, cyl) in checks {
            if j >= whole {
                continue;
            }
            let c = crossing(p, z0, j, base)?;
            let nearer_cyl = (c - f.cylinder_penalty_ns).abs() < (c - f.head_penalty_ns).abs();
            ok &= nearer_cyl == cyl;
        }
        if ok {
            return Ok(Some(s));
        }
    }
    Err(p.refuse(
        "the number of surfaces",
        format!(
            "two scans of the first zone's track crossings gave {seen:?} and fresh crossings \
             did not fall in their classes"
        ),
    ))
}

/// Surfaces from the first zone's crossings, then each zone's skews.
pub fn skews(p: &mut Probe, zones: &mut [Zone]) -> Result<Option<u32>, CalibError> {
    let z0 = zones.first().expect("a zone").clone();
    let surfaces = surfaces(p, &z0)?;
    let s = u64::from(surfaces.unwrap_or(1));
    let period = p.period();
    for z in zones.iter_mut() {
        let whole = z.lbas / u64::from(z.spt);
        // The k-th set of eight crossings of a kind; a zone too short for it measures its
        // first set's tracks again (fresh reads: independent in their noise).
        let fit = |js: Vec<u64>, first: Vec<u64>| -> Vec<u64> {
            if js.iter().all(|&j| j < whole) {
                js
            } else {
                first.into_iter().filter(|&j| j >= 1 && j < whole).collect()
            }
        };
        let heads = |k: u64| (1..).filter(|j| j % s != 0).skip(8 * k as usize).take(8);
        let cyls = |k: u64| (8 * k + 1..=8 * k + 8).map(|m| m * s);
        let zc = z.clone();
        let head = match s > 1 {
            true => skew_angle(p, &zc, "track (head switch)", |k| {
                fit(heads(k).collect(), heads(0).collect())
            })?,
            false => None,
        };
        let cyl = skew_angle(p, &zc, "cylinder", |k| {
            fit(cyls(k).collect(), cyls(0).collect())
        })?;
        let sector_ns = period / f64::from(z.spt);
        let sk = |v: f64| skew::skew_sectors(v, period, sector_ns, z.spt);
        // `head_penalty_ns`/`cylinder_penalty_ns` hold the skews' measured angles.
        if let Some(h) = head {
            z.head_penalty_ns = h;
            z.track_skew = sk(h);
        }
        if let Some(c) = cyl {
            z.cylinder_penalty_ns = c;
            z.cylinder_skew = sk(c);
            if s == 1 {
                z.head_penalty_ns = c;
                z.track_skew = z.cylinder_skew;
            }
        }
        far_tracks(p, z, s)?;
        p.say(format!(
            "zone from LBA {}: track skew {:.1} µs = {:.2} sectors (skew {}), cylinder skew \
             {:.1} µs = {:.2} sectors (skew {})",
            z.first_lba,
            z.head_penalty_ns / 1e3,
            spindle::calib::wrap(z.head_penalty_ns, period) / sector_ns,
            z.track_skew,
            z.cylinder_penalty_ns / 1e3,
            spindle::calib::wrap(z.cylinder_penalty_ns, period) / sector_ns,
            z.cylinder_skew
        ));
        // The zone's first sector: its end angle less one sector, against the reference
        // sector's (LBA 0, first of zone 0) end angle less one of zone 0's sectors.
        p.reanchor()?;
        let end = p.end_angle(z.first_lba, 5)?;
        let ref_sector = period / f64::from(z0.spt);
        z.first_angle_ns = spindle::calib::wrap(end - sector_ns + ref_sector, period);
        (p.events)(Event::Step);
    }
    Ok(surfaces)
}

/// The skews checked against far tracks' angles (`spindle::calib::skew::skew_corrections`):
/// a skew one sector off — within what one crossing measures — is as many sectors off as
/// there are switches to a far track, which run-time head tracking cannot use. Each track's
/// first sector is read against the zone's first (angles, so the host's delay cancels);
/// the skews (within two sectors of the measured) whose angles fit every track best are
/// kept when their mean residual is under 4 sectors and every other candidate's is 5 more:
/// the choice is the separation (far tracks are hundreds of switches in, so a wrong skew
/// misses them by many sectors — the runner-up by 12 on average on cheetah9lp), while one
/// angle, a difference of two medians, was seen up to 4.7 sectors (110 µs) off at load 5.
/// Measured twice, the second time over more tracks, else refused.
fn far_tracks(p: &mut Probe, z: &mut Zone, s: u64) -> Result<(), CalibError> {
    let whole = z.lbas / u64::from(z.spt);
    // Tracks at golden-ratio fractions of the zone: at regular fractions (a quarter, a
    // half, …) the switch counts alias with the track length, and a wrong pair of skews
    // can fit nearly as well (cheetah9lp's last zone: the runner-up 4.5 sectors behind on
    // six such tracks, 25 with these).
    let golden = |i: u64| ((whole as f64) * (i as f64 * 0.618_033_988_749_895).fract()) as u64;
    let tidy = |ks: &mut Vec<u64>| {
        ks.retain(|&k| k >= 1 && k < whole);
        ks.sort_unstable();
        ks.dedup();
    };
    let mut ks: Vec<u64> = [s - 1, s].into_iter().chain((1..=6).map(golden)).collect();
    tidy(&mut ks);
    if ks.is_empty() {
        return Ok(());
    }
    let sector_ns = p.period() / f64::from(z.spt);
    let mut last = (0, 0, f64::INFINITY, 0.0);
    let mut seen = String::new();
    for round in 0..2 {
        if round == 1 {
            // Measured again, with four more tracks.
            ks.extend((7..=10).map(golden));
            tidy(&mut ks);
        }
        p.reanchor()?;
        let mut obs = Vec::new();
        for &k in &ks {
            let gap = p.angle_gap(z.first_lba, z.first_lba + k * u64::from(z.spt), 9)?;
            let c = k / s;
            obs.push((c * (s - 1) + k % s, c, gap / sector_ns));
        }
        last =
            spindle::calib::skew::skew_corrections(&obs, (z.track_skew, z.cylinder_skew), z.spt, 2);
        seen = obs
            .iter()
            .map(|o| format!("{:.2}", o.2))
            .collect::<Vec<_>>()
            .join(", ");
        if last.2 < 4.0 && last.3 >= last.2 + 5.0 {
            if (last.0, last.1) != (0, 0) {
                p.say(format!(
                    "zone from LBA {}: far tracks' angles correct the skews by {:+} (track) and \
                     {:+} (cylinder) sectors (mean residual {:.2} sectors over tracks {ks:?})",
                    z.first_lba, last.0, last.1, last.2
                ));
            }
            let spt = i64::from(z.spt);
            let fix =
                |v: u32, d: i64| u32::try_from((i64::from(v) + d).rem_euclid(spt)).expect("< spt");
            z.track_skew = fix(z.track_skew, last.0);
            z.cylinder_skew = fix(z.cylinder_skew, last.1);
            return Ok(());
        }
    }
    Err(p.refuse(
        &format!("zone from LBA {}: the skews against far tracks", z.first_lba),
        format!(
            "no skews within two sectors of the measured ({}, {}) fit tracks {ks:?} (angles \
             [{seen}] sectors) within 4 sectors on average with every other 5 worse (best {:.2}, next \
             {:.2} sectors)",
            z.track_skew, z.cylinder_skew, last.2, last.3
        ),
    ))
}
