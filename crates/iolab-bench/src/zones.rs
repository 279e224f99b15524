//! fio's `random_distribution=zoned` (and `zoned_abs`): the range is cut
//! into zones, each taking a share of the accesses, uniform inside it; and
//! `random_distribution=sequence`: a fixed order of block indices,
//! repeated, or moved on by its length after each cycle
//! (`random_sequence_stride`).

use crate::random::Rng;
use serde::{Deserialize, Serialize};

/// Most zones a distribution has.
pub const MAX_ZONES: usize = 16;

/// Zones: each with its share of accesses (1/100 of a %, summing to
/// 10000) and of the range (parts per million, summing to 1e6).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(into = "Vec<(u16, u32)>", try_from = "Vec<(u16, u32)>")]
pub struct Zones {
    n: u8,
    access: [u16; MAX_ZONES],
    size_ppm: [u32; MAX_ZONES],
}

impl From<Zones> for Vec<(u16, u32)> {
    fn from(z: Zones) -> Self {
        (0..z.n as usize)
            .map(|i| (z.access[i], z.size_ppm[i]))
            .collect()
    }
}

impl TryFrom<Vec<(u16, u32)>> for Zones {
    type Error = String;
    fn try_from(v: Vec<(u16, u32)>) -> Result<Self, String> {
        Zones::new(&v)
    }
}

impl Zones {
    /// Zones from (access in 1/100 %, size in ppm) pairs.
    pub fn new(v: &[(u16, u32)]) -> Result<Zones, String> {
        if v.is_empty() || v.len() > MAX_ZONES {
            return Err(format!("1 to {MAX_ZONES} zones"));
        }
        let mut z = Zones {
            n: v.len() as u8,
            access: [0; MAX_ZONES],
            size_ppm: [0; MAX_ZONES],
        };
        for (i, (a, s)) in v.iter().enumerate() {
            z.access[i] = *a;
            z.size_ppm[i] = *s;
        }
        Ok(z)
    }

    /// fio's `zoned:A/S:A/S...` (percentages; a last size left empty takes
    /// what is left): the zones, or why not.
    pub fn parse_percent(spec: &str) -> Result<Zones, String> {
        let mut v: Vec<(f64, Option<f64>)> = Vec::new();
        for part in spec.split(':').filter(|p| !p.is_empty()) {
            let (a, s) = part
                .split_once('/')
                .ok_or_else(|| format!("'{part}': a zone is ACCESS%/SIZE%"))?;
            let a: f64 = a
                .trim()
                .parse()
                .map_err(|_| format!("'{part}': a zone is ACCESS%/SIZE%"))?;
            let s = match s.trim() {
                "" => None,
                x => Some(
                    x.parse::<f64>()
                        .map_err(|_| format!("'{part}': a zone is ACCESS%/SIZE%"))?,
                ),
            };
            v.push((a, s));
        }
        let given: f64 = v.iter().filter_map(|(_, s)| *s).sum();
        let rest = (100.0 - given).max(0.0);
        let pairs: Vec<(f64, f64)> = v.iter().map(|(a, s)| (*a, s.unwrap_or(rest))).collect();
        Zones::from_shares(&pairs, 100.0)
    }

    /// Zones from (access %, size) pairs, sizes out of `whole`.
    pub fn from_shares(pairs: &[(f64, f64)], whole: f64) -> Result<Zones, String> {
        let access: f64 = pairs.iter().map(|p| p.0).sum();
        if (access - 100.0).abs() > 0.01 {
            return Err(format!("the zones' accesses add up to {access}%, not 100%"));
        }
        let size: f64 = pairs.iter().map(|p| p.1).sum();
        if size > whole * 1.0001 {
            return Err("the zones are larger than the range".into());
        }
        let v: Vec<(u16, u32)> = pairs
            .iter()
            .map(|(a, s)| ((a * 100.0).round() as u16, (s / whole * 1e6).round() as u32))
            .collect();
        Zones::new(&v)
    }

    /// fio's spelling (`zoned:50/5:50/95`).
    pub fn to_fio(&self) -> String {
        let parts: Vec<String> = (0..self.n as usize)
            .map(|i| {
                format!(
                    "{}/{}",
                    self.access[i] as f64 / 100.0,
                    self.size_ppm[i] as f64 / 1e4
                )
            })
            .collect();
        format!("zoned:{}", parts.join(":"))
    }

    /// A block of `0..blocks`: a zone drawn by its share, then uniformly in it.
    #[inline]
    pub fn next_block(&self, blocks: u64, rng: &mut Rng) -> u64 {
        let mut r = rng.below(10_000) as u32;
        let mut start = 0u64;
        for i in 0..self.n as usize {
            let len = (blocks as u128 * self.size_ppm[i] as u128 / 1_000_000) as u64;
            if r < self.access[i] as u32 || i + 1 == self.n as usize {
                return (start + rng.below(len.max(1))).min(blocks.saturating_sub(1));
            }
            r -= self.access[i] as u32;
            start += len;
        }
        0
    }
}

/// Most entries a block sequence has (fio's limit).
pub const MAX_SEQUENCE: usize = 64;

/// fio's `random_distribution=sequence:I,J,...`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(into = "(Vec<u32>, bool)", try_from = "(Vec<u32>, bool)")]
pub struct BlockSeq {
    n: u8,
    idx: [u32; MAX_SEQUENCE],
    /// After each cycle, move on by the sequence's length.
    pub stride: bool,
}

impl From<BlockSeq> for (Vec<u32>, bool) {
    fn from(s: BlockSeq) -> Self {
        (s.idx[..s.n as usize].to_vec(), s.stride)
    }
}

impl TryFrom<(Vec<u32>, bool)> for BlockSeq {
    type Error = String;
    fn try_from((v, stride): (Vec<u32>, bool)) -> Result<Self, String> {
        BlockSeq::new(&v, stride)
    }
}

impl BlockSeq {
    /// A sequence of block indices.
    pub fn new(v: &[u32], stride: bool) -> Result<BlockSeq, String> {
        if v.is_empty() || v.len() > MAX_SEQUENCE {
            return Err(format!("1 to {MAX_SEQUENCE} block indices"));
        }
        let mut idx = [0; MAX_SEQUENCE];
        idx[..v.len()].copy_from_slice(v);
        Ok(BlockSeq {
            n: v.len() as u8,
            idx,
            stride,
        })
    }

    /// fio's spelling (`sequence:2,0,1`).
    pub fn to_fio(&self) -> String {
        let v: Vec<String> = self.idx[..self.n as usize]
            .iter()
            .map(|i| i.to_string())
            .collect();
        format!("sequence:{}", v.join(","))
    }

    /// The `i`-th block of the order over `blocks` blocks.
    #[inline]
    pub fn block(&self, i: u64, blocks: u64) -> u64 {
        let n = self.n as u64;
        let base = if self.stride { i / n * n } else { 0 };
        (base + self.idx[(i % n) as usize] as u64) % blocks.max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zones_take_their_share_of_accesses() {
        let z = Zones::parse_percent("50/5:30/15:20/").unwrap();
        let mut rng = Rng::new(3);
        let (mut a, mut b, mut c) = (0, 0, 0);
        for _ in 0..20_000 {
            match z.next_block(1000, &mut rng) {
                0..=49 => a += 1,
                50..=199 => b += 1,
                _ => c += 1,
            }
        }
        assert!((9_400..10_600).contains(&a), "{a}");
        assert!((5_500..6_500).contains(&b), "{b}");
        assert!((3_500..4_500).contains(&c), "{c}");
        assert!(Zones::parse_percent("50/5:30/15").is_err());
    }

    #[test]
    fn sequences_repeat_or_move_on() {
        let s = BlockSeq::new(&[2, 0, 1], false).unwrap();
        let got: Vec<u64> = (0..6).map(|i| s.block(i, 12)).collect();
        assert_eq!(got, [2, 0, 1, 2, 0, 1]);
        let s = BlockSeq::new(&[2, 0, 1], true).unwrap();
        let got: Vec<u64> = (0..6).map(|i| s.block(i, 12)).collect();
        assert_eq!(got, [2, 0, 1, 5, 3, 4]);
    }
}
