//! What memory the I/O buffers live in (`--mem`, fio's `mem=`/`iomem=`),
//! and what the kernel actually gave them.
//!
//! A large `O_DIRECT` request is split by the block layer into one segment
//! per physically contiguous run of its buffer: a buffer of scattered 4 KiB
//! pages is up to 256 segments per MiB, a buffer inside one 2 MiB huge page
//! is one. Devices that take few segments per request (virtio: 254) then
//! see the 1 MiB read as two or more requests, and throughput follows. So
//! the backing is chosen on purpose, and every record says which one the
//! buffers really got, read back from `/proc/self/smaps`.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Where buffer memory comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MemKind {
    /// The heap (`posix_memalign`-like): ordinary 4 KiB pages unless the
    /// system-wide THP setting is `always` (fio's `mem=malloc`).
    Malloc,
    /// An anonymous mapping aligned to 2 MiB and advised `MADV_HUGEPAGE`:
    /// transparent huge pages when the kernel can find them. The default,
    /// chosen by measurement (see the README's "Buffer memory" section).
    #[default]
    Thp,
    /// `MAP_HUGETLB`: reserved hugetlbfs pages (`/proc/sys/vm/nr_hugepages`);
    /// fails clearly when none are free (fio's `mem=shmhuge` is the same
    /// kind of page, through SysV shared memory).
    Hugetlb,
}

impl MemKind {
    /// Every kind, as help text lists them.
    pub const ALL: [MemKind; 3] = [MemKind::Malloc, MemKind::Thp, MemKind::Hugetlb];

    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            MemKind::Malloc => "malloc",
            MemKind::Thp => "thp",
            MemKind::Hugetlb => "hugetlb",
        }
    }
}

impl fmt::Display for MemKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for MemKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        MemKind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| format!("unknown buffer memory '{s}' (one of malloc, thp, hugetlb)"))
    }
}

/// What backing a buffer pool actually got.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Backing {
    /// What was asked for.
    pub mem: MemKind,
    /// Bytes of the pool's range.
    pub bytes: u64,
    /// Of those, bytes in huge pages (THP `AnonHugePages`, or hugetlb),
    /// read from `/proc/self/smaps`; `None` when smaps could not be read.
    pub huge_bytes: Option<u64>,
    /// Bytes each buffer slot starts past its alignment (0 for O_DIRECT;
    /// see `buf::BUFFERED_SLOT_OFFSET` for why buffered reads use 16).
    #[serde(default)]
    pub slot_offset: u32,
}

impl Backing {
    /// True when every byte of the pool is in huge pages.
    pub fn all_huge(&self) -> bool {
        self.huge_bytes == Some(self.bytes) && self.bytes > 0
    }

    /// The backing of two pools together (several workers).
    pub fn merge(&self, o: &Backing) -> Backing {
        Backing {
            mem: self.mem,
            bytes: self.bytes + o.bytes,
            huge_bytes: self.huge_bytes.zip(o.huge_bytes).map(|(a, b)| a + b),
            slot_offset: self.slot_offset,
        }
    }

    /// One phrase for tables: `thp: 2.0 MiB of 2.0 MiB in huge pages`.
    pub fn describe(&self) -> String {
        let at = match self.slot_offset {
            0 => String::new(),
            o => format!(", slots at +{o} B"),
        };
        let what = match self.huge_bytes {
            Some(h) => format!(
                "{}: {} of {} in huge pages",
                self.mem,
                size(h),
                size(self.bytes)
            ),
            None => format!("{}: backing unknown (no /proc/self/smaps)", self.mem),
        };
        what + &at
    }

    /// The backing of `len` bytes at `addr` of this process, from
    /// `/proc/self/smaps`. Heap memory cannot be in a huge page unless THP
    /// is `always`: then smaps is not read at all (it grows with every
    /// thread, and 1,024 workers each reading it took seconds).
    pub fn measure(mem: MemKind, addr: usize, len: usize) -> Self {
        let huge_bytes = if mem == MemKind::Malloc && !thp_always() {
            Some(0)
        } else {
            std::fs::read_to_string("/proc/self/smaps")
                .ok()
                .map(|t| huge_bytes_in(&t, addr as u64, (addr + len) as u64))
        };
        Backing {
            mem,
            bytes: len as u64,
            huge_bytes,
            slot_offset: 0,
        }
    }
}

/// Whether THP is `always` (so even heap memory may get huge pages), read
/// once from sysfs; an unreadable setting counts as `always` (measure).
fn thp_always() -> bool {
    static ALWAYS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ALWAYS.get_or_init(|| {
        std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
            .map_or(true, |t| t.contains("[always]"))
    })
}

fn size(b: u64) -> String {
    match b {
        b if b >= 1 << 30 => format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64),
        b if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64),
        b if b >= 1 << 10 => format!("{:.1} KiB", b as f64 / 1024.0),
        b => format!("{b} B"),
    }
}

/// Bytes of `start..end` in huge pages according to an smaps text: for each
/// mapping that overlaps the range, its `AnonHugePages` plus its
/// `Private_Hugetlb` and `Shared_Hugetlb`, capped at the overlap (smaps
/// counts per mapping, not per byte).
pub fn huge_bytes_in(smaps: &str, start: u64, end: u64) -> u64 {
    let mut total = 0u64;
    let mut overlap = 0u64;
    let mut huge = 0u64;
    let flush = |overlap: u64, huge: u64, total: &mut u64| {
        *total += huge.min(overlap);
    };
    for line in smaps.lines() {
        let first = line.split_whitespace().next().unwrap_or("");
        if let Some((a, b)) = first.split_once('-') {
            if let (Ok(a), Ok(b)) = (u64::from_str_radix(a, 16), u64::from_str_radix(b, 16)) {
                flush(overlap, huge, &mut total);
                overlap = b.min(end).saturating_sub(a.max(start));
                huge = 0;
                continue;
            }
        }
        if overlap == 0 {
            continue;
        }
        if let Some((key, rest)) = line.split_once(':') {
            if matches!(
                key.trim(),
                "AnonHugePages" | "Private_Hugetlb" | "Shared_Hugetlb"
            ) {
                let kb: u64 = rest
                    .split_whitespace()
                    .next()
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(0);
                huge += kb * 1024;
            }
        }
    }
    flush(overlap, huge, &mut total);
    total
}

/// The default hugetlb page size (`Hugepagesize` in `/proc/meminfo`), and
/// how many are free (`HugePages_Free`).
pub fn hugetlb_info() -> Option<(usize, u64)> {
    let t = std::fs::read_to_string("/proc/meminfo").ok()?;
    let field = |k: &str| -> Option<u64> {
        t.lines()
            .find(|l| l.starts_with(k))?
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()
    };
    Some((
        field("Hugepagesize:")? as usize * 1024,
        field("HugePages_Free:")?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXTURE: &str = "\
7f0000000000-7f0000400000 rw-p 00000000 00:00 0
Size:               4096 kB
KernelPageSize:        4 kB
AnonHugePages:      4096 kB
Private_Hugetlb:       0 kB
7f0000400000-7f0000600000 rw-p 00000000 00:00 0
Size:               2048 kB
AnonHugePages:         0 kB
7f0000600000-7f0000800000 rw-p 00000000 00:00 0 /anon_hugepage (deleted)
KernelPageSize:     2048 kB
AnonHugePages:         0 kB
Shared_Hugetlb:        0 kB
Private_Hugetlb:    2048 kB
";

    #[test]
    fn smaps_counts_only_the_range_and_caps_at_the_overlap() {
        let m = 1u64 << 20;
        let base = 0x7f00_0000_0000u64;
        // The whole first mapping: 4 MiB of THP.
        assert_eq!(huge_bytes_in(FIXTURE, base, base + 4 * m), 4 * m);
        // Half of it: capped at 2 MiB.
        assert_eq!(huge_bytes_in(FIXTURE, base, base + 2 * m), 2 * m);
        // The ordinary mapping only: none.
        assert_eq!(huge_bytes_in(FIXTURE, base + 4 * m, base + 6 * m), 0);
        // The hugetlb mapping.
        assert_eq!(huge_bytes_in(FIXTURE, base + 6 * m, base + 8 * m), 2 * m);
        // Across all three.
        assert_eq!(huge_bytes_in(FIXTURE, base, base + 8 * m), 6 * m);
    }

    #[test]
    fn names_parse_and_bad_names_say_what_is_right() {
        for k in MemKind::ALL {
            assert_eq!(k.name().parse::<MemKind>(), Ok(k));
        }
        let e = "huge".parse::<MemKind>().unwrap_err();
        assert!(e.contains("malloc, thp, hugetlb"), "{e}");
    }
}
