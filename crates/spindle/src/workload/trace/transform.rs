//! Trace transforms as iterator adapters over `Result<TraceRecord, TraceError>`: speed-up,
//! time window, device filter, concatenation of devices into one logical data set, and the
//! split of requests into pages.
//!
//! All of them stream (constant memory) and are deterministic integer arithmetic. Errors from
//! the input pass through unchanged; errors a transform finds itself have `line == 0` and name
//! the record (its 1-based position among the records the transform has seen).
//!
//! Order in time: only [`SpeedUp`] requires non-decreasing arrivals (it is the replay
//! transform); it reports the first record that goes back in time as
//! [`TraceErrorKind::OutOfOrder`] rather than reorder silently. Sort such traces first (the CLI's
//! `trace convert --sort` loads and sorts them).
//!
//! Concatenation follows the SR-Array dissertation §4.2.1 ("logical data sets"): the devices of a
//! trace are laid end to end in device-number order, device `d` starting right after the
//! extents of all devices numbered below it. A device's extent is `max(lba + sectors)` over its
//! records, so it needs a first pass ([`device_extents`]) before the replay pass.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use super::{TraceError, TraceErrorKind, TraceRecord};
use crate::Nanos;

/// A speed-up factor as an exact fraction `num / den` (> 0). Inter-arrival times are divided by
/// it: an arrival `t` becomes `floor((t - t_first) * den / num)`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct SpeedUp {
    num: u64,
    den: u64,
}

impl SpeedUp {
    /// No scaling; only makes arrivals relative to the first record.
    pub const ONE: SpeedUp = SpeedUp { num: 1, den: 1 };

    /// `num / den`; `None` if either is 0.
    pub fn new(num: u64, den: u64) -> Option<SpeedUp> {
        if num == 0 || den == 0 {
            return None;
        }
        let g = gcd(num, den);
        Some(SpeedUp {
            num: num / g,
            den: den / g,
        })
    }

    pub fn num(self) -> u64 {
        self.num
    }

    pub fn den(self) -> u64 {
        self.den
    }

    /// `span_ns` divided by the factor, rounded down; `None` if the result overflows.
    pub fn scale(self, span_ns: u64) -> Option<u64> {
        let v = u128::from(span_ns) * u128::from(self.den) / u128::from(self.num);
        u64::try_from(v).ok()
    }
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

impl fmt::Display for SpeedUp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.den == 1 {
            write!(f, "{}", self.num)
        } else {
            write!(f, "{}/{}", self.num, self.den)
        }
    }
}

/// A speed-up factor that is not a positive decimal or fraction.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid speed-up {got:?}: expected a positive number such as 2, 0.5 or 3/2")]
pub struct ParseSpeedUpError {
    pub got: String,
}

impl FromStr for SpeedUp {
    type Err = ParseSpeedUpError;

    /// Accepts `2`, `2.5`, `0.125` (up to 9 decimals) and fractions `3/2`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || ParseSpeedUpError { got: s.to_string() };
        let t = s.trim();
        if let Some((n, d)) = t.split_once('/') {
            let n: u64 = n.trim().parse().map_err(|_| err())?;
            let d: u64 = d.trim().parse().map_err(|_| err())?;
            return SpeedUp::new(n, d).ok_or_else(err);
        }
        let (int, frac) = t.split_once('.').unwrap_or((t, ""));
        let all_digits = |x: &str| x.bytes().all(|b| b.is_ascii_digit());
        if (int.is_empty() && frac.is_empty())
            || !all_digits(int)
            || !all_digits(frac)
            || frac.len() > 9
        {
            return Err(err());
        }
        let den = 10u64.pow(u32::try_from(frac.len()).map_err(|_| err())?);
        let int_v: u64 = if int.is_empty() {
            0
        } else {
            int.parse().map_err(|_| err())?
        };
        let frac_v: u64 = if frac.is_empty() {
            0
        } else {
            frac.parse().map_err(|_| err())?
        };
        let num = int_v
            .checked_mul(den)
            .and_then(|x| x.checked_add(frac_v))
            .ok_or_else(err)?;
        SpeedUp::new(num, den).ok_or_else(err)
    }
}

/// Iterator-adapter methods for record streams.
pub trait TraceIterExt: Iterator<Item = Result<TraceRecord, TraceError>> + Sized {
    /// The replay transform: arrivals relative to the first record, divided by `factor`.
    /// Rejects a record earlier than the one before it ([`TraceErrorKind::OutOfOrder`]).
    fn speed_up(self, factor: SpeedUp) -> SpeedUpIter<Self> {
        SpeedUpIter {
            inner: self,
            factor,
            first_ns: None,
            prev_ns: 0,
            record: 0,
        }
    }

    /// Keeps records with `start_ns <= arrival - first_arrival < end_ns`, where `first_arrival`
    /// is that of the first record this adapter sees. Arrivals are left unchanged. Records
    /// earlier than the first are outside every window. Reads the input to its end (unsorted
    /// traces can bring records back into the window).
    fn window(self, start_ns: u64, end_ns: u64) -> Window<Self> {
        Window {
            inner: self,
            start_ns,
            end_ns,
            first_ns: None,
            stop_at_end: false,
        }
    }

    /// [`TraceIterExt::window`] for a trace sorted by time (as a replay needs: see
    /// [`TraceIterExt::speed_up`]): stops reading at the first record at or past `end_ns`, so
    /// a short window of a long trace reads only up to the window's end. A record after it
    /// that goes back into the window is not seen (an unsorted trace must be sorted first).
    fn window_sorted(self, start_ns: u64, end_ns: u64) -> Window<Self> {
        Window {
            stop_at_end: true,
            ..self.window(start_ns, end_ns)
        }
    }

    /// Keeps records of the devices in `devices`.
    fn devices(self, devices: DeviceSet) -> DeviceFilter<Self> {
        DeviceFilter {
            inner: self,
            devices,
        }
    }

    /// Concatenates the devices of `layout` into one logical data set on `layout.device()`.
    fn concat(self, layout: ConcatLayout) -> Concat<Self> {
        Concat {
            inner: self,
            layout,
            record: 0,
        }
    }

    /// Splits every request at multiples of `page_sectors` into requests of at most one page,
    /// all at the request's arrival, in address order: the stream a page-oriented buffer pool
    /// issues (the paged-disk paper's TPC-C trace is one page per request). A request that
    /// starts or ends inside a page keeps only its part of that page.
    fn pages(self, page_sectors: u32) -> Pages<Self> {
        assert!(page_sectors > 0, "a page has at least one sector");
        Pages {
            inner: self,
            page_sectors: u64::from(page_sectors),
            rest: None,
        }
    }
}

impl<I: Iterator<Item = Result<TraceRecord, TraceError>>> TraceIterExt for I {}

/// See [`TraceIterExt::pages`].
pub struct Pages<I> {
    inner: I,
    page_sectors: u64,
    /// What is left of the request being split.
    rest: Option<TraceRecord>,
}

impl<I: Iterator<Item = Result<TraceRecord, TraceError>>> Iterator for Pages<I> {
    type Item = Result<TraceRecord, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut rec = match self.rest.take() {
            Some(r) => r,
            None => match self.inner.next()? {
                Ok(r) => r,
                Err(e) => return Some(Err(e)),
            },
        };
        let page_end = (rec.lba / self.page_sectors + 1) * self.page_sectors;
        let end = rec.lba + u64::from(rec.sectors);
        if end > page_end {
            let first = u32::try_from(page_end - rec.lba).expect("less than the request");
            self.rest = Some(TraceRecord {
                lba: page_end,
                sectors: rec.sectors - first,
                ..rec
            });
            rec.sectors = first;
        }
        Some(Ok(rec))
    }
}

/// See [`TraceIterExt::speed_up`].
pub struct SpeedUpIter<I> {
    inner: I,
    factor: SpeedUp,
    first_ns: Option<u64>,
    prev_ns: u64,
    record: u64,
}

impl<I: Iterator<Item = Result<TraceRecord, TraceError>>> Iterator for SpeedUpIter<I> {
    type Item = Result<TraceRecord, TraceError>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        let mut rec = match self.inner.next()? {
            Ok(r) => r,
            Err(e) => return Some(Err(e)),
        };
        self.record += 1;
        let record = self.record;
        let t = rec.arrival.0;
        let first = *self.first_ns.get_or_insert(t);
        if t < self.prev_ns {
            let kind = TraceErrorKind::OutOfOrder {
                record,
                prev_ns: self.prev_ns,
                got_ns: t,
            };
            return Some(Err(TraceError::unlined(kind)));
        }
        self.prev_ns = t;
        assert!(
            t >= first,
            "arrivals are non-decreasing, so none precedes the first"
        );
        // (t - first) * den / num <= (t - first) when den <= num; a slow-down may overflow.
        let Some(scaled) = self.factor.scale(t - first) else {
            let kind = TraceErrorKind::OutOfRange {
                index: 1,
                name: "arrival",
                got: format!("{t} ns slowed down by {}", self.factor),
            };
            return Some(Err(TraceError::unlined(kind)));
        };
        rec.arrival = Nanos(scaled);
        Some(Ok(rec))
    }
}

/// See [`TraceIterExt::window`].
pub struct Window<I> {
    inner: I,
    start_ns: u64,
    end_ns: u64,
    first_ns: Option<u64>,
    stop_at_end: bool,
}

impl<I: Iterator<Item = Result<TraceRecord, TraceError>>> Iterator for Window<I> {
    type Item = Result<TraceRecord, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let rec = match self.inner.next()? {
                Ok(r) => r,
                Err(e) => return Some(Err(e)),
            };
            let first = *self.first_ns.get_or_insert(rec.arrival.0);
            let Some(rel) = rec.arrival.0.checked_sub(first) else {
                continue;
            };
            if rel >= self.start_ns && rel < self.end_ns {
                return Some(Ok(rec));
            }
            if self.stop_at_end && rel >= self.end_ns {
                return None;
            }
        }
    }
}

/// A set of device numbers (sorted, without duplicates).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeviceSet {
    devices: Vec<u32>,
}

impl DeviceSet {
    pub fn new(devices: impl IntoIterator<Item = u32>) -> Self {
        let mut devices: Vec<u32> = devices.into_iter().collect();
        devices.sort_unstable();
        devices.dedup();
        DeviceSet { devices }
    }

    #[inline]
    pub fn contains(&self, device: u32) -> bool {
        self.devices.binary_search(&device).is_ok()
    }

    pub fn as_slice(&self) -> &[u32] {
        &self.devices
    }
}

impl FromIterator<u32> for DeviceSet {
    fn from_iter<T: IntoIterator<Item = u32>>(iter: T) -> Self {
        DeviceSet::new(iter)
    }
}

/// See [`TraceIterExt::devices`].
pub struct DeviceFilter<I> {
    inner: I,
    devices: DeviceSet,
}

impl<I: Iterator<Item = Result<TraceRecord, TraceError>>> Iterator for DeviceFilter<I> {
    type Item = Result<TraceRecord, TraceError>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        loop {
            match self.inner.next()? {
                Ok(r) if !self.devices.contains(r.device) => continue,
                other => return Some(other),
            }
        }
    }
}

/// Each device's extent, `max(lba + sectors)` over its records, in sectors.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeviceExtents {
    extents: BTreeMap<u32, u64>,
}

impl DeviceExtents {
    pub fn new() -> Self {
        DeviceExtents::default()
    }

    /// Accounts for one record.
    #[inline]
    pub fn push(&mut self, rec: &TraceRecord) {
        let end = rec
            .lba
            .checked_add(u64::from(rec.sectors))
            .expect("readers reject requests past u64::MAX");
        let e = self.extents.entry(rec.device).or_insert(0);
        *e = (*e).max(end);
    }

    pub fn get(&self, device: u32) -> Option<u64> {
        self.extents.get(&device).copied()
    }

    /// `(device, extent)` in device-number order.
    pub fn iter(&self) -> impl Iterator<Item = (u32, u64)> + '_ {
        self.extents.iter().map(|(&d, &e)| (d, e))
    }

    pub fn len(&self) -> usize {
        self.extents.len()
    }

    pub fn is_empty(&self) -> bool {
        self.extents.is_empty()
    }

    /// The layout placing the devices end to end in device-number order, on device 0.
    pub fn concat_layout(&self) -> ConcatLayout {
        ConcatLayout::new(self, 0)
    }
}

/// Computes every device's extent in one streaming pass; the first error stops it.
pub fn device_extents<I>(records: I) -> Result<DeviceExtents, TraceError>
where
    I: IntoIterator<Item = Result<TraceRecord, TraceError>>,
{
    let mut ext = DeviceExtents::new();
    for r in records {
        ext.push(&r?);
    }
    Ok(ext)
}

/// Where each device's sectors go in a concatenated logical data set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConcatLayout {
    /// `(device, base, extent)` sorted by device; bases are increasing and contiguous.
    parts: Vec<(u32, u64, u64)>,
    total: u64,
    device: u32,
}

/// A concatenated data set too large for 64-bit sector addresses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("concatenated devices exceed 2^64 sectors")]
pub struct ConcatTooLarge;

impl ConcatLayout {
    /// Lays out `extents` end to end in device-number order; records come out on `device`.
    ///
    /// Panics if the extents sum past `u64::MAX` sectors (use [`ConcatLayout::try_new`]).
    pub fn new(extents: &DeviceExtents, device: u32) -> Self {
        Self::try_new(extents, device).expect("extents of real traces sum below 2^64 sectors")
    }

    pub fn try_new(extents: &DeviceExtents, device: u32) -> Result<Self, ConcatTooLarge> {
        let mut parts = Vec::with_capacity(extents.len());
        let mut base = 0u64;
        for (d, e) in extents.iter() {
            parts.push((d, base, e));
            base = base.checked_add(e).ok_or(ConcatTooLarge)?;
        }
        Ok(ConcatLayout {
            parts,
            total: base,
            device,
        })
    }

    /// The size of the logical data set in sectors.
    pub fn total_sectors(&self) -> u64 {
        self.total
    }

    /// The device the concatenated records are on.
    pub fn device(&self) -> u32 {
        self.device
    }

    /// `(device, base, extent)` in device-number order.
    pub fn parts(&self) -> &[(u32, u64, u64)] {
        &self.parts
    }

    /// The first logical sector of `device`, if it is part of the layout.
    #[inline]
    pub fn base(&self, device: u32) -> Option<u64> {
        self.parts
            .binary_search_by_key(&device, |p| p.0)
            .ok()
            .map(|i| self.parts[i].1)
    }

    fn map(&self, record: u64, rec: &TraceRecord) -> Result<u64, TraceErrorKind> {
        let Ok(i) = self.parts.binary_search_by_key(&rec.device, |p| p.0) else {
            return Err(TraceErrorKind::UnknownDevice {
                record,
                device: rec.device,
            });
        };
        let (_, base, extent) = self.parts[i];
        let end = rec.lba + u64::from(rec.sectors);
        if end > extent {
            return Err(TraceErrorKind::BeyondExtent {
                record,
                device: rec.device,
                lba: rec.lba,
                end,
                extent,
            });
        }
        let mapped = base
            .checked_add(rec.lba)
            .ok_or(TraceErrorKind::ConcatOverflow {
                record,
                lba: rec.lba,
                base,
            })?;
        assert!(
            mapped + u64::from(rec.sectors) <= self.total,
            "a mapped request stays inside the data set"
        );
        Ok(mapped)
    }
}

/// See [`TraceIterExt::concat`].
pub struct Concat<I> {
    inner: I,
    layout: ConcatLayout,
    record: u64,
}

impl<I: Iterator<Item = Result<TraceRecord, TraceError>>> Iterator for Concat<I> {
    type Item = Result<TraceRecord, TraceError>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        let mut rec = match self.inner.next()? {
            Ok(r) => r,
            Err(e) => return Some(Err(e)),
        };
        self.record += 1;
        let record = self.record;
        match self.layout.map(record, &rec) {
            Ok(lba) => {
                rec.lba = lba;
                rec.device = self.layout.device;
                Some(Ok(rec))
            }
            Err(kind) => Some(Err(TraceError::unlined(kind))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Op;

    fn rec(t: u64, device: u32, lba: u64, sectors: u32) -> Result<TraceRecord, TraceError> {
        Ok(TraceRecord {
            arrival: Nanos(t),
            device,
            lba,
            sectors,
            op: Op::Read,
        })
    }

    #[test]
    fn pages_split_requests_at_page_boundaries_and_keep_their_arrival() {
        // 16-sector pages: [10, 40) is [10, 16) [16, 32) [32, 40); [32, 48) is one page.
        let input = vec![rec(5, 0, 10, 30), rec(7, 1, 32, 16), rec(9, 0, 3, 2)];
        let out = ok(input.into_iter().pages(16).collect());
        let got: Vec<(u64, u32, u64, u32)> = out
            .iter()
            .map(|r| (r.arrival.0, r.device, r.lba, r.sectors))
            .collect();
        assert_eq!(
            got,
            vec![
                (5, 0, 10, 6),
                (5, 0, 16, 16),
                (5, 0, 32, 8),
                (7, 1, 32, 16),
                (9, 0, 3, 2)
            ]
        );
        // Errors pass through in place.
        let bad = TraceError::unlined(TraceErrorKind::OutOfRange {
            index: 1,
            name: "x",
            got: "y".into(),
        });
        let out: Vec<_> = vec![rec(1, 0, 0, 32), Err(bad)]
            .into_iter()
            .pages(16)
            .collect();
        assert_eq!(out.len(), 3);
        assert!(out[2].is_err());
    }

    fn ok(v: Vec<Result<TraceRecord, TraceError>>) -> Vec<TraceRecord> {
        v.into_iter().map(|r| r.expect("no error")).collect()
    }

    #[test]
    fn speed_up_parses_exact_fractions() {
        assert_eq!("2".parse(), Ok(SpeedUp { num: 2, den: 1 }));
        assert_eq!("2.5".parse(), Ok(SpeedUp { num: 5, den: 2 }));
        assert_eq!("0.125".parse(), Ok(SpeedUp { num: 1, den: 8 }));
        assert_eq!(".5".parse(), Ok(SpeedUp { num: 1, den: 2 }));
        assert_eq!("6/4".parse(), Ok(SpeedUp { num: 3, den: 2 }));
        for bad in [
            "0",
            "-1",
            "",
            ".",
            "1e3",
            "nan",
            "inf",
            "1/0",
            "0/5",
            "x",
            "0.0000000001",
            "99999999999999999999",
        ] {
            assert!(
                bad.parse::<SpeedUp>().is_err(),
                "{bad:?} should be rejected"
            );
        }
        assert_eq!(SpeedUp::new(3, 2).expect("valid").to_string(), "3/2");
    }

    #[test]
    fn speed_up_divides_relative_arrivals_and_floors() {
        let input = vec![rec(1000, 0, 0, 1), rec(1003, 0, 0, 1), rec(1010, 0, 0, 1)];
        let out = ok(input
            .into_iter()
            .speed_up("2".parse().expect("valid"))
            .collect());
        let t: Vec<u64> = out.iter().map(|r| r.arrival.0).collect();
        assert_eq!(t, vec![0, 1, 5], "3/2 floors to 1; 10/2 = 5");
        let out = ok(vec![rec(7, 0, 0, 1), rec(9, 0, 0, 1)]
            .into_iter()
            .speed_up(SpeedUp::ONE)
            .collect());
        assert_eq!(
            out.iter().map(|r| r.arrival.0).collect::<Vec<_>>(),
            vec![0, 2]
        );
    }

    #[test]
    fn speed_up_rejects_time_going_backwards() {
        let input = vec![
            rec(10, 0, 0, 1),
            rec(20, 0, 0, 1),
            rec(15, 0, 0, 1),
            rec(30, 0, 0, 1),
        ];
        let out: Vec<_> = input.into_iter().speed_up(SpeedUp::ONE).collect();
        assert!(out[1].is_ok());
        let e = out[2].as_ref().expect_err("15 < 20");
        assert_eq!(e.line, 0);
        assert!(
            e.to_string()
                .starts_with("record 3: arrival 15 ns is earlier than the previous record's 20 ns"),
            "{e}"
        );
        assert_eq!(out[3].as_ref().expect("carries on").arrival, Nanos(20));
    }

    #[test]
    fn window_is_relative_to_the_first_record_and_half_open() {
        let input = vec![
            rec(100, 0, 0, 1),
            rec(105, 0, 1, 1),
            rec(110, 0, 2, 1),
            rec(99, 0, 3, 1),
            rec(115, 0, 4, 1),
        ];
        let out = ok(input.into_iter().window(5, 15).collect());
        assert_eq!(
            out.iter().map(|r| r.lba).collect::<Vec<_>>(),
            vec![1, 2],
            "[5, 15) ns after t=100"
        );
    }

    #[test]
    fn a_sorted_window_stops_reading_at_its_end() {
        let bad = || {
            TraceError::unlined(TraceErrorKind::OutOfOrder {
                record: 9,
                prev_ns: 0,
                got_ns: 0,
            })
        };
        let input = || {
            vec![
                rec(100, 0, 0, 1),
                rec(105, 0, 1, 1),
                rec(115, 0, 2, 1),
                Err(bad()),
            ]
        };
        let out: Vec<_> = input().into_iter().window_sorted(5, 15).collect();
        assert_eq!(
            out.len(),
            1,
            "the error past the window's end is never read"
        );
        assert_eq!(out[0].as_ref().expect("in the window").lba, 1);
        let all: Vec<_> = input().into_iter().window(5, 15).collect();
        assert!(all.last().expect("two").is_err(), "window reads to the end");
    }

    #[test]
    fn device_filter_keeps_listed_devices() {
        let input = vec![
            rec(0, 1, 0, 1),
            rec(1, 2, 0, 1),
            rec(2, 3, 0, 1),
            rec(3, 1, 5, 1),
        ];
        let out = ok(input
            .into_iter()
            .devices(DeviceSet::new([3, 1, 1]))
            .collect());
        assert_eq!(
            out.iter().map(|r| (r.device, r.lba)).collect::<Vec<_>>(),
            vec![(1, 0), (3, 0), (1, 5)]
        );
    }

    #[test]
    fn concat_places_devices_in_number_order() {
        let input = || {
            vec![
                rec(0, 7, 90, 10),
                rec(1, 2, 0, 8),
                rec(2, 7, 0, 1),
                rec(3, 2, 40, 10),
            ]
        };
        let ext = device_extents(input()).expect("no errors");
        assert_eq!(ext.iter().collect::<Vec<_>>(), vec![(2, 50), (7, 100)]);
        let layout = ext.concat_layout();
        assert_eq!(layout.total_sectors(), 150);
        assert_eq!(layout.base(7), Some(50));
        let out = ok(input().into_iter().concat(layout.clone()).collect());
        assert_eq!(
            out.iter().map(|r| (r.device, r.lba)).collect::<Vec<_>>(),
            vec![(0, 140), (0, 0), (0, 50), (0, 40)]
        );
        let bad: Vec<_> = vec![rec(0, 3, 0, 1), rec(0, 2, 45, 10)]
            .into_iter()
            .concat(layout)
            .collect();
        assert!(bad[0]
            .as_ref()
            .expect_err("device 3 unknown")
            .to_string()
            .contains("device 3 is not in"));
        assert!(bad[1]
            .as_ref()
            .expect_err("beyond")
            .to_string()
            .contains("beyond its extent of 50"));
    }
}
