//! Where each rank's bytes lie: a file per rank, or one shared file laid out
//! as IOR lays it out (segmented: each rank a contiguous region per segment;
//! strided: transfers interleaved rank by rank).

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// How ranks share files (`--layout`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Layout {
    /// Each rank its own file (`--file 'data.{rank}'`, IOR's `-F`).
    #[default]
    PerRank,
    /// One shared file of `segments` segments, each holding every rank's
    /// region of `--region` bytes in rank order (IOR's default shared-file
    /// layout, `-b` region, `-s` segments).
    Segmented,
    /// One shared file whose transfers are interleaved: transfer `i` of rank
    /// `r` lies at `(i × ranks + r) × bs`.
    Strided,
}

impl Layout {
    /// The name the command line uses.
    pub fn name(self) -> &'static str {
        match self {
            Layout::PerRank => "per-rank",
            Layout::Segmented => "segmented",
            Layout::Strided => "strided",
        }
    }

    /// Whether every rank uses the same file.
    pub fn shared(self) -> bool {
        self != Layout::PerRank
    }
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Layout {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "per-rank" | "file-per-process" | "fpp" => Ok(Layout::PerRank),
            "segmented" => Ok(Layout::Segmented),
            "strided" => Ok(Layout::Strided),
            _ => Err(format!(
                "unknown layout '{s}' (one of per-rank, segmented, strided)"
            )),
        }
    }
}

/// One rank's place in a multi-rank run: which rank, how many, and how the
/// ranks share the data. Carried in the workload spec, so every record says
/// which part of the data its rank touched.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RankPlace {
    /// This rank, 0-based.
    pub rank: u32,
    /// Ranks in the run.
    pub ranks: u32,
    /// How the ranks share files.
    pub layout: Layout,
    /// Bytes of one rank's region in one segment (IOR's `-b`).
    pub region: u64,
    /// Segments (IOR's `-s`).
    pub segments: u64,
    /// Transfer size (`--bs`): the unit strided layouts interleave.
    pub bs: u64,
    /// Ops this rank already did before this run (`--wearout`'s second
    /// phase): its offsets go on from there instead of starting over.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub resume_ops: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl RankPlace {
    /// Bytes this rank reads or writes in one pass.
    pub fn rank_bytes(&self) -> u64 {
        self.region * self.segments
    }

    /// Size of each file: the rank's own file, or the whole shared file.
    pub fn file_bytes(&self) -> u64 {
        if self.layout.shared() {
            self.rank_bytes() * u64::from(self.ranks)
        } else {
            self.rank_bytes()
        }
    }

    /// Checks the place is consistent: a region of whole transfers, at least
    /// one segment, the rank inside the run.
    pub fn validate(&self) -> Result<(), String> {
        if self.ranks == 0 || self.rank >= self.ranks {
            return Err(format!("rank {} of {} ranks", self.rank, self.ranks));
        }
        if self.bs == 0 || self.region == 0 || !self.region.is_multiple_of(self.bs) {
            return Err(format!(
                "--region {} must be a positive multiple of --bs {}",
                self.region, self.bs
            ));
        }
        if self.segments == 0 {
            return Err("--segments must be at least 1".into());
        }
        Ok(())
    }

    /// Maps an offset in this rank's own address space (`0..rank_bytes()`)
    /// to the offset in its file.
    #[inline]
    pub fn map(&self, logical: u64) -> u64 {
        let ranks = u64::from(self.ranks);
        let rank = u64::from(self.rank);
        match self.layout {
            Layout::PerRank => logical,
            Layout::Segmented => {
                let seg = logical / self.region;
                (seg * ranks + rank) * self.region + logical % self.region
            }
            Layout::Strided => {
                let i = logical / self.bs;
                (i * ranks + rank) * self.bs + logical % self.bs
            }
        }
    }

    /// The byte ranges of the file this rank owns, merged where they touch
    /// (one range for per-rank files, one per segment for segmented; strided
    /// ranks own every `ranks`-th transfer, returned as such).
    pub fn ranges(&self) -> Vec<(u64, u64)> {
        match self.layout {
            Layout::PerRank => vec![(0, self.rank_bytes())],
            Layout::Segmented => (0..self.segments)
                .map(|s| (self.map(s * self.region), self.region))
                .collect(),
            Layout::Strided => (0..self.rank_bytes() / self.bs)
                .map(|i| (self.map(i * self.bs), self.bs))
                .collect(),
        }
    }

    /// The place of another rank of the same run: what `--reorder` reads.
    pub fn as_rank(&self, rank: u32) -> RankPlace {
        RankPlace { rank, ..*self }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn place(layout: Layout, ranks: u32) -> RankPlace {
        RankPlace {
            rank: 0,
            ranks,
            layout,
            region: 16 * 4096,
            segments: 3,
            bs: 4096,
            resume_ops: 0,
        }
    }

    /// Every byte of a shared file belongs to exactly one rank, and each rank
    /// sees its own bytes once.
    #[test]
    fn shared_layouts_cover_the_file_exactly_once() {
        for layout in [Layout::Segmented, Layout::Strided] {
            for ranks in [1, 2, 3, 4] {
                let p = place(layout, ranks);
                let blocks = p.file_bytes() / p.bs;
                let mut owner = vec![u32::MAX; blocks as usize];
                for r in 0..ranks {
                    let q = p.as_rank(r);
                    for l in (0..q.rank_bytes()).step_by(q.bs as usize) {
                        let b = (q.map(l) / q.bs) as usize;
                        assert_eq!(owner[b], u32::MAX, "{layout} {ranks}: block {b} twice");
                        owner[b] = r;
                    }
                }
                assert!(owner.iter().all(|&o| o != u32::MAX), "{layout}: gaps");
                // The ranges agree with the map.
                let q = p.as_rank(ranks - 1);
                let covered: u64 = q.ranges().iter().map(|r| r.1).sum();
                assert_eq!(covered, q.rank_bytes());
                for (off, len) in q.ranges() {
                    for b in (off / q.bs)..((off + len) / q.bs) {
                        assert_eq!(owner[b as usize], ranks - 1);
                    }
                }
            }
        }
    }

    #[test]
    fn segmented_is_ior_layout() {
        let p = place(Layout::Segmented, 4).as_rank(2);
        // Segment 1 of rank 2 starts after segment 0 (4 regions) and ranks 0, 1.
        assert_eq!(p.map(p.region), (4 + 2) * p.region);
        assert_eq!(p.map(5), 2 * p.region + 5);
        let s = place(Layout::Strided, 4).as_rank(1);
        assert_eq!(s.map(0), 4096);
        assert_eq!(s.map(4096 + 7), (4 + 1) * 4096 + 7);
        assert_eq!(place(Layout::PerRank, 4).as_rank(3).map(99), 99);
    }

    #[test]
    fn bad_places_are_refused_with_the_flag_named() {
        let mut p = place(Layout::Segmented, 2);
        p.region = 5000;
        assert!(p.validate().unwrap_err().contains("--region"));
        p.region = 8192;
        p.segments = 0;
        assert!(p.validate().unwrap_err().contains("--segments"));
        assert!("diagonal"
            .parse::<Layout>()
            .unwrap_err()
            .contains("per-rank"));
    }
}
