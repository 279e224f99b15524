//! `iolab trace stats`: what a trace reads, how, and how much of it again.

use super::{Trace, TraceFormat};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

/// What one policy would choose for one file, and why.
#[derive(Clone, Debug, Serialize)]
pub struct Advice {
    /// The policy (`thesis`, `auto`).
    pub policy: String,
    /// The technique it picks.
    pub technique: String,
    /// Why.
    pub reason: String,
}

/// One file of a trace.
#[derive(Clone, Debug, Serialize)]
pub struct FileStats {
    /// Path as recorded.
    pub path: String,
    /// Size the file must have (largest end of a read or mapping).
    pub size: u64,
    /// Reads of it.
    pub reads: u64,
    /// Bytes read.
    pub bytes: u64,
    /// Distinct bytes read.
    pub unique_bytes: u64,
    /// Mean request size, bytes.
    pub mean_request: f64,
    /// Reads that start where the same thread's previous read of this
    /// file ended (the first read counts when it starts at 0).
    pub sequential_fraction: f64,
    /// Bytes read that had been read before.
    pub reread_fraction: f64,
    /// Mapped with mmap (its page faults are not in the trace).
    pub mapped: bool,
    /// What each policy would choose.
    pub advice: Vec<Advice>,
}

/// One thread of a trace.
#[derive(Clone, Debug, Serialize)]
pub struct ThreadStats {
    /// Recorded thread id.
    pub thread: u64,
    /// Reads.
    pub reads: u64,
    /// Bytes.
    pub bytes: u64,
    /// Sequential reads (as in [`FileStats::sequential_fraction`]).
    pub sequential_fraction: f64,
}

/// The whole trace.
#[derive(Clone, Debug, Serialize)]
pub struct TraceStats {
    /// Input format.
    pub format: TraceFormat,
    /// Files read or mapped.
    pub files: usize,
    /// Reads.
    pub reads: u64,
    /// Bytes read.
    pub bytes: u64,
    /// Mappings.
    pub mappings: u64,
    /// Bytes mapped.
    pub mapped_bytes: u64,
    /// Request sizes: (upper bound of the power-of-two bucket, reads).
    pub size_histogram: Vec<(u64, u64)>,
    /// Sequential reads over all reads.
    pub sequential_fraction: f64,
    /// Bytes read again over bytes read.
    pub reread_fraction: f64,
    /// Distinct bytes read (the working set).
    pub working_set: u64,
    /// This machine's memory, bytes (MemTotal).
    pub mem_total: u64,
    /// Memory available now, bytes (MemAvailable).
    pub mem_available: u64,
    /// Time from first to last read, ns (when recorded).
    pub duration_ns: Option<u64>,
    /// Reads left out while recording, by kind.
    pub skipped: BTreeMap<String, u64>,
    /// Per file, in trace order.
    pub per_file: Vec<FileStats>,
    /// Per thread, in order of first read.
    pub per_thread: Vec<ThreadStats>,
}

/// `MemTotal` and `MemAvailable` of /proc/meminfo, bytes.
pub fn meminfo() -> (u64, u64) {
    let text = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let get = |k: &str| {
        text.lines()
            .find(|l| l.starts_with(k))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u64>().ok())
            .map(|kb| kb * 1024)
            .unwrap_or(0)
    };
    (get("MemTotal:"), get("MemAvailable:"))
}

/// Length of the union of `[start, end)` intervals.
fn union_len(mut iv: Vec<(u64, u64)>) -> u64 {
    iv.sort_unstable();
    let (mut total, mut cur): (u64, Option<(u64, u64)>) = (0, None);
    for (s, e) in iv {
        cur = match cur {
            Some((cs, ce)) if s <= ce => Some((cs, ce.max(e))),
            Some((cs, ce)) => {
                total += ce - cs;
                Some((s, e))
            }
            None => Some((s, e)),
        };
    }
    if let Some((cs, ce)) = cur {
        total += ce - cs;
    }
    total
}

fn frac(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

/// Per-file counts from one pass over the reads.
struct FileTally {
    reads: Vec<u64>,
    bytes: Vec<u64>,
    /// Reads that went on where the same thread's last read of the file ended.
    seq: Vec<u64>,
    /// The byte ranges read.
    iv: Vec<Vec<(u64, u64)>>,
}

/// Each file's statistics and the policies' advice for it; and the working
/// set (distinct bytes read over all files).
fn per_file(
    t: &Trace,
    mut c: FileTally,
    advise: &dyn Fn(&FileStats) -> Vec<Advice>,
) -> (Vec<FileStats>, u64) {
    let sizes = t.file_sizes();
    let mut mapped = vec![false; t.files.len()];
    for m in &t.mappings {
        mapped[m.file as usize] = true;
    }
    let mut out = Vec::new();
    let mut working_set = 0;
    for i in 0..t.files.len() {
        let unique = union_len(std::mem::take(&mut c.iv[i]));
        working_set += unique;
        let mut fs = FileStats {
            path: t.files[i].clone(),
            size: sizes[i],
            reads: c.reads[i],
            bytes: c.bytes[i],
            unique_bytes: unique,
            mean_request: frac(c.bytes[i], c.reads[i]),
            sequential_fraction: frac(c.seq[i], c.reads[i]),
            reread_fraction: 1.0 - frac(unique, c.bytes[i]).min(1.0),
            mapped: mapped[i],
            advice: Vec::new(),
        };
        if c.bytes[i] == 0 {
            fs.reread_fraction = 0.0;
        }
        fs.advice = advise(&fs);
        out.push(fs);
    }
    (out, working_set)
}

/// One pass over the reads: per file, per thread, and the size histogram.
struct Tally {
    files: FileTally,
    threads: Vec<ThreadStats>,
    sizes: BTreeMap<u64, u64>,
    sequential: u64,
}

impl Tally {
    fn of(t: &Trace) -> Tally {
        let nf = t.files.len();
        let mut f = FileTally {
            reads: vec![0u64; nf],
            bytes: vec![0u64; nf],
            seq: vec![0u64; nf],
            iv: vec![Vec::new(); nf],
        };
        let mut last_end: HashMap<(u64, u32), u64> = HashMap::new();
        let mut th: Vec<ThreadStats> = Vec::new();
        let mut th_index: HashMap<u64, usize> = HashMap::new();
        let mut th_seq: Vec<u64> = Vec::new();
        let mut sizes: BTreeMap<u64, u64> = BTreeMap::new();
        let mut sequential = 0u64;
        for r in &t.reads {
            let i = r.file as usize;
            f.reads[i] += 1;
            f.bytes[i] += r.len;
            f.iv[i].push((r.offset, r.offset + r.len));
            let prev = last_end.insert((r.thread, r.file), r.offset + r.len);
            let is_seq = prev.unwrap_or(0) == r.offset;
            let ti = *th_index.entry(r.thread).or_insert_with(|| {
                th.push(ThreadStats {
                    thread: r.thread,
                    reads: 0,
                    bytes: 0,
                    sequential_fraction: 0.0,
                });
                th_seq.push(0);
                th.len() - 1
            });
            th[ti].reads += 1;
            th[ti].bytes += r.len;
            if is_seq {
                f.seq[i] += 1;
                th_seq[ti] += 1;
                sequential += 1;
            }
            *sizes.entry(r.len.next_power_of_two()).or_default() += 1;
        }
        for (i, s) in th.iter_mut().enumerate() {
            s.sequential_fraction = frac(th_seq[i], s.reads);
        }
        Tally {
            files: f,
            threads: th,
            sizes,
            sequential,
        }
    }
}

/// Computes the statistics; `advise` says what each policy would choose for
/// a file (given everything else about it).
pub fn compute(t: &Trace, advise: &dyn Fn(&FileStats) -> Vec<Advice>) -> TraceStats {
    let tally = Tally::of(t);
    let total: u64 = tally.files.bytes.iter().sum();
    let (per_file, working_set) = per_file(t, tally.files, advise);
    let (mem_total, mem_available) = meminfo();
    let times: Vec<u64> = t.reads.iter().filter_map(|r| r.t_ns).collect();
    TraceStats {
        format: t.format,
        files: t.files.len(),
        reads: t.reads.len() as u64,
        bytes: total,
        mappings: t.mappings.len() as u64,
        mapped_bytes: t.mappings.iter().map(|m| m.len).sum(),
        size_histogram: tally.sizes.into_iter().collect(),
        sequential_fraction: frac(tally.sequential, t.reads.len() as u64),
        reread_fraction: if total == 0 {
            0.0
        } else {
            1.0 - frac(working_set, total).min(1.0)
        },
        working_set,
        mem_total,
        mem_available,
        duration_ns: match (times.iter().min(), times.iter().max()) {
            (Some(a), Some(b)) => Some(b - a),
            _ => None,
        },
        skipped: t.skipped.clone(),
        per_file,
        per_thread: tally.threads,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse;

    #[test]
    fn counts_sequential_rereads_and_histogram() {
        let t = parse(
            "file,offset,len,thread\n/a,0,4096,1\n/a,4096,4096,1\n/a,0,4096,2\n/a,100000,1000,1\n/b,10,10,1\n",
            "x",
            None,
        )
        .unwrap();
        let s = compute(&t, &|_| Vec::new());
        assert_eq!(s.files, 2);
        assert_eq!(s.reads, 5);
        assert_eq!(s.bytes, 3 * 4096 + 1010);
        let a = &s.per_file[0];
        assert_eq!(a.size, 101000);
        assert_eq!(a.unique_bytes, 8192 + 1000);
        // t1: 0 (seq, at 0), 4096 (seq), 100000 (not); t2: 0 (seq)
        assert!((a.sequential_fraction - 0.75).abs() < 1e-9);
        assert!((a.reread_fraction - 4096.0 / (3.0 * 4096.0 + 1000.0)).abs() < 1e-9);
        assert_eq!(s.per_thread.len(), 2);
        assert_eq!(s.size_histogram, vec![(16, 1), (1024, 1), (4096, 3)]);
        assert!(s.mem_total > 0);
    }
}
