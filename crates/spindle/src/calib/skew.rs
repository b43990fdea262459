//! Surfaces and skews from the penalties of crossing track boundaries.
//!
//! A read that runs off the end of track `j − 1` onto track `j` pays, beyond its transfer,
//! the wait from the end of the old track's last sector to the new track's first: the skew
//! (in whole revolutions plus the skew's angle, at least the switch time). A head switch and
//! a cylinder switch have different skews, so the crossings into tracks `j = S, 2S, …` stand
//! out, and their spacing is the number of surfaces `S` (track 0 is cylinder 0, head 0).

use super::wrap;

/// What the crossings of the first tracks of a zone show.
#[derive(Clone, Debug, PartialEq)]
pub struct SkewFit {
    /// Surfaces (tracks per cylinder); `None` when every crossing cost the same.
    pub surfaces: Option<u32>,
    /// Mean penalty of a head switch and of a cylinder switch, ns.
    pub head_penalty_ns: f64,
    pub cylinder_penalty_ns: f64,
    /// Largest deviation of one crossing from its class mean, ns.
    pub spread_ns: f64,
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// `crossings`: `(j, penalty_ns)` for the crossing into track `j ≥ 1`. Two penalties closer
/// than `separation_ns` are the same kind of switch.
#[must_use]
pub fn surfaces(crossings: &[(u64, f64)], separation_ns: f64) -> SkewFit {
    assert!(!crossings.is_empty(), "at least one crossing");
    assert!(
        crossings.iter().all(|&(j, _)| j >= 1),
        "crossings are into track 1 or later"
    );
    let mut sorted: Vec<f64> = crossings.iter().map(|c| c.1).collect();
    sorted.sort_by(f64::total_cmp);
    let (gap, cut) = sorted
        .windows(2)
        .map(|w| (w[1] - w[0], (w[0] + w[1]) / 2.0))
        .fold((0.0, f64::NAN), |b, x| if x.0 > b.0 { x } else { b });
    let one_class = || {
        let all: Vec<f64> = crossings.iter().map(|c| c.1).collect();
        let m = mean(&all);
        SkewFit {
            surfaces: None,
            head_penalty_ns: m,
            cylinder_penalty_ns: m,
            spread_ns: all.iter().map(|p| (p - m).abs()).fold(0.0, f64::max),
        }
    };
    if gap < separation_ns {
        return one_class();
    }
    let (lo, hi): (Vec<_>, Vec<_>) = crossings.iter().partition(|c| c.1 < cut);
    // The cylinder class: its tracks are the multiples of its gcd S ≥ 2, and the other
    // class holds none of them.
    let try_class = |cyl: &[&(u64, f64)], head: &[&(u64, f64)]| -> Option<u32> {
        let s = cyl.iter().fold(0, |g, c| gcd(g, c.0));
        let ok = s >= 2 && head.iter().all(|c| c.0 % s != 0);
        ok.then(|| u32::try_from(s).expect("surfaces fit u32"))
    };
    let pick = match (try_class(&hi, &lo), try_class(&lo, &hi)) {
        (Some(s), _) => Some((s, hi, lo)),
        (None, Some(s)) => Some((s, lo, hi)),
        (None, None) => None,
    };
    let Some((s, cyl, head)) = pick else {
        return one_class();
    };
    let vals = |v: &[&(u64, f64)]| v.iter().map(|c| c.1).collect::<Vec<_>>();
    let (cv, hv) = (vals(&cyl), vals(&head));
    let (cm, hm) = (mean(&cv), mean(&hv));
    let spread = cv
        .iter()
        .map(|p| (p - cm).abs())
        .chain(hv.iter().map(|p| (p - hm).abs()))
        .fold(0.0, f64::max);
    SkewFit {
        surfaces: Some(s),
        head_penalty_ns: hm,
        cylinder_penalty_ns: cm,
        spread_ns: spread,
    }
}

/// A skew in sectors from a crossing penalty: the penalty's angle within the revolution
/// in whole sectors of `sector_ns`, modulo the track's `spt` sectors.
#[must_use]
pub fn skew_sectors(penalty_ns: f64, period_ns: f64, sector_ns: f64, spt: u32) -> u32 {
    assert!(sector_ns > 0.0, "a positive sector time");
    assert!(spt > 0, "a track holds sectors");
    let s = (wrap(penalty_ns, period_ns) / sector_ns).round() as u64;
    u32::try_from(s % u64::from(spt)).expect("below spt")
}

/// Far-track check of a zone's skews. A skew one sector off puts every track's first
/// sector one more sector off per switch (a track 100 switches in, 100 sectors: the angles a
/// head tracker predicts are then wrong everywhere but near the zone's start), though it is
/// within the "one sector" a skew is measured to. `obs` holds, for tracks of the zone, the
/// head switches and cylinder switches from its first track (as
/// `spindle::drive::Geometry::angle_index` counts them) and the measured angle of the
/// track's first sector after the zone's first sector, in sectors. Returns the corrections
/// (track, cylinder) within ±`range` sectors whose angles fit every observation best
/// (smaller corrections first on a tie), that fit's mean absolute residual in sectors, and
/// the runner-up's (how clearly the observations single the best out).
#[must_use]
pub fn skew_corrections(
    obs: &[(u64, u64, f64)],
    skews: (u32, u32),
    spt: u32,
    range: i64,
) -> (i64, i64, f64, f64) {
    assert!(!obs.is_empty(), "observations to fit");
    assert!(spt > 0 && range >= 0, "a track holds sectors");
    let n = spt as f64;
    let resid = |dt: i64, dc: i64| -> f64 {
        obs.iter()
            .map(|&(h, c, got)| {
                let t = i128::from(skews.0) + i128::from(dt);
                let cy = i128::from(skews.1) + i128::from(dc);
                let want = (i128::from(h) * t + i128::from(c) * cy).rem_euclid(i128::from(spt));
                let d = (got - want as f64).rem_euclid(n);
                d.min(n - d)
            })
            .sum::<f64>()
            / obs.len() as f64
    };
    let mut cands: Vec<(i64, i64)> = (-range..=range)
        .flat_map(|a| (-range..=range).map(move |b| (a, b)))
        .collect();
    cands.sort_by_key(|&(a, b)| a.abs() + b.abs());
    let mut fits: Vec<(i64, i64, f64)> = cands
        .into_iter()
        .map(|(a, b)| (a, b, resid(a, b)))
        .collect();
    // Stable: on a tie the smaller correction stays first.
    fits.sort_by(|x, y| x.2.total_cmp(&y.2));
    let second = fits.get(1).map_or(f64::INFINITY, |f| f.2);
    (fits[0].0, fits[0].1, fits[0].2, second)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn far_tracks_correct_a_skew_one_sector_off() {
        // True skews 97 and 133 on a 254-sector track, 12 surfaces; measured 96 and 133.
        let (spt, s) = (254u64, 12u64);
        let obs: Vec<(u64, u64, f64)> = [11u64, 12, 2000, 5000, 10_000]
            .iter()
            .map(|&k| {
                let c = k / s;
                let h = c * (s - 1) + k % s;
                let a = (h * 97 + c * 133) % spt;
                (h, c, a as f64 + 0.3)
            })
            .collect();
        let (dt, dc, r, second) = skew_corrections(&obs, (96, 133), spt as u32, 2);
        assert_eq!((dt, dc), (1, 0));
        assert!((r - 0.3).abs() < 1e-9, "{r}");
        assert!(
            second > 5.0,
            "the far tracks single the correction out: {second}"
        );
        // Already right: no correction.
        let (dt, dc, _, _) = skew_corrections(&obs, (97, 133), spt as u32, 2);
        assert_eq!((dt, dc), (0, 0));
    }

    #[test]
    fn surfaces_are_the_spacing_of_cylinder_switches() {
        for s in [2u64, 5, 12] {
            let c: Vec<(u64, f64)> = (1..40)
                .map(|j| {
                    (
                        j,
                        if j % s == 0 {
                            3.1e6
                        } else {
                            2.3e6 + (j % 3) as f64 * 1e4
                        },
                    )
                })
                .collect();
            let f = surfaces(&c, 1e5);
            assert_eq!(f.surfaces, Some(s as u32));
            assert!((f.cylinder_penalty_ns - 3.1e6).abs() < 1.0);
        }
        let same: Vec<(u64, f64)> = (1..10).map(|j| (j, 1e6)).collect();
        assert_eq!(surfaces(&same, 1e5).surfaces, None);
        assert_eq!(skew_sectors(6e6 + 2.3e6, 6e6, 23_600.0, 254), 97);
    }
}
