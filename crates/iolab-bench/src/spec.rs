//! The workload model: one serde struct that says everything a run does.
//! Built from command-line flags today, from fio job files and traces later.

use iolab::engine::{AccessHint, EngineKind, EngineOpts, Label};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

/// Order in which blocks are visited.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AccessPattern {
    /// Block after block (each thread its own slice of a shared file).
    Seq,
    /// Uniformly random blocks, with replacement (fio `--norandommap`).
    Rand,
    /// Every block exactly once, in random order (fio's default random map).
    Shuffle,
    /// Random with replacement from a skewed law: fio's
    /// `random_distribution=zipf:θ|pareto:h|normal:dev`.
    Skewed(crate::skew::Skew),
    /// In file order, skipping this many bytes after each block: fio's
    /// `rw=read:N` (the holes of a strided layout, column reads of a
    /// row-major table).
    Stride(u64),
    /// Backwards: after each block, this many bytes back from its end
    /// (fio's `rw=read:-N`), wrapping to the end of the range when the
    /// start is passed, as fio wraps.
    Back(u64),
    /// Runs of this many blocks in order, each from a uniformly random
    /// block (with replacement): fio's `rw=randread:N` with `norandommap`
    /// (N I/Os per random offset, the ones between sequential).
    #[serde(rename = "rand-run")]
    RandRun(u32),
    /// The range cut into runs of this many blocks, every run once per pass
    /// in random order, its blocks in order: fio's `rw=randread:N` with its
    /// random map (every block once), runs starting at multiples of N.
    #[serde(rename = "shuffle-run")]
    ShuffleRun(u32),
    /// Random with replacement, each zone of the range taking its share
    /// of the accesses (fio's `random_distribution=zoned`).
    Zoned(crate::zones::Zones),
    /// A fixed order of block indices, repeated (fio's
    /// `random_distribution=sequence`).
    Sequence(crate::zones::BlockSeq),
}

impl AccessPattern {
    /// Name as the command line spells it.
    pub fn name(self) -> &'static str {
        match self {
            AccessPattern::Seq => "seq",
            AccessPattern::Rand => "rand",
            AccessPattern::Shuffle => "shuffle",
            AccessPattern::Skewed(k) => k.kind(),
            AccessPattern::Stride(_) => "stride",
            AccessPattern::Back(_) => "back",
            AccessPattern::RandRun(_) => "rand-run",
            AccessPattern::ShuffleRun(_) => "shuffle-run",
            AccessPattern::Zoned(_) => "zoned",
            AccessPattern::Sequence(_) => "sequence",
        }
    }

    /// Random with replacement over the whole range (uniform or skewed):
    /// every thread draws from all blocks, and one pass has no meaning.
    pub fn with_replacement(self) -> bool {
        matches!(
            self,
            AccessPattern::Rand
                | AccessPattern::Skewed(_)
                | AccessPattern::RandRun(_)
                | AccessPattern::Zoned(_)
                | AccessPattern::Sequence(_)
        )
    }

    /// Offsets one pass over `blocks` blocks of `bs` bytes visits: all of
    /// them, or with a stride those that start every `bs + gap` bytes and
    /// fit.
    pub fn positions(self, blocks: u64, bs: u64) -> u64 {
        match self {
            AccessPattern::Stride(gap) if blocks > 0 => (blocks - 1) * bs / (bs + gap) + 1,
            _ => blocks,
        }
    }

    /// The kernel hint that fits the pattern.
    pub fn hint(self) -> AccessHint {
        match self {
            // As fio's fadvise_hint does for rw=read:N.
            AccessPattern::Seq | AccessPattern::Stride(_) | AccessPattern::Back(_) => {
                AccessHint::Sequential
            }
            _ => AccessHint::Random,
        }
    }
}

impl fmt::Display for AccessPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AccessPattern::Skewed(k) => write!(f, "{k}"),
            AccessPattern::Stride(gap) => write!(f, "stride:{}", crate::units::fio_size(*gap)),
            AccessPattern::Back(b) => write!(f, "back:{}", crate::units::fio_size(*b)),
            AccessPattern::RandRun(n) | AccessPattern::ShuffleRun(n) => {
                write!(f, "{}:{n}", self.name())
            }
            _ => f.write_str(self.name()),
        }
    }
}

impl FromStr for AccessPattern {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if let Some(k) = crate::skew::Skew::parse(s) {
            return k.map(AccessPattern::Skewed);
        }
        if let Some(n) = s.strip_prefix("stride:") {
            return crate::units::bytes(n)
                .map(AccessPattern::Stride)
                .map_err(|e| {
                    format!("stride:{n}: {e} (the bytes skipped after each block, e.g. stride:4k)")
                });
        }
        if let Some(n) = s.strip_prefix("back:") {
            return crate::units::bytes(n)
                .map(AccessPattern::Back)
                .map_err(|e| {
                    format!("back:{n}: {e} (the bytes moved back after each block, e.g. back:8k)")
                });
        }
        for (name, make) in [
            (
                "rand-run:",
                AccessPattern::RandRun as fn(u32) -> AccessPattern,
            ),
            ("shuffle-run:", AccessPattern::ShuffleRun),
        ] {
            if let Some(n) = s.strip_prefix(name) {
                return match n.parse::<u32>() {
                    Ok(n) if n >= 2 => Ok(make(n)),
                    _ => Err(format!(
                        "{s}: N is the blocks read in order from each random one, 2 or more (e.g. {name}8; N = 1 is {})",
                        name.trim_end_matches("-run:")
                    )),
                };
            }
        }
        match s {
            "seq" | "sequential" => Ok(AccessPattern::Seq),
            "rand" | "random" => Ok(AccessPattern::Rand),
            "shuffle" => Ok(AccessPattern::Shuffle),
            _ => Err(format!("unknown pattern '{s}' (one of seq, rand, shuffle, stride:BYTES, rand-run:N, shuffle-run:N, zipf:THETA, pareto:H, normal:DEV)")),
        }
    }
}

/// A sync of the file after every `writes` completed writes of a worker:
/// `fsync`, or `fdatasync` with `data_only` (fio's `fsync=N`,
/// `fdatasync=N`; a database's commit, an etcd-style WAL test).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SyncEvery {
    /// Writes per sync, at least 1.
    pub writes: u32,
    /// `fdatasync` (data, and metadata only as reading it back needs)
    /// rather than `fsync`.
    pub data_only: bool,
}

impl SyncEvery {
    /// The system call's name.
    pub fn call(self) -> &'static str {
        if self.data_only {
            "fdatasync"
        } else {
            "fsync"
        }
    }
}

/// Files opened with `O_SYNC` or `O_DSYNC` (fio's `sync=1`/`sync`,
/// `sync=dsync`): every write returns once it is on stable storage.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OpenSync {
    /// O_SYNC: data and metadata.
    Sync,
    /// O_DSYNC: data (and the metadata needed to read it back).
    Dsync,
}

/// Trims among a write job's I/Os (fio's `rw=trim`, `randtrim`,
/// `trimwrite`, `randtrimwrite`): a trim frees the blocks of its range
/// (`fallocate(FALLOC_FL_PUNCH_HOLE)` on a file, as fio does on files).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrimMix {
    /// Every I/O is a trim (`trim`, `randtrim`); otherwise each write is
    /// preceded by a trim of the same range (`trimwrite`).
    pub only: bool,
}

/// serde's test for fields left out at 0.
fn is_zero(v: &u64) -> bool {
    *v == 0
}

/// `path.i`: the name of one of several files with one stem.
fn numbered(path: &std::path::Path, i: u32) -> PathBuf {
    let mut s = path.to_path_buf().into_os_string();
    s.push(format!(".{i}"));
    PathBuf::from(s)
}

/// serde's default for counts that are 1 unless said.
fn one() -> u32 {
    1
}

/// serde's test for counts left out at 1.
fn is_one(v: &u32) -> bool {
    *v == 1
}

/// Reads, writes, or a mix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", tag = "op")]
pub enum OpMix {
    /// Only reads.
    Read,
    /// Only writes (the pattern's own bytes, so the file stays verifiable).
    Write,
    /// Reads with probability `read_pct` %, writes otherwise.
    Rw {
        /// Percentage of reads, 0..=100.
        read_pct: u8,
    },
}

impl OpMix {
    /// Whether any op writes.
    pub fn writes(self) -> bool {
        !matches!(self, OpMix::Read)
    }

    /// Short name for tables.
    pub fn name(self) -> String {
        match self {
            OpMix::Read => "read".into(),
            OpMix::Write => "write".into(),
            OpMix::Rw { read_pct } => format!("rw{read_pct}"),
        }
    }
}

/// Page-cache state to establish before measuring.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CacheMode {
    /// Evict the file's pages (and check with mincore).
    Cold,
    /// Read the file once so it is resident (and check).
    Warm,
    /// Leave the cache as it is (residency is still measured).
    AsIs,
}

impl CacheMode {
    /// Name as the command line spells it.
    pub fn name(self) -> &'static str {
        match self {
            CacheMode::Cold => "cold",
            CacheMode::Warm => "warm",
            CacheMode::AsIs => "as-is",
        }
    }
}

impl FromStr for CacheMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "cold" => Ok(CacheMode::Cold),
            "warm" => Ok(CacheMode::Warm),
            "as-is" | "asis" => Ok(CacheMode::AsIs),
            _ => Err(format!(
                "unknown cache state '{s}' (one of cold, warm, as-is)"
            )),
        }
    }
}

/// When a run ends: whichever limit comes first. With no limit at all the
/// run reads (or writes) the data once.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StopRule {
    /// Total bytes over all threads.
    pub bytes: Option<u64>,
    /// Total ops over all threads.
    pub ops: Option<u64>,
    /// Measured time, ns (ramp not included).
    pub time_ns: Option<u64>,
}

/// Everything a run does.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorkloadSpec {
    /// Engine.
    pub engine: EngineKind,
    /// Reads, writes or a mix.
    pub op: OpMix,
    /// Visiting order.
    pub pattern: AccessPattern,
    /// Block (op) size, bytes.
    pub bs: u64,
    /// Ops in flight per thread.
    pub qd: u32,
    /// Ops handed to the engine per submit call.
    pub batch_submit: u32,
    /// Completions waited for before submitting again (when the queue is full).
    pub batch_complete: u32,
    /// Worker threads (0: run on the calling thread).
    pub threads: u32,
    /// One file per thread (`file.N`) instead of one shared file.
    pub file_per_thread: bool,
    /// The file (or the stem of per-thread files).
    pub file: PathBuf,
    /// More files after `file` (fio's `filename=a:b`): every worker
    /// spreads its ops over `file` and these, each op to the next file in
    /// turn (fio's default `file_service_type=roundrobin`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub more_files: Vec<PathBuf>,
    /// Files per name (fio's `nrfiles`): `file`, or each thread's
    /// `file.N`, stands for this many files `X.0` .. `X.{nrfiles-1}`, its
    /// ops going to each in turn. 1: the name itself.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub nrfiles: u32,
    /// Size of each file's I/O region, bytes (the whole file unless
    /// `offset` moves the region's start).
    pub file_size: u64,
    /// Where the I/O region of each file starts, bytes (fio's `offset`):
    /// every op lands in `offset..offset + file_size`, and a file iolab
    /// makes holds `offset + file_size` bytes.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub offset: u64,
    /// O_DIRECT.
    pub direct: bool,
    /// Cache state before measuring.
    pub cache: CacheMode,
    /// Drop the whole page cache (root) for a cold run.
    pub drop_caches: bool,
    /// Engine options (hipri, mmap touch, io_uring knobs).
    pub engine_opts: EngineOpts,
    /// Stop rule.
    pub stop: StopRule,
    /// Warm-up time not measured, ns.
    pub ramp_ns: u64,
    /// Per-interval samples every this many ns.
    pub interval_ns: Option<u64>,
    /// Seed of offsets (data pattern seeds come from the file).
    pub seed: u64,
    /// Check every byte read against the pattern.
    pub verify: bool,
    /// Fill each write buffer once and reuse it (as IOR, and fio without
    /// `refill_buffers`, do) instead of writing each offset's own pattern:
    /// writes then cost only the copy, and the file no longer holds the
    /// verifiable pattern (`--write-fill once`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub write_once: bool,
    /// Count failed ops and go on (fio's `continue_on_error`) instead of
    /// ending the run at the first.
    #[serde(default)]
    pub continue_on_error: bool,
    /// An op in flight longer than this ends the run with an error naming
    /// it, ns (None: no limit).
    #[serde(default)]
    pub op_timeout_ns: Option<u64>,
    /// Paced submission: at most this many ops per second over all
    /// threads (fio's `rate_iops`, or `rate` / bs), so latency can be
    /// measured under a given load. None: as fast as possible.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_iops: Option<u64>,
    /// A pause after each completion before the next op is issued, ns
    /// (fio's `thinktime`). None: no pause.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinktime_ns: Option<u64>,
    /// Time the submit call apart (fio's slat, with `disable_slat=0`): one
    /// more clock read per submit call, and submit and wait in separate
    /// calls. Only asynchronous engines have a submit call to time.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub time_submit: bool,
    /// Under MPI: this rank's place among the ranks and how they share the
    /// data (None: a single process).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub place: Option<crate::rank_place::RankPlace>,
    /// Sync the file every so many writes (fio's `fsync=N`/`fdatasync=N`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sync_every: Option<SyncEvery>,
    /// Which ops' latency is recorded (`--lat`: all, one in N, none).
    #[serde(default)]
    pub lat: crate::lat_record::LatRecord,
    /// Open the files O_NOATIME (`--noatime`, as t/io_uring does): reads
    /// skip the access-time check and update.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub noatime: bool,
    /// The CPUs worker threads run on (fio's `cpus_allowed`); None: any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<crate::pin::CpuPin>,
    /// Where workers go when `cpus` is None: next to the device's
    /// completion interrupts (the default) or wherever the scheduler puts
    /// them (`crate::placement`).
    #[serde(default)]
    pub placement: Placement,
    /// File → GPU per op (`--mem cuda:N`): each completed read's bytes are
    /// copied into the memory of GPU N before the op counts as done, so
    /// its latency covers the read and the copy. None: the op ends when
    /// the bytes are in host memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub copy_to_gpu: Option<u32>,
    /// What else holds an I/O back (fio's thinktime, rate, iodepth_low,
    /// flow, latency_target).
    #[serde(default, skip_serializing_if = "crate::pacing::Pacing::is_none")]
    pub pacing: crate::pacing::Pacing,
    /// Sizes that vary per I/O (fio's bssplit, bsrange, bs=R,W): `bs` is
    /// then the offsets' alignment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sizes: Option<crate::sizes::BlockSizes>,
    /// Which file each I/O goes to (fio's file_service_type).
    #[serde(default)]
    pub file_service: crate::service::FileService,
    /// What writes carry (fio's buffer options).
    #[serde(
        default,
        skip_serializing_if = "crate::content::WriteContent::keeps_pattern"
    )]
    pub content: crate::content::WriteContent,
    /// Open the files with O_SYNC / O_DSYNC (fio's `sync`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_sync: Option<OpenSync>,
    /// Trims among the writes (fio's trim workloads).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trim: Option<TrimMix>,
    /// O_DIRECT I/O need only follow the kernel's alignment (the logical
    /// block), as fio's does, rather than iolab's (the physical block).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub direct_logical: bool,
    /// Record every I/O (its time, latencies, direction, length and
    /// offset) for fio's logs.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub log_ops: bool,
    /// No files at all (fio's `ioengine=null`, which creates and opens
    /// none): the null engine's I/Os go nowhere.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_files: bool,
}

impl Default for WorkloadSpec {
    /// A one-thread, depth-1, 4 KiB sequential pread of `iolab.dat`, read
    /// once, cache as it is: the base that flags and tests change.
    fn default() -> Self {
        WorkloadSpec {
            engine: EngineKind::Pread,
            op: OpMix::Read,
            pattern: AccessPattern::Seq,
            bs: 4096,
            qd: 1,
            batch_submit: 1,
            batch_complete: 1,
            threads: 1,
            file_per_thread: false,
            file: PathBuf::from("iolab.dat"),
            more_files: Vec::new(),
            nrfiles: 1,
            file_size: 0,
            offset: 0,
            direct: false,
            cache: CacheMode::AsIs,
            drop_caches: false,
            engine_opts: EngineOpts::default(),
            stop: StopRule::default(),
            ramp_ns: 0,
            interval_ns: None,
            seed: 42,
            verify: false,
            write_once: false,
            continue_on_error: false,
            op_timeout_ns: None,
            rate_iops: None,
            thinktime_ns: None,
            time_submit: false,
            place: None,
            sync_every: None,
            lat: crate::lat_record::LatRecord::All,
            noatime: false,
            cpus: None,
            placement: Placement::Irq,
            copy_to_gpu: None,
            pacing: Default::default(),
            sizes: None,
            file_service: Default::default(),
            content: Default::default(),
            open_sync: None,
            trim: None,
            direct_logical: false,
            log_ops: false,
            no_files: false,
        }
    }
}

impl WorkloadSpec {
    /// Threads that do work (threads 0 still means one worker: the caller).
    pub fn workers(&self) -> u32 {
        self.threads.max(1)
    }

    /// The file each worker uses (with `nrfiles`, the stem of its files).
    pub fn file_of(&self, worker: u32) -> PathBuf {
        if self.file_per_thread {
            numbered(&self.file, worker)
        } else {
            self.file.clone()
        }
    }

    /// All distinct files of the run: each worker's in turn with
    /// `file_per_thread`, else the ones every worker shares.
    pub fn files(&self) -> Vec<PathBuf> {
        let names: Vec<PathBuf> = if self.file_per_thread {
            (0..self.workers()).map(|w| self.file_of(w)).collect()
        } else {
            std::iter::once(&self.file)
                .chain(&self.more_files)
                .cloned()
                .collect()
        };
        if self.nrfiles <= 1 {
            return names;
        }
        let n = self.nrfiles;
        names
            .iter()
            .flat_map(|s| (0..n).map(move |i| numbered(s, i)))
            .collect()
    }

    /// Where in [`WorkloadSpec::files`] the files of `worker` are.
    pub fn files_of(&self, worker: u32) -> std::ops::Range<usize> {
        let per_name = self.nrfiles.max(1) as usize;
        if self.file_per_thread {
            worker as usize * per_name..(worker as usize + 1) * per_name
        } else {
            0..(1 + self.more_files.len()) * per_name
        }
    }

    /// The longest I/O: each buffer's length (`bs`, or the largest of
    /// `sizes`).
    pub fn max_len(&self) -> u64 {
        self.sizes
            .as_ref()
            .map_or(self.bs, |s| s.max().max(self.bs))
    }

    /// The mean I/O length (`bs`, or the mean of `sizes` over the
    /// directions the run does): what a limit in bytes is divided by.
    pub fn mean_len(&self) -> f64 {
        let Some(s) = &self.sizes else {
            return self.bs as f64;
        };
        if self.trim.is_some_and(|t| t.only) {
            return s.trim.mean();
        }
        let r = match self.op {
            OpMix::Read => 1.0,
            OpMix::Write => 0.0,
            OpMix::Rw { read_pct } => read_pct as f64 / 100.0,
        };
        r * s.read.mean() + (1.0 - r) * s.write.mean()
    }

    /// Bytes each file needs: its region's end.
    pub fn file_end(&self) -> u64 {
        self.offset.saturating_add(self.file_size)
    }

    /// Total bytes the data set holds.
    pub fn data_bytes(&self) -> u64 {
        self.file_size * self.files().len() as u64
    }

    /// A compact label in the style of the Linux read-interfaces study:
    /// `P` pread, `U64B1` io_uring depth 64 batch 1, `M` fixed buffers, `F`
    /// registered files, `S` SQPOLL, `N` io_uring NOPs, `T2` two threads,
    /// `D` O_DIRECT, `>G0` each read copied on to GPU 0.
    pub fn label(&self) -> String {
        let u = &self.engine_opts.uring;
        let mut s = match self.engine.desc().label {
            Label::Plain(l) => l.to_string(),
            Label::Depth(l) => format!("{l}{}", self.qd),
            Label::DepthBatch(l) => format!("{l}{}B{}", self.qd, self.batch_submit),
            Label::Pool(l) => {
                let helpers = match self.engine_opts.pool_threads {
                    0 => self.qd,
                    n => n,
                };
                format!("{l}{}P{helpers}", self.qd)
            }
        };
        // Engine options, each only valid on its engine (`validate`).
        if self.engine_opts.hipri && self.engine == EngineKind::Preadv2 {
            s.push('H');
        }
        if self.engine_opts.mmap_touch {
            s.push('T');
        }
        if u.fixed_bufs {
            s.push('M');
        }
        if u.reg_files {
            s.push('F');
        }
        if self.workers() > 1 {
            s.push_str(&format!("T{}", self.workers()));
        }
        if u.sqpoll {
            s.push('S');
        }
        if u.nop {
            s.push('N');
        }
        if self.direct {
            s.push('D');
        }
        if let Some(n) = self.copy_to_gpu {
            s.push_str(&format!(">G{n}"));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn spec() -> WorkloadSpec {
        WorkloadSpec {
            engine: EngineKind::Uring,
            pattern: AccessPattern::Rand,
            qd: 64,
            threads: 2,
            file: PathBuf::from("/x/f"),
            file_size: 1 << 20,
            seed: 1,
            ..WorkloadSpec::default()
        }
    }

    #[test]
    fn labels_follow_the_study() {
        let mut s = spec();
        s.engine_opts.uring.fixed_bufs = true;
        s.engine_opts.uring.reg_files = true;
        assert_eq!(s.label(), "U64B1MFT2");
        s.engine_opts.uring.sqpoll = true;
        s.threads = 1;
        assert_eq!(s.label(), "U64B1MFS");
        s.engine = EngineKind::Pread;
        s.engine_opts = EngineOpts::default();
        assert_eq!(s.label(), "P");
        s.engine = EngineKind::Libaio;
        s.qd = 16;
        assert_eq!(s.label(), "A16B1");
        s.copy_to_gpu = Some(1);
        assert_eq!(s.label(), "A16B1>G1");
    }

    #[test]
    fn per_thread_files_are_numbered() {
        let mut s = spec();
        s.file_per_thread = true;
        assert_eq!(
            s.files(),
            vec![PathBuf::from("/x/f.0"), PathBuf::from("/x/f.1")]
        );
        assert_eq!(s.data_bytes(), 2 << 20);
    }

    #[test]
    fn lists_and_nrfiles_name_each_worker_s_files() {
        let mut s = spec();
        s.more_files = vec![PathBuf::from("/x/g")];
        assert_eq!(
            s.files(),
            vec![PathBuf::from("/x/f"), PathBuf::from("/x/g")]
        );
        assert_eq!((s.files_of(0), s.files_of(1)), (0..2, 0..2));
        s.more_files.clear();
        s.nrfiles = 2;
        assert_eq!(
            s.files(),
            vec![PathBuf::from("/x/f.0"), PathBuf::from("/x/f.1")]
        );
        // Per thread: fio's JOB.J.F, J the thread, F the file.
        s.file_per_thread = true;
        let names: Vec<String> = s.files().iter().map(|p| p.display().to_string()).collect();
        assert_eq!(names, ["/x/f.0.0", "/x/f.0.1", "/x/f.1.0", "/x/f.1.1"]);
        assert_eq!((s.files_of(0), s.files_of(1)), (0..2, 2..4));
        assert_eq!(s.data_bytes(), 4 << 20);
        let j = serde_json::to_string(&s).unwrap();
        assert_eq!(serde_json::from_str::<WorkloadSpec>(&j).unwrap(), s);
    }

    #[test]
    fn spec_round_trips_through_json() {
        let s = spec();
        let j = serde_json::to_string(&s).unwrap();
        let back: WorkloadSpec = serde_json::from_str(&j).unwrap();
        assert_eq!(s, back);
    }
}

/// Who decides where worker threads run when `--cpus` is not given.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Placement {
    /// On the CPUs that take the device's completion interrupts, when the
    /// run waits on the device (O_DIRECT or a cold cache) and it helps.
    #[default]
    Irq,
    /// Wherever the scheduler puts them (fio's default).
    Any,
}

impl std::str::FromStr for Placement {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "irq" => Ok(Placement::Irq),
            "any" => Ok(Placement::Any),
            _ => Err(format!(
                "'{s}': placement is irq (next to the device's completion interrupts) or any (the scheduler's choice)"
            )),
        }
    }
}
