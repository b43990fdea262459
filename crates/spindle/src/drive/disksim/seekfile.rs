//! DiskSim's extracted seek curves (`.seek`): an optional first line `Seek distances
//! measured: N`, then lines `distance, time_ms[, stdev[, …]]`.
//!
//! DiskSim (`dm_mech_g1_read_extracted_seek_curve`) reads only the distance and the time of
//! each line; further columns (a standard deviation, or a write curve in some extractions) do
//! not reach its model, so they are checked as numbers and not used.

use super::DiskSimError;

/// The `(distance, ms)` points of a seek file.
pub fn parse(path: &str, text: &str) -> Result<Vec<(u32, f64)>, DiskSimError> {
    let err = |line: usize, msg: String| DiskSimError {
        file: path.into(),
        block: "seek curve".into(),
        param: format!("line {line}"),
        msg,
    };
    let mut declared = None;
    let mut points: Vec<(u32, f64)> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        if i == 0 {
            if let Some(n) = line.strip_prefix("Seek distances measured:") {
                let n: usize = n
                    .trim()
                    .parse()
                    .map_err(|_| err(1, format!("bad count {:?}", n.trim())))?;
                declared = Some(n);
                continue;
            }
        }
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        if !(2..=4).contains(&fields.len()) {
            return Err(err(
                i + 1,
                format!("expected `distance, time_ms[, …]`, got {line:?}"),
            ));
        }
        let d: u32 = fields[0]
            .parse()
            .map_err(|_| err(i + 1, format!("bad distance {:?}", fields[0])))?;
        let mut nums = Vec::with_capacity(3);
        for f in &fields[1..] {
            let v: f64 = f
                .parse()
                .map_err(|_| err(i + 1, format!("bad number {f:?}")))?;
            if !v.is_finite() {
                return Err(err(i + 1, format!("bad number {f:?}")));
            }
            nums.push(v);
        }
        if nums[0] < 0.0 {
            return Err(err(i + 1, format!("negative seek time {}", nums[0])));
        }
        if let Some(&(prev, _)) = points.last() {
            if d <= prev {
                return Err(err(
                    i + 1,
                    format!("distances must increase: {d} after {prev}"),
                ));
            }
        }
        points.push((d, nums[0]));
    }
    if points.is_empty() {
        return Err(err(1, "no seek points".into()));
    }
    if let Some(n) = declared {
        if n != points.len() {
            return Err(err(
                1,
                format!("declares {n} distances but lists {}", points.len()),
            ));
        }
    }
    Ok(points)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_three_and_four_columns() {
        let p = parse(
            "x.seek",
            "Seek distances measured: 3\n1,\t0.8\n2, 1.0, 0.1\n5, 2.0, 0.2, 2.5\n",
        )
        .unwrap();
        assert_eq!(p, vec![(1, 0.8), (2, 1.0), (5, 2.0)]);
    }

    #[test]
    fn malformed_lines_are_errors_with_the_line() {
        let e = parse("x.seek", "Seek distances measured: 2\n1, 0.8\n2; 1.0\n").unwrap_err();
        assert_eq!((e.file.as_str(), e.param.as_str()), ("x.seek", "line 3"));
        let e = parse("x.seek", "Seek distances measured: 3\n1, 0.8\n2, 1.0\n").unwrap_err();
        assert!(e.msg.contains("declares 3"), "{e}");
    }
}
