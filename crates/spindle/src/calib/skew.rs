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

#[cfg(test)]
mod tests {
    use super::*;

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
