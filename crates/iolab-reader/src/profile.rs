//! The profile `Auto` decides with: what `iolab tune` measured on this
//! machine, reduced to a few thresholds and choices, plus the measurements
//! themselves and the machine and device they were taken on. Stored as
//! JSON (hence the crate's `serde_json` dependency). Without a profile
//! `Auto` uses [`Profile::builtin`]: the thesis's guidelines
//! ([`Profile::thesis_defaults`]) made safe for programs never seen.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Environment variable naming the profile file (overrides the default path).
pub const PROFILE_ENV: &str = "IOLAB_PROFILE";

/// The most bytes read of a file said to be a profile (a few KiB of JSON):
/// a larger one is not a profile.
pub const PROFILE_MAX_BYTES: u64 = 1 << 20;

/// The machine a profile was measured on.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    /// Host name.
    pub hostname: String,
    /// CPU model name.
    pub cpu: String,
    /// Logical CPUs.
    pub cpus: usize,
    /// Memory, bytes.
    pub mem_bytes: u64,
    /// Kernel release.
    pub kernel: String,
}

impl Machine {
    /// This machine, now.
    pub fn this() -> Machine {
        let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
        let cpuinfo = read("/proc/cpuinfo");
        Machine {
            hostname: read("/proc/sys/kernel/hostname").trim().to_string(),
            cpu: cpuinfo
                .lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
                .unwrap_or_default(),
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            mem_bytes: read("/proc/meminfo")
                .lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
                .map_or(0, |kb| kb * 1024),
            kernel: read("/proc/sys/kernel/osrelease").trim().to_string(),
        }
    }
}

/// One configuration `iolab tune` measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    /// Workload: "seq" or "rand".
    pub pattern: String,
    /// Cache state: "cold" or "warm".
    pub cache: String,
    /// Technique, as [`Technique`](super::Technique) names it.
    pub technique: String,
    /// Request size, bytes.
    pub block: usize,
    /// Requests in flight per thread.
    pub depth: u32,
    /// Threads.
    pub threads: usize,
    /// Throughput, MiB/s.
    pub mib_s: f64,
    /// 99.9th percentile request latency, µs.
    pub p999_us: f64,
    /// CPU time per GiB moved, ms.
    pub cpu_ms_per_gib: f64,
    /// Whether it is on the Pareto front of its workload (throughput up,
    /// p99.9 and CPU down).
    pub pareto: bool,
}

/// How to read whole files (`read_all`, `iolab cat`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct WholeChoice {
    /// Read cold files with O_DIRECT.
    pub direct_cold: bool,
    /// Piece size, bytes.
    pub block: usize,
    /// Pieces in flight.
    pub depth: u32,
    /// Piece size when the file is cached, bytes.
    #[serde(default = "default_warm_block")]
    pub warm_block: usize,
    /// Where a cached file's copy lands past a page, bytes, as `iolab tune`
    /// measured it; `None` (profiles from before it, the built-in one):
    /// measured when first needed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warm_offset: Option<usize>,
}

/// [`Profile::cold_small_max`] of a profile that has none: the built-in
/// `small_max`, which the train half of the trace corpus was read with.
fn default_cold_small_max() -> usize {
    32 << 10
}

fn default_warm_block() -> usize {
    128 << 10
}

/// How to move files into GPU memory ([`crate::gpu`]), as `iolab tune`
/// measured it on a machine with a GPU.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct GpuChoice {
    /// Bytes per read and per host-to-device copy.
    pub chunk: usize,
    /// Pieces in flight on a cold file's io_uring.
    pub depth: u32,
    /// Threads reading a warm file (each with its own stream).
    pub threads: usize,
    /// Staging buffers per thread.
    pub slots: usize,
    /// Page-locked staging buffers beat pageable ones.
    pub pinned: bool,
    /// What was measured to choose them (absent in a hand-written section).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured: Option<GpuRates>,
}

/// The host → device rates `iolab tune` measured, GB/s (10^9 bytes/s).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct GpuRates {
    /// The GPU measured (its number).
    pub device: usize,
    /// One large copy from page-locked host memory.
    pub pinned_copy: f64,
    /// One large copy from ordinary (pageable) host memory.
    pub pageable_copy: f64,
    /// A file not in the page cache into GPU memory, with this choice.
    pub cold: f64,
    /// A file in the page cache into GPU memory, with this choice.
    pub warm: f64,
}

/// Thresholds and choices for [`Technique::Auto`](super::Technique::Auto).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    /// Format version (1).
    pub version: u32,
    /// Where the profile came from: "built-in" or "iolab tune".
    pub source: String,
    /// The machine it was measured on.
    pub machine: Machine,
    /// The device it was measured on (`vda`, `nvme0n1`), if known.
    pub device: Option<String>,
    /// Seconds since the epoch when measured.
    pub created_unix: u64,
    /// Requests up to this size are "small".
    pub small_max: usize,
    /// Random reads of data not cached up to this size are "small" (one
    /// `pread`, read around by region); larger ones take the large path
    /// (O_DIRECT where `seq_direct`). Measured by `iolab tune` as the
    /// largest of 32 and 128 KiB up to which one `pread` of cold data
    /// keeps up with one O_DIRECT read, never below 32 KiB: the warm
    /// crossover of `small_max` (a copy from a mapping against a `pread`)
    /// says nothing of it. A profile without it takes the built-in 32 KiB.
    #[serde(default = "default_cold_small_max")]
    pub cold_small_max: usize,
    /// Small random reads of cached data are copies from a mapping.
    pub mmap_small_warm: bool,
    /// Small random reads of data not cached go to the mapping too (the
    /// thesis's rule when the file fits; a tuned profile usually says no).
    pub mmap_small_cold: bool,
    /// Piece size for large and sequential reads, bytes.
    pub seq_block: usize,
    /// Pieces in flight for a large read of data not cached.
    pub seq_depth: u32,
    /// Cold large reads bypass the page cache (O_DIRECT).
    pub seq_direct: bool,
    /// Requests in flight for batches of reads of data not cached.
    pub random_depth: u32,
    /// A file "fits" when its length is at most this fraction of available memory.
    pub fit_fraction: f64,
    /// Whole-file reads.
    pub whole: WholeChoice,
    /// Reads into GPU memory; `None` until `iolab tune` measured them on a
    /// machine with a GPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<GpuChoice>,
    /// What was measured (empty for the built-in profile).
    #[serde(default)]
    pub measurements: Vec<Measurement>,
    /// The recommendations, in words.
    #[serde(default)]
    pub recommendations: Vec<String>,
}

impl Profile {
    /// The built-in defaults, from the thesis's guidelines: memory-mapped
    /// reads for random requests up to 32 KiB of a file that fits in
    /// memory, otherwise 4 MiB blocks; asynchronous reads with 64 in flight
    /// (its AsyncReader's limit); two to four workers for big sequential
    /// reads.
    pub fn thesis_defaults() -> Profile {
        Profile {
            version: 1,
            source: "built-in".into(),
            machine: Machine::default(),
            device: None,
            created_unix: 0,
            small_max: 32 << 10,
            cold_small_max: default_cold_small_max(),
            mmap_small_warm: true,
            mmap_small_cold: true,
            seq_block: 4 << 20,
            seq_depth: 4,
            seq_direct: false,
            random_depth: 64,
            fit_fraction: 1.0,
            whole: WholeChoice {
                direct_cold: true,
                block: 4 << 20,
                depth: 8,
                warm_block: default_warm_block(),
                warm_offset: None,
            },
            gpu: None,
            measurements: Vec::new(),
            recommendations: Vec::new(),
        }
    }

    /// The profile `Auto` uses without `iolab tune`: the thesis's block
    /// sizes and depths, with what held for every program of the corpus's
    /// train half on the machine it was recorded on (`docs/results/`):
    /// uncached data is never read through a mapping (`mmap_small_cold`
    /// off: a fault reads the device's whole read-ahead window), a file
    /// "fits" when it takes at most half of the memory available, and
    /// large or in-order reads of uncached data go through O_DIRECT
    /// (`seq_direct` on: the pieces read ahead kept the device's queue
    /// full where the kernel's read-ahead did not; cold, the train half
    /// replayed 1.3 to 10 times faster than with it off, and faster than
    /// `pread` on every trace; what is cached is probed first and never
    /// read past the page cache, and the run-time guard watches the rest).
    pub fn builtin() -> Profile {
        Profile {
            mmap_small_cold: false,
            fit_fraction: 0.5,
            seq_direct: true,
            ..Profile::thesis_defaults()
        }
    }

    /// Parses a profile from JSON.
    pub fn from_json(s: &str) -> Result<Profile, String> {
        let p: Profile = serde_json::from_str(s).map_err(|e| e.to_string())?;
        if p.version != 1 {
            return Err(format!(
                "profile version {} (this iolab reads 1)",
                p.version
            ));
        }
        if p.seq_block == 0 || p.whole.block == 0 || p.seq_depth == 0 || p.whole.depth == 0 {
            return Err("profile has a zero block size or depth".into());
        }
        Ok(p)
    }

    /// The profile as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a profile always serialises")
    }

    /// Loads `path`; on a missing or corrupt file returns the built-in
    /// defaults ([`Profile::builtin`]) and the one-line warning to print.
    pub fn load_or_default(path: &Path) -> (Profile, Option<String>) {
        match iolab::file::read_bounded(path, PROFILE_MAX_BYTES, "profile")
            .map(|b| String::from_utf8_lossy(&b).into_owned())
        {
            Ok(s) => match Profile::from_json(&s) {
                Ok(p) => (p, None),
                Err(e) => (
                    Profile::builtin(),
                    Some(format!(
                        "warning: profile {} is unusable ({e}); using the built-in defaults (run `iolab tune`)",
                        path.display()
                    )),
                ),
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => (
                Profile::builtin(),
                Some(format!(
                    "warning: no profile at {}; using the built-in defaults (run `iolab tune`)",
                    path.display()
                )),
            ),
            Err(e) => (
                Profile::builtin(),
                Some(format!(
                    "warning: cannot read profile {} ({e}); using the built-in defaults",
                    path.display()
                )),
            ),
        }
    }

    /// The fastest cold sequential read into the page cache it measured
    /// (O_DIRECT left out: a read ahead fills the page cache), MiB/s;
    /// `None` without such a measurement (the built-in profile).
    pub fn seq_cold_cached_mib_s(&self) -> Option<f64> {
        self.measurements
            .iter()
            .filter(|m| m.pattern == "seq" && m.cache == "cold" && !m.technique.contains("direct"))
            .map(|m| m.mib_s)
            .filter(|v| *v > 0.0)
            .reduce(f64::max)
    }

    /// This profile, as if `iolab tune` had measured cold sequential reads
    /// into the page cache at `mib_s` (what [`Self::seq_cold_cached_mib_s`]
    /// finds): the tests' device of a known speed.
    #[cfg(test)]
    pub(crate) fn with_seq_cold_cached(mut self, mib_s: f64) -> Profile {
        self.measurements.push(Measurement {
            pattern: "seq".into(),
            cache: "cold".into(),
            technique: "whole:buffered".into(),
            block: 1 << 20,
            depth: 8,
            threads: 1,
            mib_s,
            p999_us: 0.0,
            cpu_ms_per_gib: 0.0,
            pareto: true,
        });
        self
    }

    /// A warning if this profile was measured on another device than the
    /// one holding `file`.
    pub fn device_warning(&self, file: &Path) -> Option<String> {
        let measured = self.device.as_ref()?;
        let here = iolab::file::block_device_of(file).map(|d| d.name)?;
        (here != *measured).then(|| {
            format!(
                "warning: profile measured on device {measured}, but {} is on {here}; using it anyway (run `iolab tune --dir` there)",
                file.display()
            )
        })
    }
}

/// Where the profile lives: `$IOLAB_PROFILE`, else
/// `$XDG_CONFIG_HOME/iolab/profile.json`, else `~/.config/iolab/profile.json`.
pub fn default_path() -> PathBuf {
    if let Some(p) = std::env::var_os(PROFILE_ENV) {
        return PathBuf::from(p);
    }
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))
        .unwrap_or_else(|| PathBuf::from("."));
    base.join("iolab").join("profile.json")
}

/// The process-wide profile from [`default_path`], loaded once; its
/// warning (if any) is said once, through [`crate::warn`].
pub fn process_profile() -> Arc<Profile> {
    process_arc().clone()
}

/// The process-wide profile ([`process_profile`]), loaded once and kept
/// for the life of the process.
fn process_arc() -> &'static Arc<Profile> {
    static P: std::sync::OnceLock<Arc<Profile>> = std::sync::OnceLock::new();
    P.get_or_init(|| {
        let (p, warn) = Profile::load_or_default(&default_path());
        if let Some(w) = warn {
            crate::warn::emit(&w);
        }
        Arc::new(p)
    })
}

/// The profile an open file of `Auto` decides with: the process's,
/// borrowed for the life of the process, or one the caller gave.
///
/// Not an `Arc` clone of the process's profile: every open and close of
/// every thread would write its one shared count, a cache line the
/// processors pass between them (replaying 122 compiler processes' opens
/// at once, two thirds of the samples of `Auto`'s own open fell on that
/// one increment).
#[derive(Clone, Debug)]
pub(crate) enum ProfileRef {
    /// [`process_profile`].
    Process(&'static Profile),
    /// From [`crate::Options::profile`].
    Given(Arc<Profile>),
}

impl ProfileRef {
    /// `given`, else the process's profile.
    pub(crate) fn new(given: Option<Arc<Profile>>) -> ProfileRef {
        match given {
            Some(p) => ProfileRef::Given(p),
            None => ProfileRef::Process(process_arc()),
        }
    }
}

impl From<Arc<Profile>> for ProfileRef {
    fn from(p: Arc<Profile>) -> ProfileRef {
        ProfileRef::Given(p)
    }
}

impl std::ops::Deref for ProfileRef {
    type Target = Profile;
    fn deref(&self) -> &Profile {
        match self {
            ProfileRef::Process(p) => p,
            ProfileRef::Given(p) => p,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_through_json() {
        let mut p = Profile::thesis_defaults();
        p.source = "iolab tune".into();
        p.machine = Machine::this();
        p.device = Some("vda".into());
        p.measurements.push(Measurement {
            pattern: "rand".into(),
            cache: "cold".into(),
            technique: "uring:32".into(),
            block: 4096,
            depth: 32,
            threads: 1,
            mib_s: 123.5,
            p999_us: 900.0,
            cpu_ms_per_gib: 40.0,
            pareto: true,
        });
        p.recommendations
            .push("read cold files with O_DIRECT".into());
        assert_eq!(Profile::from_json(&p.to_json()).unwrap(), p);
    }

    #[test]
    fn the_cold_sequential_speed_is_the_best_page_cache_one() {
        let m = |technique: &str, pattern: &str, cache: &str, mib_s: f64| Measurement {
            pattern: pattern.into(),
            cache: cache.into(),
            technique: technique.into(),
            block: 1 << 20,
            depth: 1,
            threads: 1,
            mib_s,
            p999_us: 0.0,
            cpu_ms_per_gib: 0.0,
            pareto: false,
        };
        let mut p = Profile::thesis_defaults();
        assert_eq!(p.seq_cold_cached_mib_s(), None);
        p.measurements = vec![
            m("whole:direct", "seq", "cold", 3906.0),
            m("whole:buffered", "seq", "cold", 2922.0),
            m("stream", "seq", "cold", 1344.0),
            m("stream", "seq", "warm", 5380.0),
            m("mapped", "rand", "cold", 3894.0),
        ];
        assert_eq!(p.seq_cold_cached_mib_s(), Some(2922.0));
    }

    #[test]
    fn corrupt_or_missing_profile_falls_back_with_one_warning() {
        let d = tempfile::tempdir().unwrap();
        let missing = d.path().join("none.json");
        let (p, w) = Profile::load_or_default(&missing);
        assert_eq!(p, Profile::builtin());
        let w = w.unwrap();
        assert!(
            w.starts_with("warning: no profile") && !w.contains('\n'),
            "{w}"
        );
        let bad = d.path().join("bad.json");
        std::fs::write(&bad, "{ \"version\": 1, ").unwrap();
        let (p, w) = Profile::load_or_default(&bad);
        assert_eq!(p, Profile::builtin());
        assert!(w.unwrap().contains("unusable"));
        let zero = d.path().join("zero.json");
        let mut z = Profile::thesis_defaults();
        z.seq_depth = 0;
        std::fs::write(&zero, z.to_json()).unwrap();
        assert!(Profile::load_or_default(&zero).1.is_some());
    }

    #[test]
    fn other_device_gives_a_warning() {
        let d = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        let f = d.path().join("f");
        std::fs::write(&f, b"x").unwrap();
        let Some(dev) = iolab::file::block_device_of(&f) else {
            eprintln!(
                "SKIPPED: other_device_gives_a_warning: no block device under the target dir"
            );
            return;
        };
        let mut p = Profile::thesis_defaults();
        p.device = Some(dev.name.clone());
        assert_eq!(p.device_warning(&f), None);
        p.device = Some("not-this-disk".into());
        assert!(p.device_warning(&f).unwrap().contains("not-this-disk"));
    }
}
