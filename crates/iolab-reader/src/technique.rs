//! The reading techniques a [`Reader`](super::Reader) can use, and their
//! names on the command line: `stream`, `buffered[:4m]`, `mapped`,
//! `direct`, `uring[:32]`, `thesis`, `auto`.

use std::fmt;
use std::str::FromStr;

/// How a [`Reader`](super::Reader) moves bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Technique {
    /// One `pread` per request straight into the caller's buffer: the page
    /// cache and the kernel's read-ahead, nothing of our own.
    Stream,
    /// A block cache of our own: reads are served from `block`-sized,
    /// block-aligned buffers, read whole on a miss, with read-ahead of the
    /// next block when the reads run sequentially (stdio's idea, sharded so
    /// threads do not share one lock).
    Buffered {
        /// Block size in bytes (a power of two, 4 KiB..=64 MiB).
        block: usize,
    },
    /// A shared read-only mapping of the file; reads are copies from it,
    /// guarded so a file truncated underneath returns short instead of
    /// raising SIGBUS.
    Mapped,
    /// `O_DIRECT` reads of the aligned range covering the request through a
    /// bounce buffer (huge-page backed when large): no page cache.
    Direct,
    /// io_uring, one ring per thread, a large request split into 1 MiB
    /// pieces with up to `depth` in flight (through the page cache).
    Uring {
        /// Ring depth (1..=4096).
        depth: u32,
    },
    /// The thesis's `AdaptiveReader` (study 000, sections 4.7 and 5.1):
    /// memory-mapped reads when all four of its conditions hold, otherwise
    /// its `BufferReader4MB`.
    ThesisRules,
    #[default]
    /// Decides per request from the request, what this file has seen, its
    /// cache residency and this machine's profile (`iolab tune`).
    Auto,
}

impl Technique {
    /// Every fixed technique with its default parameters (not `Auto`).
    pub fn fixed() -> Vec<Technique> {
        vec![
            Technique::Stream,
            Technique::Buffered { block: 4 << 20 },
            Technique::Mapped,
            Technique::Direct,
            Technique::Uring { depth: 32 },
            Technique::ThesisRules,
        ]
    }
}

fn fmt_size(n: usize) -> String {
    for (s, sh) in [("g", 30), ("m", 20), ("k", 10)] {
        if n >= 1 << sh && n.is_multiple_of(1 << sh) {
            return format!("{}{s}", n >> sh);
        }
    }
    n.to_string()
}

fn parse_size(s: &str) -> Option<usize> {
    let s = s.trim().to_ascii_lowercase();
    let s = s
        .strip_suffix("ib")
        .or_else(|| s.strip_suffix('b'))
        .unwrap_or(&s);
    let (num, sh) = match s.chars().last()? {
        'k' => (&s[..s.len() - 1], 10),
        'm' => (&s[..s.len() - 1], 20),
        'g' => (&s[..s.len() - 1], 30),
        _ => (s, 0),
    };
    num.parse::<usize>().ok()?.checked_mul(1 << sh)
}

impl fmt::Display for Technique {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Technique::Stream => write!(f, "stream"),
            Technique::Buffered { block } => write!(f, "buffered:{}", fmt_size(*block)),
            Technique::Mapped => write!(f, "mapped"),
            Technique::Direct => write!(f, "direct"),
            Technique::Uring { depth } => write!(f, "uring:{depth}"),
            Technique::ThesisRules => write!(f, "thesis"),
            Technique::Auto => write!(f, "auto"),
        }
    }
}

/// Why a technique name was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown technique {0:?}: expected stream, buffered[:BLOCK] (4k..64m, a power of two), mapped, direct, uring[:DEPTH] (1..4096), thesis or auto")]
pub struct ParseTechniqueError(pub String);

impl FromStr for Technique {
    type Err = ParseTechniqueError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || ParseTechniqueError(s.to_string());
        let (name, arg) = match s.split_once(':') {
            Some((n, a)) => (n, Some(a)),
            None => (s, None),
        };
        let t = match (name.trim().to_ascii_lowercase().as_str(), arg) {
            ("stream", None) => Technique::Stream,
            ("mapped" | "mmap", None) => Technique::Mapped,
            ("direct", None) => Technique::Direct,
            ("thesis" | "thesisrules", None) => Technique::ThesisRules,
            ("auto", None) => Technique::Auto,
            ("buffered", a) => {
                let block = match a {
                    None => 4 << 20,
                    Some(a) => parse_size(a).ok_or_else(bad)?,
                };
                if !block.is_power_of_two() || !(4096..=64 << 20).contains(&block) {
                    return Err(bad());
                }
                Technique::Buffered { block }
            }
            ("uring", a) => {
                let depth = match a {
                    None => 32,
                    Some(a) => a.trim().parse::<u32>().map_err(|_| bad())?,
                };
                if !(1..=4096).contains(&depth) {
                    return Err(bad());
                }
                Technique::Uring { depth }
            }
            _ => return Err(bad()),
        };
        Ok(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for t in Technique::fixed().into_iter().chain([
            Technique::Auto,
            Technique::Buffered { block: 64 << 10 },
            Technique::Uring { depth: 1 },
        ]) {
            assert_eq!(t.to_string().parse::<Technique>().unwrap(), t);
        }
        assert_eq!(
            "buffered".parse(),
            Ok(Technique::Buffered { block: 4 << 20 })
        );
        assert_eq!(
            "buffered:64KiB".parse(),
            Ok(Technique::Buffered { block: 64 << 10 })
        );
        assert_eq!("uring".parse(), Ok(Technique::Uring { depth: 32 }));
    }

    #[test]
    fn bad_names_are_refused_with_the_choices() {
        for s in [
            "",
            "fast",
            "buffered:3k",
            "buffered:0",
            "uring:0",
            "uring:x",
            "mapped:4",
            "buffered:1g",
        ] {
            let e = s.parse::<Technique>().unwrap_err();
            assert!(e.to_string().contains("expected stream"), "{s}: {e}");
        }
    }
}
