//! Parsers for command-line values: sizes (`4k`, `1m`, `2g`: binary units)
//! and durations (`10s`, `500ms`, `2m`; a bare number is seconds).

use std::time::Duration;

/// Parses a size in binary units; errors say what a size looks like.
pub fn size(s: &str) -> Result<u64, String> {
    parse_size::Config::new()
        .with_binary()
        .parse_size(s.trim())
        .map_err(|_| format!("'{s}' is not a size (e.g. 4k, 128k, 1m, 2g)"))
}

/// Parses a duration; errors say what a duration looks like.
pub fn duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    if let Ok(secs) = t.parse::<f64>() {
        if secs.is_finite() && secs >= 0.0 {
            // Too long for a Duration (1e30 s) is an error, not a panic.
            return Duration::try_from_secs_f64(secs)
                .map_err(|_| format!("'{s}' is too long a duration (e.g. 10s, 500ms, 2m)"));
        }
    }
    humantime::parse_duration(t)
        .map_err(|_| format!("'{s}' is not a duration (e.g. 10s, 500ms, 2m)"))
}

/// Parses a positive count that may use k/m suffixes (`1000`, `10k`).
pub fn count(s: &str) -> Result<u64, String> {
    parse_size::Config::new()
        .with_decimal()
        .parse_size(s.trim())
        .map_err(|_| format!("'{s}' is not a count (e.g. 1000, 10k)"))
}

/// Parses `--serve [ADDR:]PORT`: a bare port listens on 127.0.0.1 only
/// (this machine); an address such as `0.0.0.0:PORT` exposes it.
pub fn listen_addr(s: &str) -> Result<std::net::SocketAddr, String> {
    let t = s.trim();
    if let Ok(port) = t.parse::<u16>() {
        return Ok(std::net::SocketAddr::from(([127, 0, 0, 1], port)));
    }
    t.parse().map_err(|_| {
        format!("'{s}' is not [ADDR:]PORT (e.g. 7777 for this machine only, 0.0.0.0:7777 for all)")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_binary() {
        assert_eq!(size("4k"), Ok(4096));
        assert_eq!(size("1m"), Ok(1 << 20));
        assert_eq!(size("2g"), Ok(2 << 30));
        assert_eq!(size("512"), Ok(512));
        assert!(size("lots").unwrap_err().contains("not a size"));
    }

    #[test]
    fn listen_addresses_default_to_loopback() {
        assert_eq!(listen_addr("7777").unwrap().to_string(), "127.0.0.1:7777");
        assert_eq!(listen_addr("0.0.0.0:80").unwrap().to_string(), "0.0.0.0:80");
        assert_eq!(listen_addr("[::1]:9").unwrap().to_string(), "[::1]:9");
        assert!(listen_addr("70000").is_err());
        assert!(listen_addr("host").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(duration("3"), Ok(Duration::from_secs(3)));
        assert!(duration("ten")
            .unwrap_err()
            .contains("'ten' is not a duration"));
    }
}
