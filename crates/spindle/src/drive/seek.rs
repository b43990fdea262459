//! Seek curves: the time to move the arm `d` cylinders, compiled into a dense integer table.
//!
//! Every form of [`SeekSpec`] (measured table, Ruemmler–Wilkes two-piece, the dissertation's
//! linear form, three published points shaped by a template) becomes one [`SeekCurve`]: a
//! `Vec<u32>` of nanoseconds indexed by distance, so a scheduler's prediction is one load.
//! `t(0) = 0`; the constant command overhead (To) is not part of the seek.

use super::spec::SeekSpec;
use super::DriveError;
use crate::Span;

/// The normalised seek-curve shape shared by 13 measured drives ("mean all_13" of
/// `../shared/drives/seek_template.md`): `g(x) = (t(x·dmax) − t1) / (tfull − t1)`.
const TEMPLATE_X: [f64; 11] = [
    0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3333, 0.5, 0.75, 1.0,
];
const TEMPLATE_G: [f64; 11] = [
    0.0464, 0.099, 0.1268, 0.1698, 0.2346, 0.3023, 0.4073, 0.5094, 0.631, 0.8092, 1.0,
];

/// A seek curve over distances `0..=max_distance`, in integer nanoseconds.
#[derive(Clone, Debug)]
pub struct SeekCurve {
    table_ns: Vec<u32>,
}

impl SeekCurve {
    /// Compiles `spec` for a drive with `cylinders` cylinders. `write` selects a table's
    /// write curve when it has one.
    pub fn compile(spec: &SeekSpec, cylinders: u32, write: bool) -> Result<SeekCurve, DriveError> {
        assert!(cylinders >= 1, "a drive has at least one cylinder");
        let max_d = cylinders - 1;
        let ms_at: Box<dyn Fn(u32) -> f64> = match spec {
            SeekSpec::Table {
                points,
                write_points,
            } => {
                let pts = match (write, write_points) {
                    (true, Some(w)) => w,
                    _ => points,
                };
                check_table(pts)?;
                let pts = pts.clone();
                Box::new(move |d| interpolate_table(&pts, d))
            }
            SeekSpec::TwoPiece {
                a_ms,
                b_ms,
                c_ms,
                e_ms,
                boundary,
                single_cylinder_ms,
            } => {
                for (name, v) in [
                    ("a_ms", a_ms),
                    ("b_ms", b_ms),
                    ("c_ms", c_ms),
                    ("e_ms", e_ms),
                ] {
                    check_ms(&format!("seek.{name}"), *v)?;
                }
                let (a, b, c, e, bd, one) =
                    (*a_ms, *b_ms, *c_ms, *e_ms, *boundary, *single_cylinder_ms);
                Box::new(move |d| match (d, one) {
                    (1, Some(t1)) => t1,
                    _ if d < bd => a + b * f64::from(d).sqrt(),
                    _ => c + e * f64::from(d),
                })
            }
            SeekSpec::Linear {
                full_ms,
                intercept_ms,
            } => {
                check_ms("seek.full_ms", *full_ms)?;
                check_ms("seek.intercept_ms", *intercept_ms)?;
                let (full, intercept) = (*full_ms, *intercept_ms);
                let span = f64::from(max_d.max(1));
                Box::new(move |d| intercept + full * f64::from(d) / span)
            }
            SeekSpec::ThreePoint {
                single_ms,
                average_ms,
                full_ms,
            } => {
                let shape = TemplateShape::fit(*single_ms, *average_ms, *full_ms, max_d)?;
                Box::new(move |d| shape.ms_at(d))
            }
        };
        let mut table_ns = Vec::with_capacity(max_d as usize + 1);
        table_ns.push(0);
        for d in 1..=max_d {
            let ms = ms_at(d);
            if !(0.0..=4_000.0).contains(&ms) {
                return Err(DriveError::Invalid {
                    key: "seek".into(),
                    msg: format!("seek time at distance {d} is {ms} ms; must be within 0..4000 ms"),
                });
            }
            table_ns.push(u32::try_from(Span::from_ms_f64(ms).0).expect("checked < 4 s"));
        }
        Ok(SeekCurve { table_ns })
    }

    /// Seek time for a distance of `d` cylinders.
    #[inline]
    pub fn time(&self, d: u32) -> Span {
        Span(u64::from(self.table_ns[d as usize]))
    }

    pub fn max_distance(&self) -> u32 {
        u32::try_from(self.table_ns.len() - 1).expect("table built from a u32 distance")
    }

    /// Mean seek over random pairs of cylinders (distance d weighted by N − d).
    pub fn mean_random(&self) -> Span {
        let n = self.table_ns.len() as u128;
        let (mut num, mut den) = (0u128, 0u128);
        for (d, t) in self.table_ns.iter().enumerate().skip(1) {
            let w = n - d as u128;
            num += w * u128::from(*t);
            den += w;
        }
        Span(num.checked_div(den).map_or(0, |m| m as u64))
    }
}

fn check_ms(key: &str, v: f64) -> Result<(), DriveError> {
    if v.is_finite() && v >= 0.0 {
        Ok(())
    } else {
        Err(DriveError::Invalid {
            key: key.into(),
            msg: format!("must be a time >= 0 ms, got {v}"),
        })
    }
}

fn check_table(pts: &[(u32, f64)]) -> Result<(), DriveError> {
    if pts.is_empty() {
        return Err(DriveError::Invalid {
            key: "seek.points".into(),
            msg: "no points".into(),
        });
    }
    for (i, w) in pts.windows(2).enumerate() {
        if w[1].0 <= w[0].0 {
            return Err(DriveError::Invalid {
                key: format!("seek.points[{}]", i + 1),
                msg: format!("distances must increase, got {} after {}", w[1].0, w[0].0),
            });
        }
    }
    for (i, p) in pts.iter().enumerate() {
        check_ms(&format!("seek.points[{i}]"), p.1)?;
    }
    Ok(())
}

/// Linear interpolation in a measured table; below the first point the line runs to (0, 0),
/// beyond the last it continues the last segment's slope.
fn interpolate_table(pts: &[(u32, f64)], d: u32) -> f64 {
    let i = pts.partition_point(|p| p.0 < d);
    if i < pts.len() && pts[i].0 == d {
        return pts[i].1;
    }
    let (lo, hi) = match i {
        0 => ((0u32, 0.0), pts[0]),
        i if i == pts.len() => {
            if pts.len() == 1 {
                return pts[0].1;
            }
            (pts[i - 2], pts[i - 1])
        }
        i => (pts[i - 1], pts[i]),
    };
    let f = (f64::from(d) - f64::from(lo.0)) / (f64::from(hi.0) - f64::from(lo.0));
    lo.1 + f * (hi.1 - lo.1)
}

/// The template shape `g(x)^k`, with `k` chosen so the (N − d)-weighted mean seek equals the
/// published average; endpoints are the published single-track and full-stroke times.
struct TemplateShape {
    t1: f64,
    tfull: f64,
    k: f64,
    max_d: u32,
}

impl TemplateShape {
    fn fit(t1: f64, tavg: f64, tfull: f64, max_d: u32) -> Result<TemplateShape, DriveError> {
        for (k, v) in [
            ("seek.single_ms", t1),
            ("seek.average_ms", tavg),
            ("seek.full_ms", tfull),
        ] {
            check_ms(k, v)?;
        }
        if !(t1 < tavg && tavg < tfull) {
            return Err(DriveError::Invalid {
                key: "seek".into(),
                msg: format!("need single < average < full, got {t1} / {tavg} / {tfull} ms"),
            });
        }
        let mut shape = TemplateShape {
            t1,
            tfull,
            k: 1.0,
            max_d: max_d.max(1),
        };
        let (mut lo, mut hi) = (0.05f64, 20.0f64);
        for _ in 0..60 {
            shape.k = (lo * hi).sqrt();
            // A larger exponent lowers g on (0, 1) and so the mean.
            if shape.mean_ms() > tavg {
                lo = shape.k;
            } else {
                hi = shape.k;
            }
        }
        let err = (shape.mean_ms() - tavg).abs();
        if err > 0.01 * tavg {
            return Err(DriveError::Invalid {
                key: "seek.average_ms".into(),
                msg: format!("the seek template cannot reach an average of {tavg} ms between {t1} and {tfull} ms"),
            });
        }
        Ok(shape)
    }

    fn g(&self, x: f64) -> f64 {
        let i = TEMPLATE_X.partition_point(|&p| p < x);
        let base = match i {
            0 => TEMPLATE_G[0] * x / TEMPLATE_X[0],
            i if i >= TEMPLATE_X.len() => 1.0,
            i => {
                let f = (x - TEMPLATE_X[i - 1]) / (TEMPLATE_X[i] - TEMPLATE_X[i - 1]);
                TEMPLATE_G[i - 1] + f * (TEMPLATE_G[i] - TEMPLATE_G[i - 1])
            }
        };
        base.powf(self.k)
    }

    fn ms_at(&self, d: u32) -> f64 {
        if d <= 1 {
            return if d == 0 { 0.0 } else { self.t1 };
        }
        let x = f64::from(d - 1) / f64::from(self.max_d.saturating_sub(1).max(1));
        self.t1 + (self.tfull - self.t1) * self.g(x)
    }

    fn mean_ms(&self) -> f64 {
        // Sampled on at most ~4,000 distances: enough for a 0.1 % accurate mean.
        let n = f64::from(self.max_d) + 1.0;
        let step = (self.max_d / 4_000).max(1);
        let (mut num, mut den) = (0.0, 0.0);
        let mut d = 1;
        while d <= self.max_d {
            let w = n - f64::from(d);
            num += w * self.ms_at(d);
            den += w;
            d += step;
        }
        num / den
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_piece_matches_the_hp97560_equation() {
        let spec = SeekSpec::TwoPiece {
            a_ms: 3.24,
            b_ms: 0.4,
            c_ms: 8.0,
            e_ms: 0.008,
            boundary: 383,
            single_cylinder_ms: None,
        };
        let c = SeekCurve::compile(&spec, 1962, false).unwrap();
        assert_eq!(c.time(0), Span(0));
        assert_eq!(c.time(100), Span::from_ms_f64(3.24 + 0.4 * 10.0));
        assert_eq!(c.time(1000), Span::from_ms_f64(8.0 + 8.0));
    }

    #[test]
    fn linear_reaches_full_seek_at_full_stroke_and_mean_is_a_third() {
        let spec = SeekSpec::Linear {
            full_ms: 9.2,
            intercept_ms: 0.0,
        };
        let c = SeekCurve::compile(&spec, 9772, false).unwrap();
        assert_eq!(c.time(9771), Span::from_ms_f64(9.2));
        // Mean random seek of a linear curve is S/3 (dissertation eq. 2.1), up to the
        // discreteness of 9,772 cylinders (relative error ~1/N).
        let mean = c.mean_random().as_ms_f64();
        assert!((mean - 9.2 / 3.0).abs() < 0.001 * 9.2, "mean {mean}");
    }

    #[test]
    fn table_interpolates_between_points() {
        let spec = SeekSpec::Table {
            points: vec![(1, 1.0), (11, 2.0), (101, 5.0)],
            write_points: None,
        };
        let c = SeekCurve::compile(&spec, 201, false).unwrap();
        assert_eq!(c.time(1), Span::from_ms_f64(1.0));
        assert_eq!(c.time(6), Span::from_ms_f64(1.5));
        assert_eq!(c.time(56), Span::from_ms_f64(3.5));
        // Extrapolated past the last point along the last segment's slope.
        assert_eq!(c.time(200), Span::from_ms_f64(5.0 + 99.0 * 3.0 / 90.0));
    }

    #[test]
    fn three_point_hits_all_three_published_values() {
        let spec = SeekSpec::ThreePoint {
            single_ms: 0.6,
            average_ms: 8.5,
            full_ms: 16.0,
        };
        let c = SeekCurve::compile(&spec, 300_000, false).unwrap();
        assert_eq!(c.time(1), Span::from_ms_f64(0.6));
        assert_eq!(c.time(299_999), Span::from_ms_f64(16.0));
        let mean = c.mean_random().as_ms_f64();
        // The fit targets the average to 1 % (the bisection's acceptance bound).
        assert!((mean - 8.5).abs() < 0.085, "mean {mean}");
        // Monotone non-decreasing: a longer seek never takes less time.
        for d in 1..299_999 {
            assert!(c.time(d) <= c.time(d + 1), "not monotone at {d}");
        }
    }

    #[test]
    fn decreasing_table_is_an_error_naming_the_point() {
        let spec = SeekSpec::Table {
            points: vec![(1, 1.0), (1, 2.0)],
            write_points: None,
        };
        let err = SeekCurve::compile(&spec, 10, false)
            .unwrap_err()
            .to_string();
        assert!(err.contains("seek.points[1]"), "{err}");
    }
}
