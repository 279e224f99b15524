//! The reading library's techniques as replay readers, and what its two
//! policies (the thesis's rules, `Auto`) would choose for a traced file.

use super::replay::{ReplayFile, ReplayReader};
use super::stats::{Advice, FileStats};
use iolab_reader::policy::{self, Choice, Situation};
use iolab_reader::{profile, Hints, Options, Reader, Technique};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The techniques `--reader all` compares, in table order.
pub fn all() -> Vec<Technique> {
    vec![
        Technique::Stream,
        Technique::Buffered { block: 4 << 10 },
        Technique::Buffered { block: 4 << 20 },
        Technique::Mapped,
        Technique::Direct,
        Technique::Uring { depth: 32 },
        Technique::ThesisRules,
        Technique::Auto,
    ]
}

/// The hints for each file of `t`, keyed by where replay placed it
/// (`paths[i]` holds the trace's file `i`).
pub fn hints_for(t: &super::model::Trace, paths: &[PathBuf]) -> HashMap<PathBuf, Hints> {
    let st = super::stats::compute(t, &|_| Vec::new());
    paths
        .iter()
        .zip(&st.per_file)
        .map(|(p, f)| (p.clone(), hints_of(f)))
        .collect()
}

/// What the thesis's reader is told about a file: the hints its developer
/// would give, taken from the trace (random unless most reads run on;
/// the fraction of the file the trace reads).
pub fn hints_of(f: &FileStats) -> Hints {
    Hints {
        random: f.sequential_fraction < 0.5,
        expected_fraction: if f.size == 0 {
            1.0
        } else {
            (f.unique_bytes as f64 / f.size as f64).clamp(0.0, 1.0)
        },
    }
}

/// The name of `Auto` with the built-in profile (no `iolab tune`), so one
/// replay compares it beside `auto` with the machine's profile.
pub const AUTO_BUILTIN: &str = "auto:builtin";

/// A [`Reader`] with one technique, opened per replay thread and file.
pub struct TechniqueReader {
    technique: Technique,
    hints: HashMap<PathBuf, Hints>,
    /// The profile `Auto` decides with (None: the process's).
    profile: Option<Arc<profile::Profile>>,
}

impl TechniqueReader {
    /// `hints` are per replayed path (used by the thesis's rules).
    pub fn new(technique: Technique, hints: HashMap<PathBuf, Hints>) -> Self {
        TechniqueReader {
            technique,
            hints,
            profile: None,
        }
    }

    /// `Auto` with the built-in defaults, whatever profile the process has
    /// ([`AUTO_BUILTIN`]).
    pub fn auto_builtin() -> Self {
        TechniqueReader {
            technique: Technique::Auto,
            hints: HashMap::new(),
            profile: Some(Arc::new(profile::Profile::builtin())),
        }
    }
}

/// This thread's copy of the built-in profile `p` (of [`AUTO_BUILTIN`]):
/// an `Arc` cloned by every replay thread at every open would have them
/// all write one shared count, which `auto` with the process's profile
/// does not (the library borrows that one), and charge the built-in
/// column for a cache line passed between processors.
fn builtin_here(p: &Arc<profile::Profile>) -> Arc<profile::Profile> {
    type Mine = Option<(*const profile::Profile, Arc<profile::Profile>)>;
    thread_local! {
        static MINE: std::cell::RefCell<Mine> = const { std::cell::RefCell::new(None) };
    }
    MINE.with(|m| {
        let mut m = m.borrow_mut();
        match &*m {
            Some((of, mine)) if *of == Arc::as_ptr(p) => mine.clone(),
            _ => {
                let mine = Arc::new((**p).clone());
                *m = Some((Arc::as_ptr(p), mine.clone()));
                mine
            }
        }
    })
}

struct TechniqueFile(Reader);

impl ReplayFile for TechniqueFile {
    fn read_at(&mut self, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
        self.0
            .read_at(offset, buf)
            .map_err(|e| std::io::Error::other(e.to_string()))
    }
}

impl ReplayReader for TechniqueReader {
    fn name(&self) -> String {
        match self.profile {
            Some(_) => AUTO_BUILTIN.to_string(),
            None => self.technique.to_string(),
        }
    }
    fn open(&self, path: &Path) -> std::io::Result<Box<dyn ReplayFile>> {
        let mut o = Options::new(self.technique);
        // Only the thesis's rules read hints: looking a long path up in
        // the map (hashed component by component) would charge every
        // other reader's opens for nothing.
        if self.technique == Technique::ThesisRules {
            if let Some(h) = self.hints.get(path) {
                o = o.hints(*h);
            }
        }
        if let Some(p) = &self.profile {
            o = o.profile(builtin_here(p));
        }
        let r = Reader::open(path, o).map_err(|e| std::io::Error::other(e.to_string()))?;
        Ok(Box::new(TechniqueFile(r)))
    }
}

fn choice_name(c: Choice) -> String {
    match c {
        Choice::Mapped => "mapped".into(),
        Choice::Pread => "stream".into(),
        Choice::Buffered { block } => Technique::Buffered { block }.to_string(),
        Choice::Uring { depth } => format!("uring:{depth}"),
        Choice::Direct => "direct".into(),
        Choice::Ahead => "direct read-ahead".into(),
    }
}

/// Time a random read of `len` bytes of uncached data takes, ns: what the
/// profile measured for one `pread` at a time, else 100 µs (a read from
/// this kind of virtio disk).
fn cold_read_ns(p: &profile::Profile, len: usize) -> f64 {
    p.measurements
        .iter()
        .find(|m| {
            m.pattern == "rand" && m.cache == "cold" && m.technique == "stream" && m.threads == 1
        })
        .filter(|m| m.mib_s > 0.0)
        .map_or(100e3, |m| {
            let per_read = m.block as f64 / (m.mib_s * (1u64 << 20) as f64) * 1e9;
            per_read.max(len as f64 / (m.mib_s * (1u64 << 20) as f64) * 1e9)
        })
}

/// What the thesis's rules and `Auto` would choose for a file of the
/// trace (read from a cold cache), with the reason.
pub fn advise(f: &FileStats) -> Vec<Advice> {
    if f.reads == 0 {
        return Vec::new();
    }
    let available = iolab_reader::mem_available().unwrap_or(0);
    let h = hints_of(f);
    let req = f.mean_request.round() as usize;
    // The thesis's swapFlag (iolab_reader's ThesisRules): data to read
    // fits in memory, random reads, more than 13 % of the file; then
    // requests up to 32 KiB are copies from the mapping.
    let to_read = (f.size as f64 * h.expected_fraction) as u64;
    let fits = to_read < available;
    let portion = h.expected_fraction > 0.13;
    let thesis = if fits && h.random && portion && req <= 32 << 10 {
        Advice {
            policy: "thesis".into(),
            technique: "mapped".into(),
            reason: format!(
                "random reads of {:.0} % of a file that fits in memory, requests of {} <= 32 KiB",
                h.expected_fraction * 100.0,
                req
            ),
        }
    } else {
        let why = if !h.random {
            "reads run sequentially".to_string()
        } else if !portion {
            format!(
                "only {:.0} % of the file is read (<= 13 %)",
                h.expected_fraction * 100.0
            )
        } else if !fits {
            "the data to read does not fit in memory".to_string()
        } else {
            format!("requests of {req} bytes are above 32 KiB")
        };
        Advice {
            policy: "thesis".into(),
            technique: "buffered".into(),
            reason: format!(
                "{why}: the 4 MiB buffered reader (blocks of the request size, 4 KiB..4 MiB)"
            ),
        }
    };
    let auto = auto_advice(f, &h, req, available);
    vec![thesis, auto]
}

/// What `Auto` would choose for a file of the trace read from a cold
/// cache (its random reads waiting as the profile measured, or 100 µs).
fn auto_advice(f: &FileStats, h: &Hints, req: usize, available: u64) -> Advice {
    let p = profile::process_profile();
    let random_reads = f.reads as f64 * (1.0 - f.sequential_fraction);
    let regions_read = (h.expected_fraction * policy::regions(f.size).1 as f64).round() as u64;
    // Dense when each region its random reads touch would miss often
    // enough to be read whole.
    let miss = cold_read_ns(&p, req);
    let due = policy::around_after(miss, policy::region_prior(miss, policy::cold_seq_mib_s(&p)));
    let dense = random_reads / regions_read.max(1) as f64 >= f64::from(due);
    let s = Situation {
        len: req,
        offset: 0,
        file_len: f.size,
        sequential: f.sequential_fraction >= 0.5,
        fraction_read: h.expected_fraction,
        waited_ns: (random_reads * cold_read_ns(&p, req)) as u64,
        regions_read,
        reread: f.reread_fraction > 0.0,
        resident: 0.0,
        range_cached: None,
        available,
        batch: 1,
        requests: f.reads,
        stream_bytes: if f.sequential_fraction >= 0.5 {
            f.size
        } else {
            0
        },
        direct_again: f.reread_fraction > 0.0,
        follows: f.sequential_fraction >= 0.5,
        dense,
        exact_again: false,
    };
    let d = policy::decide(&s, &p);
    let ahead = if policy::read_ahead_whole(&s, &p).is_some() {
        "; the whole file read ahead once its random reads are dense and have waited as long as reading it takes"
    } else {
        ""
    };
    Advice {
        policy: "auto".into(),
        technique: choice_name(d.choice),
        reason: format!(
            "{}{ahead} (typical request {req} B, cold cache, {} profile)",
            d.reason, p.source
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(size: u64, unique: u64, mean_request: f64, sequential: f64) -> FileStats {
        FileStats {
            path: "db".into(),
            size,
            reads: (unique as f64 / mean_request).ceil() as u64,
            bytes: unique,
            unique_bytes: unique,
            mean_request,
            sequential_fraction: sequential,
            reread_fraction: 0.0,
            mapped: false,
            advice: Vec::new(),
        }
    }

    #[test]
    fn stats_say_when_auto_reads_a_file_whole_ahead() {
        let auto = |f: &FileStats| {
            advise(f)
                .into_iter()
                .find(|a| a.policy == "auto")
                .unwrap()
                .reason
        };
        // 131,072 random 4 KiB reads over a 512 MiB file: they wait more
        // than WAIT_SHARE times as long as reading all of it takes, so it
        // is read ahead (it fits twice in the memory of a machine that
        // builds iolab).
        let db = file(512 << 20, 512 << 20, 4096.0, 0.0);
        assert!(auto(&db).contains("whole file read ahead"), "{}", auto(&db));
        // A small file read whole in one request: not.
        let small = file(6000, 6000, 6000.0, 1.0);
        assert!(
            !auto(&small).contains("whole file read ahead"),
            "{}",
            auto(&small)
        );
    }
}
