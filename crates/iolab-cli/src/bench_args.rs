//! The flags of `iolab bench` ([`BenchArgs`], with the multi-rank ones in
//! [`RankArgs`]): a file of their own, so the checks (`limits`), the
//! multi-rank runs (`ranks`) and the command itself (`bench`) all read them
//! without importing each other.

use crate::export;
use crate::parse;
use anyhow::Result;
use iolab::engine::EngineKind;
use iolab_bench::lat_record::LatRecord;
use iolab_bench::pin::CpuPin;
use iolab_bench::rank_place::Layout;
use iolab_bench::spec::{AccessPattern, CacheMode};
use std::path::PathBuf;
use std::time::Duration;

fn engine(s: &str) -> Result<EngineKind, String> {
    s.parse()
}
fn pattern(s: &str) -> Result<AccessPattern, String> {
    s.parse()
}
fn cache(s: &str) -> Result<CacheMode, String> {
    s.parse()
}
fn mem(s: &str) -> Result<crate::mem_arg::MemArg, String> {
    s.parse()
}
fn cpu_list(s: &str) -> Result<CpuPin, String> {
    CpuPin::parse_list(s).map(|cpus| CpuPin {
        cpus,
        split: false,
        first: 0,
    })
}
fn placement(s: &str) -> Result<iolab_bench::spec::Placement, String> {
    s.parse()
}
fn sqpoll_wait(s: &str) -> Result<iolab::engine::SqpollWait, String> {
    s.parse()
}
fn lat(s: &str) -> Result<LatRecord, String> {
    s.parse()
}

/// How worker threads share the CPUs of `--cpus` (fio's
/// `cpus_allowed_policy`).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpusPolicy {
    /// Every thread may run on any CPU of the list.
    Shared,
    /// Each thread on one CPU of the list, in turn.
    Split,
}

/// What each write carries (`--write-fill`).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteFill {
    /// Every write carries its offset's pattern, so the file stays
    /// verifiable (`--verify`, `iolab xor`); costs a fill per write.
    Each,
    /// Each buffer is filled once and reused, as IOR and fio (without
    /// refill_buffers) do: writes cost only the copy; the file no longer
    /// holds the pattern.
    Once,
}

/// Reads, writes or both.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpArg {
    /// Only reads.
    Read,
    /// Only writes.
    Write,
    /// Reads and writes, `--read-pct` % reads.
    Rw,
}

/// Arguments of `iolab bench`.
#[derive(clap::Args, Debug, Clone)]
pub struct BenchArgs {
    /// Engine(s): read, pread, preadv2, stream, mmap, uring, libaio, posixaio, threadpool, null.
    #[arg(long, value_delimiter = ',', default_value = "pread", value_parser = engine)]
    pub engine: Vec<EngineKind>,
    /// Operation.
    #[arg(long, value_enum, default_value = "read")]
    pub op: OpArg,
    /// Percentage of reads with `--op rw`.
    #[arg(long, default_value_t = 70, value_parser = clap::value_parser!(u8).range(0..=100))]
    pub read_pct: u8,
    /// Access pattern(s): seq, rand (uniform, with replacement), shuffle (every
    /// block once), stride:BYTES (in order, skipping BYTES after each block:
    /// fio's rw=read:BYTES), rand-run:N (N blocks in order from each uniformly
    /// random one: fio's rw=randread:N with norandommap), shuffle-run:N (runs
    /// of N blocks, each once in random order: fio's rw=randread:N), or
    /// skewed like fio's random_distribution: zipf:THETA, pareto:H,
    /// normal:DEV (standard deviation in % of the file).
    #[arg(long, value_delimiter = ',', default_value = "seq", value_parser = pattern)]
    pub pattern: Vec<AccessPattern>,
    /// Block size(s), binary units (4k, 1m).
    #[arg(long, value_delimiter = ',', default_value = "4k", value_parser = parse::size)]
    pub bs: Vec<u64>,
    /// Ops in flight per thread (asynchronous engines).
    #[arg(long, value_delimiter = ',', default_value = "1")]
    pub qd: Vec<u32>,
    /// Ops handed to the engine per submit call.
    #[arg(
        long,
        alias = "batch-submit",
        value_delimiter = ',',
        default_value = "1"
    )]
    pub batch: Vec<u32>,
    /// Completions waited for before submitting again when the queue is full.
    #[arg(long, default_value_t = 1)]
    pub batch_complete: u32,
    /// Worker threads (0 = the main thread does the work).
    #[arg(long, value_delimiter = ',', default_value = "1")]
    pub threads: Vec<u32>,
    /// One file per thread (FILE.0, FILE.1, ...) instead of one shared file.
    #[arg(long)]
    pub file_per_thread: bool,
    /// The file to read (created with the verifiable pattern if missing and
    /// --size is given). Without it, a temporary file in --dir is used and removed.
    #[arg(long)]
    pub file: Option<PathBuf>,
    /// Several files (A:B:...), made like --file when missing: every thread
    /// spreads its ops over all of them, each op to the next file in turn
    /// (fio's filename=A:B with its default file_service_type=roundrobin).
    #[arg(long, value_name = "A:B", conflicts_with_all = ["file", "file_per_thread"])]
    pub files: Option<PathBuf>,
    /// Each file (--file, or each thread's FILE.T with --file-per-thread)
    /// becomes N files FILE.0 .. FILE.N-1, each op to the next in turn
    /// (fio's nrfiles; --size is each file's).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=65536))]
    pub nrfiles: u32,
    /// File size, and the amount a run moves when no other limit is given.
    #[arg(long, value_parser = parse::size)]
    pub size: Option<u64>,
    /// Where the I/O region of each file starts (fio's offset; e.g. 1g):
    /// ops land in [OFFSET, OFFSET + --size), a file made now holds both.
    #[arg(long, default_value = "0", value_parser = parse::size)]
    pub offset: u64,
    /// Directory for the temporary file when --file is not given.
    #[arg(long, default_value = ".")]
    pub dir: PathBuf,
    /// Run the worker threads only on these CPUs (fio's cpus_allowed;
    /// e.g. 0-1,3).
    #[arg(long, value_name = "LIST", value_parser = cpu_list)]
    pub cpus: Option<CpuPin>,
    /// How threads share --cpus: shared (each may use all) or split (each
    /// its own CPU, in turn); fio's cpus_allowed_policy.
    #[arg(long, value_enum, requires = "cpus")]
    pub cpus_policy: Option<CpusPolicy>,
    /// Without --cpus: irq puts a run that waits on the device (O_DIRECT,
    /// cache cold) on the CPUs that take its completion interrupts, when
    /// there is one per thread; any leaves it to the scheduler (fio's way).
    #[arg(long, default_value = "irq", value_name = "irq|any", value_parser = placement, conflicts_with = "cpus")]
    pub placement: iolab_bench::spec::Placement,
    /// Bypass the page cache (O_DIRECT).
    #[arg(long)]
    pub direct: bool,
    /// Page-cache state before each run: cold, warm, as-is.
    #[arg(long, default_value = "cold", value_parser = cache)]
    pub cache: CacheMode,
    /// With --cache cold: also drop the whole page cache (root).
    #[arg(long)]
    pub drop_caches: bool,
    /// Stop after this long (e.g. 10s); sequential runs wrap around. A cold
    /// read through the page cache stops sooner rather than read from
    /// memory (after one pass in order, or a few percent of the pages at
    /// random); --ops or --io-size sets the count instead.
    #[arg(long, value_parser = parse::duration)]
    pub time: Option<Duration>,
    /// Stop after this many ops (all threads).
    #[arg(long, value_parser = parse::count)]
    pub ops: Option<u64>,
    /// Stop after moving this many bytes (default: --size once).
    #[arg(long, value_parser = parse::size)]
    pub io_size: Option<u64>,
    /// Run this long before measuring.
    #[arg(long, value_parser = parse::duration)]
    pub ramp: Option<Duration>,
    /// Record and show per-interval samples (e.g. 1s).
    #[arg(long, value_parser = parse::duration)]
    pub interval: Option<Duration>,
    /// Run each configuration this many times.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub repeat: u32,
    /// Check every byte read against the pattern.
    #[arg(long)]
    pub verify: bool,
    /// What writes carry: each (every write its offset's pattern; default)
    /// or once (each buffer filled once and reused, like IOR and fio).
    #[arg(long, value_enum, default_value = "each")]
    pub write_fill: WriteFill,
    /// preadv2: set RWF_HIPRI (polled completion).
    #[arg(long)]
    pub hipri: bool,
    /// mmap: only fault pages in, copy nothing.
    #[arg(long)]
    pub mmap_touch: bool,
    /// uring: register the files.
    #[arg(long)]
    pub reg_files: bool,
    /// uring: register the buffers (READ_FIXED/WRITE_FIXED).
    #[arg(long)]
    pub fixed_bufs: bool,
    /// uring: kernel submission polling thread.
    #[arg(long)]
    pub sqpoll: bool,
    /// uring: SQPOLL idle time before sleeping, ms.
    #[arg(long)]
    pub sqpoll_idle: Option<u32>,
    /// uring: CPU for the SQPOLL thread.
    #[arg(long)]
    pub sqpoll_cpu: Option<u32>,
    /// With --sqpoll, how to wait for completions: spin on the CQ ring
    /// (fio's way), sleep in io_uring_enter, or auto (default: spin only
    /// when a core is free for the spinner and the SQ thread).
    #[arg(long, value_parser = sqpoll_wait)]
    pub sqpoll_wait: Option<iolab::engine::SqpollWait>,
    /// fsync the file after every N writes of a thread (fio's fsync=N).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..), conflicts_with = "fdatasync")]
    pub fsync: Option<u32>,
    /// fdatasync the file after every N writes of a thread (fio's
    /// fdatasync=N).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub fdatasync: Option<u32>,
    /// uring: busy-poll for completions (O_DIRECT, device with poll queues).
    #[arg(long)]
    pub iopoll: bool,
    /// uring: send NOPs instead of reads and writes, each naming the op's
    /// file and buffer and completing with its length (t/io_uring's -N1):
    /// the cost of the runner and the ring without I/O. Needs Linux 6.13+.
    #[arg(long)]
    pub uring_nop: bool,
    /// Open the files O_NOATIME, as t/io_uring does: reads skip the
    /// access-time check and update (the file's owner or root only).
    #[arg(long)]
    pub noatime: bool,
    /// Which ops' latency is recorded: all (default), sampled (1 op in 32,
    /// at random, so percentiles stay unbiased), sampled:N (1 in N), or off
    /// (counts, bytes and CPU only; fio's disable_lat, t/io_uring's -t0).
    #[arg(long, default_value = "all", value_name = "all|sampled[:N]|off", value_parser = lat)]
    pub lat: LatRecord,
    /// threadpool: helper threads (default: one per op in flight).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub pool_threads: Option<u32>,
    /// Buffer memory: thp (2 MiB-aligned, MADV_HUGEPAGE; default, chosen by
    /// measurement), malloc (ordinary pages), hugetlb (reserved huge pages,
    /// /proc/sys/vm/nr_hugepages). fio's mem=. Or cuda[:N]: huge-page
    /// buffers, and each read's bytes copied into GPU N's memory inside
    /// the op (its latency covers the read and the copy).
    #[arg(long, default_value = "thp", value_parser = mem)]
    pub mem: crate::mem_arg::MemArg,
    /// Bytes past a cache line where each buffer starts (0-63 with
    /// buffered I/O; default 16, chosen by measurement: the kernel's copy
    /// into a 64-byte-aligned buffer ran 10 % slower here; must be 0 with
    /// --direct, the default there).
    #[arg(long, value_parser = clap::value_parser!(u32).range(0..=63))]
    pub buf_offset: Option<u32>,
    /// Seed of the offsets (and of the pattern of files created now).
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// With --jsonl: skip configurations already recorded in that file (same
    /// spec, iolab version, host, kernel and device).
    #[arg(long)]
    pub resume: bool,
    /// Count failed ops and keep going (fio's continue_on_error); the record
    /// keeps the count and the first errors.
    #[arg(long)]
    pub continue_on_error: bool,
    /// End the run with an error naming the op when one is in flight longer
    /// than this (e.g. 5s; default: no limit).
    #[arg(long, value_parser = parse::duration)]
    pub op_timeout: Option<Duration>,
    /// Paced submission: at most this many ops per second over all threads
    /// (fio's rate_iops), to measure latency under a given load.
    #[arg(long, value_parser = parse::count, conflicts_with = "rate")]
    pub rate_iops: Option<u64>,
    /// Paced submission in bytes per second over all threads (fio's rate;
    /// e.g. 100m): --rate-iops = RATE / --bs.
    #[arg(long, value_parser = parse::size)]
    pub rate: Option<u64>,
    /// Pause after each completion before issuing the next op (fio's
    /// thinktime; e.g. 100us).
    #[arg(long, value_parser = parse::duration)]
    pub thinktime: Option<Duration>,
    /// Compare with another tool on the same file: `fio`.
    #[arg(long, value_name = "TOOL", value_parser = ["fio"])]
    pub vs: Option<String>,
    /// Print the fio job file of each configuration (the translation
    /// `--vs fio` runs) and exit without measuring.
    #[arg(long)]
    pub fio_job: bool,
    /// A process on each CPU the run may use (those of --cpus, else all)
    /// that wakes every DURATION, or off. Some virtual machines return from
    /// a completed I/O to the waiting thread faster when the CPU ran another
    /// task recently; fio's supervisor wakes every 10 ms, so --vs fio runs
    /// both tools next to 10 ms wakers unless told otherwise.
    #[arg(long, value_name = "DURATION|off", value_parser = crate::waker::parse_arg)]
    pub waker: Option<crate::waker::WakerArg>,
    /// With --vs: pairs of runs, alternating who goes first.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub pairs: u32,
    /// Print the fio command `--vs fio` would run for each configuration and
    /// exit, measuring nothing (`fair`: the null engine's fair-accounting
    /// command). Scripts use this so fio's options come from one translation.
    #[arg(long, hide = true, value_name = "WHICH", num_args = 0..=1,
          default_missing_value = "default", value_parser = ["default", "fair"])]
    pub print_fio: Option<String>,
    /// Outputs: --json, --jsonl, --csv, --overwrite.
    #[command(flatten)]
    pub out: export::flags::OutputArgs,
    /// Multi-rank runs under mpirun: --layout, --region, --segments, ...
    #[command(flatten)]
    pub ranks: RankArgs,
}

/// Flags of multi-rank runs (used only under `mpirun`).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct RankArgs {
    /// How ranks share files: per-rank (`--file 'data.{rank}'`), segmented
    /// or strided (one shared file, IOR's layouts).
    #[arg(long, value_parser = |s: &str| s.parse::<Layout>())]
    pub layout: Option<Layout>,
    /// Bytes of one rank's region per segment (IOR's -b; not --bs, the
    /// transfer size). Default: --size (per-rank) or --size / ranks (shared).
    #[arg(long, value_parser = crate::parse::size)]
    pub region: Option<u64>,
    /// Segments (IOR's -s).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    pub segments: u64,
    /// IOR's stonewalling deadline (-D): every rank stops its I/O this long
    /// after the common start (not fio's stonewall).
    #[arg(long, value_parser = crate::parse::duration)]
    pub deadline: Option<Duration>,
    /// After the deadline, every rank goes on until it has done as many ops
    /// as the busiest rank had (IOR's stoneWallingWearOut): both the
    /// figure at the deadline and the whole run's are reported.
    #[arg(long)]
    pub wearout: bool,
    /// Each rank works on the data of the next rank (IOR's -C): a read that
    /// follows a write then reads what another rank wrote.
    #[arg(long)]
    pub reorder: bool,
    /// fsync every written file before the I/O phase ends (fio's end_fsync;
    /// counted in the phase's time, as IOR's -e).
    #[arg(long)]
    pub fsync_on_close: bool,
}

impl BenchArgs {
    /// The files --file or --files names (None: a temporary file).
    pub fn named_files(&self) -> Option<Vec<PathBuf>> {
        match (&self.file, &self.files) {
            (Some(f), _) => Some(vec![f.clone()]),
            (None, Some(list)) => {
                use std::os::unix::ffi::OsStrExt;
                let names = list.as_os_str().as_bytes().split(|b| *b == b':');
                Some(
                    names
                        .filter(|n| !n.is_empty())
                        .map(|n| PathBuf::from(std::ffi::OsStr::from_bytes(n)))
                        .collect(),
                )
            }
            (None, None) => None,
        }
    }
}

impl RankArgs {
    /// Whether any multi-rank flag was given.
    pub fn any(&self) -> bool {
        self.layout.is_some()
            || self.region.is_some()
            || self.segments != 1
            || self.deadline.is_some()
            || self.wearout
            || self.reorder
            || self.fsync_on_close
    }
}
