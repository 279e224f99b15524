//! Sizes as fio and its users write them (`4k`, `1m`, `0x1000`, `1.5g`):
//! read by fio job files and `--pattern stride:N`, written in the fio
//! commands iolab prints. Below both `fio` and `spec`, so neither has to
//! import the other.

/// Parses a byte count in fio's syntax (no percentages).
pub fn bytes(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let bad = || format!("'{s}': not a size (write e.g. 4096, 4k, 1m, 2g, 1MiB)");
    if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        return u64::from_str_radix(h, 16).map_err(|_| bad());
    }
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    if num.is_empty() {
        return Err(bad());
    }
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        "p" | "pb" | "pib" => 1 << 50,
        _ => return Err(bad()),
    };
    if num.contains('.') {
        let v: f64 = num.parse().map_err(|_| bad())?;
        let b = v * mult as f64;
        if !b.is_finite() || b < 0.0 || b > u64::MAX as f64 {
            return Err(bad());
        }
        return Ok(b.round() as u64);
    }
    let v: u64 = num.parse().map_err(|_| bad())?;
    v.checked_mul(mult).ok_or_else(bad)
}

/// A size the way fio users write it (`4k`, `1m`, `2g`, else bytes).
pub fn fio_size(b: u64) -> String {
    for (shift, unit) in [(40, "t"), (30, "g"), (20, "m"), (10, "k")] {
        if b >= 1 << shift && b.is_multiple_of(1 << shift) {
            return format!("{}{unit}", b >> shift);
        }
    }
    b.to_string()
}
