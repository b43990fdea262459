//! Byte-level field splitting and number parsing shared by the trace readers.
//!
//! Everything here works on `&[u8]` slices of one line (no UTF-8 validation, no allocation on
//! the success path). Numbers are parsed exactly: decimal times become integer nanoseconds
//! without going through `f64`, so `13.191135` ms is exactly 13,191,135 ns.

use super::{TraceErrorKind, TraceRecord};
use crate::{Nanos, Op};

/// The longest line a reader accepts, in bytes (a guard against binary input without newlines).
pub const LINE_MAX_BYTES: usize = 64 * 1024;

/// Splits a line on runs of ASCII whitespace (space, tab, CR, LF, FF, VT).
#[derive(Clone)]
pub(crate) struct Fields<'a> {
    rest: &'a [u8],
}

impl<'a> Fields<'a> {
    pub(crate) fn new(line: &'a [u8]) -> Self {
        Fields { rest: line }
    }
}

#[inline]
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n' | b'\x0b' | b'\x0c')
}

impl<'a> Iterator for Fields<'a> {
    type Item = &'a [u8];

    #[inline]
    fn next(&mut self) -> Option<&'a [u8]> {
        let start = self.rest.iter().position(|&b| !is_space(b))?;
        let rest = &self.rest[start..];
        let end = rest.iter().position(|&b| is_space(b)).unwrap_or(rest.len());
        self.rest = &rest[end..];
        Some(&rest[..end])
    }
}

/// Splits a line on commas; each field is trimmed of surrounding ASCII whitespace.
#[derive(Clone)]
pub(crate) struct CsvFields<'a> {
    rest: Option<&'a [u8]>,
}

impl<'a> CsvFields<'a> {
    pub(crate) fn new(line: &'a [u8]) -> Self {
        CsvFields { rest: Some(line) }
    }
}

impl<'a> Iterator for CsvFields<'a> {
    type Item = &'a [u8];

    #[inline]
    fn next(&mut self) -> Option<&'a [u8]> {
        let rest = self.rest?;
        match rest.iter().position(|&b| b == b',') {
            Some(i) => {
                self.rest = Some(&rest[i + 1..]);
                Some(trim(&rest[..i]))
            }
            None => {
                self.rest = None;
                Some(trim(rest))
            }
        }
    }
}

/// `s` without leading and trailing ASCII whitespace.
pub(crate) fn trim(s: &[u8]) -> &[u8] {
    let start = s.iter().position(|&b| !is_space(b)).unwrap_or(s.len());
    let end = s
        .iter()
        .rposition(|&b| !is_space(b))
        .map_or(start, |i| i + 1);
    &s[start..end]
}

/// True for lines a reader skips in every format: blank, or a `#` comment.
pub(crate) fn is_blank_or_comment(line: &[u8]) -> bool {
    match line.iter().find(|&&b| !is_space(b)) {
        None => true,
        Some(&b) => b == b'#',
    }
}

/// What was wrong with a number, before it is tied to a field name.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum NumError {
    /// Not a number of the expected shape (includes empty fields and minus signs).
    Syntax,
    /// A number, but too large for the target type.
    Overflow,
}

/// Parses an unsigned decimal integer (ASCII digits only, optional leading `+`).
#[inline]
pub(crate) fn parse_u64(s: &[u8]) -> Result<u64, NumError> {
    let s = s.strip_prefix(b"+").unwrap_or(s);
    if s.is_empty() {
        return Err(NumError::Syntax);
    }
    let mut v: u64 = 0;
    let mut overflow = false;
    for &b in s {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return Err(NumError::Syntax);
        }
        match v.checked_mul(10).and_then(|x| x.checked_add(u64::from(d))) {
            Some(x) => v = x,
            None => overflow = true,
        }
    }
    if overflow {
        Err(NumError::Overflow)
    } else {
        Ok(v)
    }
}

/// Parses an unsigned decimal integer that must fit a `u32`.
#[inline]
pub(crate) fn parse_u32(s: &[u8]) -> Result<u32, NumError> {
    let v = parse_u64(s)?;
    u32::try_from(v).map_err(|_| NumError::Overflow)
}

/// Parses a hexadecimal integer with an optional `0x`/`0X` prefix.
pub(crate) fn parse_hex_u64(s: &[u8]) -> Result<u64, NumError> {
    let s = s
        .strip_prefix(b"0x")
        .or_else(|| s.strip_prefix(b"0X"))
        .unwrap_or(s);
    if s.is_empty() {
        return Err(NumError::Syntax);
    }
    let mut v: u64 = 0;
    let mut overflow = false;
    for &b in s {
        let d = match b {
            b'0'..=b'9' => b - b'0',
            b'a'..=b'f' => b - b'a' + 10,
            b'A'..=b'F' => b - b'A' + 10,
            _ => return Err(NumError::Syntax),
        };
        match v.checked_mul(16).and_then(|x| x.checked_add(u64::from(d))) {
            Some(x) => v = x,
            None => overflow = true,
        }
    }
    if overflow {
        Err(NumError::Overflow)
    } else {
        Ok(v)
    }
}

const POW10_U128: [u128; 39] = {
    let mut t = [1u128; 39];
    let mut i = 1;
    while i < 39 {
        t[i] = t[i - 1] * 10;
        i += 1;
    }
    t
};

/// Parses a non-negative decimal number (`12`, `12.5`, `.5`, `1.5e3`) and returns it multiplied
/// by `10^scale_exp`, rounded to the nearest integer (halves round up).
///
/// With `scale_exp = 6` a value in milliseconds becomes nanoseconds; with 9, seconds do. The
/// conversion is exact integer arithmetic: no `f64` is involved.
pub(crate) fn parse_decimal_scaled(s: &[u8], scale_exp: u32) -> Result<u64, NumError> {
    assert!(
        scale_exp <= 18,
        "scale exponent {scale_exp} is larger than any time unit"
    );
    match short_decimal_scaled(s, scale_exp) {
        Some(v) => Ok(v),
        None => general_decimal_scaled(s, scale_exp),
    }
}

/// [`parse_decimal_scaled`] for any input, in 128-bit arithmetic.
fn general_decimal_scaled(s: &[u8], scale_exp: u32) -> Result<u64, NumError> {
    // Digits beyond this many significant ones are dropped when they are fraction digits
    // (they lie far below a nanosecond for any value that fits) and overflow otherwise.
    const SIGNIFICANT_MAX: u32 = 36;
    let s = s.strip_prefix(b"+").unwrap_or(s);
    let mut mantissa: u128 = 0;
    let mut significant = 0u32;
    let mut frac_digits = 0i64;
    let mut seen_digit = false;
    let mut seen_dot = false;
    let mut i = 0;
    while i < s.len() {
        match s[i] {
            b @ b'0'..=b'9' => {
                seen_digit = true;
                if significant < SIGNIFICANT_MAX {
                    mantissa = mantissa * 10 + u128::from(b - b'0');
                    if mantissa != 0 {
                        significant += 1;
                    }
                    if seen_dot {
                        frac_digits += 1;
                    }
                } else if !seen_dot {
                    return Err(NumError::Overflow);
                }
            }
            b'.' if !seen_dot => seen_dot = true,
            b'e' | b'E' => break,
            _ => return Err(NumError::Syntax),
        }
        i += 1;
    }
    if !seen_digit {
        return Err(NumError::Syntax);
    }
    let mut exp10: i64 = 0;
    if i < s.len() {
        let e = &s[i + 1..];
        let (negative, e) = match e.first() {
            Some(b'-') => (true, &e[1..]),
            Some(b'+') => (false, &e[1..]),
            _ => (false, e),
        };
        let v = parse_u64(e)?;
        if v > 1000 {
            return if negative {
                Ok(0)
            } else {
                Err(NumError::Overflow)
            };
        }
        let v = i64::try_from(v).expect("exponent <= 1000");
        exp10 = if negative { -v } else { v };
    }
    let shift = i64::from(scale_exp) + exp10 - frac_digits;
    let value: u128 = if mantissa == 0 {
        0
    } else if shift >= 0 {
        let shift = usize::try_from(shift).expect("shift >= 0");
        if shift >= POW10_U128.len() {
            return Err(NumError::Overflow);
        }
        mantissa
            .checked_mul(POW10_U128[shift])
            .ok_or(NumError::Overflow)?
    } else {
        let down = usize::try_from(-shift).expect("-shift > 0");
        if down >= POW10_U128.len() {
            0
        } else {
            let p = POW10_U128[down];
            let (q, r) = (mantissa / p, mantissa % p);
            // Round half up to the nearest unit.
            if r >= p - r {
                q + 1
            } else {
                q
            }
        }
    };
    u64::try_from(value).map_err(|_| NumError::Overflow)
}

/// [`parse_decimal_scaled`]'s common case in 64-bit arithmetic: plain `digits[.digits]`
/// with at most 18 digits, whose value times `10^scale_exp` fits. `None` for anything else
/// (the general parser decides it, with the same value where this one has one).
#[inline]
fn short_decimal_scaled(s: &[u8], scale_exp: u32) -> Option<u64> {
    if s.is_empty() || s.len() > 19 {
        return None;
    }
    let (mut m, mut digits, mut frac, mut dot) = (0u64, 0u32, 0u32, false);
    for &b in s {
        match b {
            b'0'..=b'9' => {
                m = m * 10 + u64::from(b - b'0');
                digits += 1;
                frac += u32::from(dot);
            }
            b'.' if !dot => dot = true,
            _ => return None,
        }
    }
    if digits == 0 || digits > 18 {
        return None;
    }
    if scale_exp >= frac {
        m.checked_mul(10u64.pow(scale_exp - frac))
    } else {
        let p = 10u64.pow(frac - scale_exp);
        let (q, r) = (m / p, m % p);
        // Round half up, as the general parser does.
        Some(if r >= p - r { q + 1 } else { q })
    }
}

/// `got` text for an error message: lossy UTF-8, at most 40 characters.
pub(crate) fn excerpt(s: &[u8]) -> String {
    const MAX_CHARS: usize = 40;
    let text = String::from_utf8_lossy(s);
    if text.chars().count() <= MAX_CHARS {
        text.into_owned()
    } else {
        let mut t: String = text.chars().take(MAX_CHARS).collect();
        t.push('…');
        t
    }
}

/// A field of a trace line: its 1-based position and its name, for error messages.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Field {
    pub index: usize,
    pub name: &'static str,
}

impl Field {
    pub(crate) const fn new(index: usize, name: &'static str) -> Self {
        Field { index, name }
    }

    pub(crate) fn bad(self, expected: &'static str, got: &[u8]) -> TraceErrorKind {
        TraceErrorKind::BadField {
            index: self.index,
            name: self.name,
            expected,
            got: excerpt(got),
        }
    }

    fn num_err(self, e: NumError, expected: &'static str, got: &[u8]) -> TraceErrorKind {
        match e {
            NumError::Syntax => self.bad(expected, got),
            NumError::Overflow => TraceErrorKind::OutOfRange {
                index: self.index,
                name: self.name,
                got: excerpt(got),
            },
        }
    }

    #[inline]
    pub(crate) fn u64(self, s: &[u8]) -> Result<u64, TraceErrorKind> {
        parse_u64(s).map_err(|e| self.num_err(e, "a non-negative integer", s))
    }

    #[inline]
    pub(crate) fn u32(self, s: &[u8]) -> Result<u32, TraceErrorKind> {
        parse_u32(s).map_err(|e| self.num_err(e, "a non-negative integer", s))
    }

    #[inline]
    pub(crate) fn hex(self, s: &[u8]) -> Result<u64, TraceErrorKind> {
        parse_hex_u64(s).map_err(|e| self.num_err(e, "a hex number", s))
    }

    /// A non-negative decimal time in a unit of `10^scale_exp` ns, as nanoseconds.
    #[inline]
    pub(crate) fn time(self, s: &[u8], scale_exp: u32) -> Result<u64, TraceErrorKind> {
        parse_decimal_scaled(s, scale_exp)
            .map_err(|e| self.num_err(e, "a non-negative decimal number", s))
    }
}

/// Takes the next field or reports how many the line had.
#[inline]
pub(crate) fn next_field<'a, I: Iterator<Item = &'a [u8]> + Clone>(
    it: &mut I,
    all: &I,
    expected: usize,
) -> Result<&'a [u8], TraceErrorKind> {
    it.next().ok_or_else(|| TraceErrorKind::MissingFields {
        expected,
        got: all.clone().count(),
    })
}

/// Builds a record from a sector address and a sector count, checking the request is non-empty,
/// fits a `u32` sector count, and does not run past the end of a 64-bit address space.
#[inline]
pub(crate) fn record_sectors(
    arrival_ns: u64,
    device: u32,
    lba: u64,
    sectors: u64,
    op: Op,
    size_field: Field,
) -> Result<TraceRecord, TraceErrorKind> {
    if sectors == 0 {
        return Err(TraceErrorKind::ZeroSize {
            index: size_field.index,
            name: size_field.name,
        });
    }
    let Ok(sectors32) = u32::try_from(sectors) else {
        return Err(TraceErrorKind::TooLarge { sectors });
    };
    if lba.checked_add(sectors).is_none() {
        return Err(TraceErrorKind::AddressOverflow { lba, sectors });
    }
    Ok(TraceRecord {
        arrival: Nanos(arrival_ns),
        device,
        lba,
        sectors: sectors32,
        op,
    })
}

/// Builds a record from a byte offset and a byte length: the start sector is rounded down and
/// the end sector up, so the record covers every byte of the request.
#[inline]
pub(crate) fn record_bytes(
    arrival_ns: u64,
    device: u32,
    offset_bytes: u64,
    len_bytes: u64,
    op: Op,
    size_field: Field,
) -> Result<TraceRecord, TraceErrorKind> {
    if len_bytes == 0 {
        return Err(TraceErrorKind::ZeroSize {
            index: size_field.index,
            name: size_field.name,
        });
    }
    let lba = offset_bytes / 512;
    let end = (u128::from(offset_bytes) + u128::from(len_bytes)).div_ceil(512);
    let sectors = end - u128::from(lba);
    let sectors = u64::try_from(sectors).unwrap_or(u64::MAX);
    record_sectors(arrival_ns, device, lba, sectors, op, size_field)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_short_decimal_path_agrees_with_the_general_one() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(5);
        let mut agreed = 0;
        for _ in 0..200_000 {
            let int: String = (0..rng.gen_range(0..12))
                .map(|_| char::from(b'0' + rng.gen_range(0..10u8)))
                .collect();
            let frac: String = (0..rng.gen_range(0..12))
                .map(|_| char::from(b'0' + rng.gen_range(0..10u8)))
                .collect();
            let text = match rng.gen_range(0..3) {
                0 => int,
                _ => format!("{int}.{frac}"),
            };
            let scale = rng.gen_range(0..=18);
            if let Some(v) = short_decimal_scaled(text.as_bytes(), scale) {
                assert_eq!(
                    general_decimal_scaled(text.as_bytes(), scale),
                    Ok(v),
                    "{text} e{scale}"
                );
                agreed += 1;
            }
        }
        assert!(agreed > 100_000, "the short path took only {agreed} inputs");
    }

    use super::*;

    #[test]
    fn fields_split_on_any_whitespace_run() {
        let v: Vec<&[u8]> = Fields::new(b"  13.19\t30 \t0  5\t1\r").collect();
        assert_eq!(v, vec![&b"13.19"[..], b"30", b"0", b"5", b"1"]);
        assert_eq!(Fields::new(b"   ").count(), 0);
    }

    #[test]
    fn csv_fields_keep_empty_fields_and_trim() {
        let v: Vec<&[u8]> = CsvFields::new(b"1, 2,,w ,0.5").collect();
        assert_eq!(v, vec![&b"1"[..], b"2", b"", b"w", b"0.5"]);
        assert_eq!(CsvFields::new(b"").count(), 1);
    }

    #[test]
    fn integers_reject_signs_and_garbage_and_report_overflow() {
        assert_eq!(parse_u64(b"0"), Ok(0));
        assert_eq!(parse_u64(b"+7"), Ok(7));
        assert_eq!(parse_u64(b"18446744073709551615"), Ok(u64::MAX));
        assert_eq!(parse_u64(b"18446744073709551616"), Err(NumError::Overflow));
        assert_eq!(parse_u64(b"-1"), Err(NumError::Syntax));
        assert_eq!(parse_u64(b""), Err(NumError::Syntax));
        assert_eq!(parse_u64(b"1x"), Err(NumError::Syntax));
        assert_eq!(parse_u32(b"4294967296"), Err(NumError::Overflow));
        assert_eq!(parse_hex_u64(b"0x1F"), Ok(31));
        assert_eq!(parse_hex_u64(b"a"), Ok(10));
        assert_eq!(parse_hex_u64(b"zz"), Err(NumError::Syntax));
        assert_eq!(parse_hex_u64(b"0x"), Err(NumError::Syntax));
    }

    #[test]
    fn decimals_convert_exactly_to_integer_units() {
        assert_eq!(parse_decimal_scaled(b"13.191135", 6), Ok(13_191_135));
        assert_eq!(
            parse_decimal_scaled(b"1532949.045363", 6),
            Ok(1_532_949_045_363)
        );
        assert_eq!(parse_decimal_scaled(b"0.200104326", 9), Ok(200_104_326));
        assert_eq!(parse_decimal_scaled(b"7", 6), Ok(7_000_000));
        assert_eq!(parse_decimal_scaled(b".5", 6), Ok(500_000));
        assert_eq!(parse_decimal_scaled(b"5.", 6), Ok(5_000_000));
        assert_eq!(parse_decimal_scaled(b"1.5e3", 6), Ok(1_500_000_000));
        assert_eq!(parse_decimal_scaled(b"15E-1", 6), Ok(1_500_000));
        // Sub-nanosecond digits round half up.
        assert_eq!(parse_decimal_scaled(b"0.0000004", 6), Ok(0));
        assert_eq!(parse_decimal_scaled(b"0.0000005", 6), Ok(1));
        assert_eq!(parse_decimal_scaled(b"0.0000015", 6), Ok(2));
        assert_eq!(parse_decimal_scaled(b"1e-1000000", 6), Ok(0));
        assert_eq!(parse_decimal_scaled(b"-1", 6), Err(NumError::Syntax));
        assert_eq!(parse_decimal_scaled(b"", 6), Err(NumError::Syntax));
        assert_eq!(parse_decimal_scaled(b".", 6), Err(NumError::Syntax));
        assert_eq!(parse_decimal_scaled(b"1.2.3", 6), Err(NumError::Syntax));
        assert_eq!(parse_decimal_scaled(b"nan", 6), Err(NumError::Syntax));
        assert_eq!(parse_decimal_scaled(b"inf", 6), Err(NumError::Syntax));
        assert_eq!(parse_decimal_scaled(b"1e", 6), Err(NumError::Syntax));
        assert_eq!(parse_decimal_scaled(b"1e99", 6), Err(NumError::Overflow));
        assert_eq!(
            parse_decimal_scaled(b"99999999999999999999", 6),
            Err(NumError::Overflow)
        );
        assert_eq!(
            parse_decimal_scaled(b"0.1234567890123456789012345678901234567890123", 9),
            Ok(123_456_789)
        );
    }

    #[test]
    fn byte_ranges_round_outwards_to_sectors() {
        let f = Field::new(6, "size");
        let r = record_bytes(0, 0, 1000, 100, Op::Read, f).expect("valid");
        assert_eq!(
            (r.lba, r.sectors),
            (1, 2),
            "bytes 1000..1100 straddle sectors 1 and 2"
        );
        let r = record_bytes(0, 0, 1000, 24, Op::Read, f).expect("valid");
        assert_eq!(
            (r.lba, r.sectors),
            (1, 1),
            "bytes 1000..1024 are all in sector 1"
        );
        let r = record_bytes(0, 0, 4096, 4096, Op::Write, f).expect("valid");
        assert_eq!((r.lba, r.sectors), (8, 8));
        assert!(matches!(
            record_bytes(0, 0, 0, 0, Op::Read, f),
            Err(TraceErrorKind::ZeroSize { index: 6, .. })
        ));
        // Byte offsets cannot overflow sector addresses: the last byte is in sector 2^55 - 1.
        let r = record_bytes(0, 0, u64::MAX, 512, Op::Read, f).expect("valid");
        assert_eq!((r.lba, r.sectors), (u64::MAX / 512, 2));
        assert!(matches!(
            record_sectors(0, 0, u64::MAX - 1, 2, Op::Read, f),
            Err(TraceErrorKind::AddressOverflow { .. })
        ));
        assert!(matches!(
            record_sectors(0, 0, 0, 1 << 32, Op::Read, f),
            Err(TraceErrorKind::TooLarge { .. })
        ));
    }

    #[test]
    fn excerpts_are_lossy_and_bounded() {
        assert_eq!(excerpt(b"zz"), "zz");
        assert_eq!(excerpt(b"\xff\xfe"), "\u{fffd}\u{fffd}");
        assert_eq!(excerpt(&[b'a'; 100]).chars().count(), 41);
    }
}
