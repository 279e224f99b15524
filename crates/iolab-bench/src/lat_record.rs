//! Which ops' latency a run records (`--lat`): every op, one op in N
//! chosen at random, or none (fio's `disable_lat`, t/io_uring's `-t`).
//!
//! Timing an op is cheap next to a device read, but not next to a cached
//! 4 KiB read at a million IOPS, nor a no-op: there the latency bookkeeping
//! is a visible share of the op. `sampled` keeps the percentiles (each op
//! is timed with the same probability, 1/N, so the sample is unbiased),
//! `off` keeps only counts, bytes and CPU.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// One op in this many is timed by `--lat sampled`: the rate of
/// t/io_uring's `-t1` at its default batch of 32 (it reads the clock once
/// per submitted batch). A one-second run at 1M IOPS still times 31,250
/// ops, so p99.9 rests on 31 of them.
pub const DEFAULT_SAMPLE_EVERY: u32 = 32;

/// Which ops' latency the runner records.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LatRecord {
    /// Every op (the default).
    #[default]
    All,
    /// One op in each run of this many issued ops, at a random place in
    /// the run: every op has the same chance 1/N, so percentiles stay
    /// unbiased; the summary's `count` is the ops timed.
    Sampled(u32),
    /// No op: the record has counts, bytes and CPU, and no latency.
    Off,
}

impl LatRecord {
    /// One op in N timed: 1 for `all`, N for `sampled`, None for `off`.
    pub fn every(self) -> Option<u32> {
        match self {
            LatRecord::All => Some(1),
            LatRecord::Sampled(n) => Some(n),
            LatRecord::Off => None,
        }
    }

    /// How a table says what latency covers, e.g. "1 in 32 ops timed".
    pub fn describe(self) -> String {
        match self {
            LatRecord::All => "every op timed".into(),
            LatRecord::Sampled(n) => format!("1 in {n} ops timed, at random"),
            LatRecord::Off => "not recorded (--lat off)".into(),
        }
    }
}

impl fmt::Display for LatRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LatRecord::All => f.write_str("all"),
            LatRecord::Sampled(n) => write!(f, "sampled:{n}"),
            LatRecord::Off => f.write_str("off"),
        }
    }
}

impl FromStr for LatRecord {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || {
            format!(
                "--lat {s}: one of all, sampled (1 op in {DEFAULT_SAMPLE_EVERY}), sampled:N (1 op in N, N >= 2), off"
            )
        };
        match s {
            "all" => Ok(LatRecord::All),
            "off" => Ok(LatRecord::Off),
            "sampled" => Ok(LatRecord::Sampled(DEFAULT_SAMPLE_EVERY)),
            _ => match s.strip_prefix("sampled:").map(str::parse::<u32>) {
                Some(Ok(n)) if n >= 2 => Ok(LatRecord::Sampled(n)),
                _ => Err(bad()),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_bad_ones_say_what_is_right() {
        for l in [LatRecord::All, LatRecord::Sampled(7), LatRecord::Off] {
            assert_eq!(l.to_string().parse::<LatRecord>(), Ok(l));
        }
        assert_eq!(
            "sampled".parse::<LatRecord>(),
            Ok(LatRecord::Sampled(DEFAULT_SAMPLE_EVERY))
        );
        for bad in ["some", "sampled:1", "sampled:x", ""] {
            let e = bad.parse::<LatRecord>().unwrap_err();
            assert!(e.contains("all, sampled") && e.contains("off"), "{e}");
        }
    }

    #[test]
    fn records_spell_the_choice() {
        let j = serde_json::to_string(&LatRecord::Sampled(32)).unwrap();
        assert_eq!(j, r#"{"sampled":32}"#);
        assert_eq!(serde_json::to_string(&LatRecord::Off).unwrap(), r#""off""#);
    }
}
