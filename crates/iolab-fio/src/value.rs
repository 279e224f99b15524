//! fio's value syntax: sizes with units (`4k`, `1MiB`, `0x1000`, `50%`),
//! times with suffixes (`10`, `500ms`, `2m`), booleans, integers, and
//! wherever a number goes, an expression in parentheses (`(2*2048)`,
//! [`crate::expr`]).
//!
//! fio's default `kb_base=1024` makes `k`, `KB` and `KiB` all 1024; iolab
//! follows that default (a job that sets `kb_base=1000` is refused).

/// A size, or a share of the file (`N%`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Size {
    /// Bytes.
    Bytes(u64),
    /// Percent of the file (0 <= p <= 100).
    Percent(f64),
}

/// Parses a size in fio's syntax.
pub fn size(s: &str) -> Result<Size, String> {
    let t = s.trim();
    if t.starts_with('(') {
        return bytes(t).map(Size::Bytes);
    }
    if let Some(p) = t.strip_suffix('%') {
        let v: f64 = p
            .trim()
            .parse()
            .map_err(|_| format!("'{s}': a percentage is a number followed by % (e.g. 50%)"))?;
        if !(0.0..=100.0).contains(&v) {
            return Err(format!("'{s}': a percentage must be in [0, 100]"));
        }
        return Ok(Size::Percent(v));
    }
    bytes(t).map(Size::Bytes)
}

/// Parses a byte count: fio's units, or an expression in parentheses.
pub fn bytes(s: &str) -> Result<u64, String> {
    let t = s.trim();
    if t.starts_with('(') {
        let v = crate::expr::eval(t, crate::expr::Units::Bytes)?;
        return u64::try_from(v).map_err(|_| format!("'{s}' is {v}: not a size (0 or more bytes)"));
    }
    iolab_bench::units::bytes(t)
}

/// Parses a time; a bare number is in `unit_ns` (seconds for most of fio's
/// time options, microseconds for `thinktime`).
pub fn time_ns(s: &str, unit_ns: u64) -> Result<u64, String> {
    let t = s.trim().to_ascii_lowercase();
    if t.starts_with('(') {
        // In an expression a bare number is in microseconds, whatever the option.
        let us = crate::expr::eval(&t, crate::expr::Units::Time)?;
        return u64::try_from(us)
            .ok()
            .and_then(|u| u.checked_mul(1_000))
            .ok_or_else(|| format!("'{s}' is {us} us: not a time"));
    }
    let bad = || format!("'{s}': not a time (write e.g. 30, 30s, 500ms, 2m, 1h)");
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let v: u64 = num.parse().map_err(|_| bad())?;
    let mult = match unit {
        "" => unit_ns,
        "ns" | "nsec" => 1,
        "us" | "usec" => 1_000,
        "ms" | "msec" => 1_000_000,
        "s" | "sec" => 1_000_000_000,
        "m" | "min" => 60_000_000_000,
        "h" | "hour" => 3_600_000_000_000,
        "d" | "day" => 86_400_000_000_000,
        _ => return Err(bad()),
    };
    v.checked_mul(mult).ok_or_else(bad)
}

/// Parses a boolean (`1`/`0`, `true`/`false`, `yes`/`no`, `on`/`off`); a
/// bare option is true.
pub fn boolean(s: Option<&str>) -> Result<bool, String> {
    match s.map(|v| v.trim().to_ascii_lowercase()).as_deref() {
        None | Some("1") | Some("true") | Some("yes") | Some("on") => Ok(true),
        Some("0") | Some("false") | Some("no") | Some("off") => Ok(false),
        Some(v) => Err(format!("'{v}': not a boolean (write 1 or 0)")),
    }
}

/// Parses a plain unsigned integer.
pub fn int(s: &str) -> Result<u64, String> {
    let t = s.trim();
    if t.starts_with('(') {
        return bytes(t);
    }
    t.parse()
        .or_else(|_| bytes(t))
        .map_err(|_| format!("'{s}': not a whole number"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_follow_fio_units() {
        assert_eq!(bytes("4096"), Ok(4096));
        assert_eq!(bytes("4k"), Ok(4096));
        assert_eq!(bytes("4K"), Ok(4096));
        assert_eq!(bytes("4KiB"), Ok(4096));
        assert_eq!(bytes("4kb"), Ok(4096));
        assert_eq!(bytes("1m"), Ok(1 << 20));
        assert_eq!(bytes("2g"), Ok(2 << 30));
        assert_eq!(bytes("1.5m"), Ok(3 << 19));
        assert_eq!(bytes("0x1000"), Ok(4096));
        assert!(bytes("4q").is_err());
        assert!(bytes("").is_err());
        assert!(bytes("99999999999999999999p").is_err());
        assert_eq!(size("50%"), Ok(Size::Percent(50.0)));
        assert_eq!(size("0%"), Ok(Size::Percent(0.0)));
        assert_eq!(size("(2*2048)"), Ok(Size::Bytes(4096)));
        assert_eq!(bytes("(1m/2)"), Ok(512 << 10));
        assert!(bytes("(1-2)").is_err());
        assert!(size("150%").is_err());
    }

    #[test]
    fn times_take_suffixes_and_a_default_unit() {
        let s = 1_000_000_000;
        assert_eq!(time_ns("30", s), Ok(30 * s));
        assert_eq!(time_ns("30s", s), Ok(30 * s));
        assert_eq!(time_ns("500ms", s), Ok(s / 2));
        assert_eq!(time_ns("2m", s), Ok(120 * s));
        assert_eq!(time_ns("1h", s), Ok(3600 * s));
        assert_eq!(time_ns("100", 1000), Ok(100_000));
        assert_eq!(time_ns("10us", s), Ok(10_000));
        assert!(time_ns("ten", s).is_err());
        assert!(time_ns("5y", s).is_err());
        // Expressions count in microseconds.
        assert_eq!(time_ns("(1000*2)", s), Ok(2_000_000));
        assert_eq!(time_ns("(1s+1ms)", 1000), Ok(1_001_000_000));
    }

    #[test]
    fn booleans_and_integers() {
        assert_eq!(boolean(None), Ok(true));
        assert_eq!(boolean(Some("0")), Ok(false));
        assert_eq!(boolean(Some("true")), Ok(true));
        assert!(boolean(Some("maybe")).is_err());
        assert_eq!(int("32"), Ok(32));
        assert_eq!(int("(4*8)"), Ok(32));
        assert!(int("-1").is_err());
    }
}
