//! fio jobs onto iolab's workload spec. Everything that cannot be mapped
//! faithfully is refused here, before anything runs, naming the file, line
//! and option.

use super::options::{self, Class};
use super::parse::{RawJob, RawOpt};
use super::value::{self, Size};
use super::{FioJobError, Loc};
use iolab::engine::{EngineKind, EngineOpts};
use iolab_bench::pin::CpuPin;
use iolab_bench::spec::{AccessPattern, CacheMode, OpMix, StopRule, SyncEvery, WorkloadSpec};
use std::path::PathBuf;

/// fio's default percentile list.
pub const FIO_PERCENTILES: [f64; 17] = [
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95,
    99.99,
];

/// fio's bandwidth/IOPS sampling period when no log asks otherwise, ms.
pub const FIO_AVG_MSEC: u64 = 500;

/// The log files a job asks for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Logs {
    /// `write_bw_log` prefix.
    pub bw: Option<String>,
    /// `write_lat_log` prefix.
    pub lat: Option<String>,
    /// `write_iops_log` prefix.
    pub iops: Option<String>,
    /// `log_avg_msec`.
    pub avg_msec: u64,
}

impl Logs {
    /// Whether any log is asked for.
    pub fn any(&self) -> bool {
        self.bw.is_some() || self.lat.is_some() || self.iops.is_some()
    }
}

/// One fio job as iolab will run it.
#[derive(Clone, Debug, PartialEq)]
pub struct FioJob {
    /// Job name.
    pub name: String,
    /// Where the job's section (or `--name`) is.
    pub loc: Loc,
    /// fio's group id (bumped by `stonewall` and `new_group`).
    pub groupid: u32,
    /// What iolab runs (`numjobs` are its threads).
    pub spec: WorkloadSpec,
    /// `numjobs`.
    pub numjobs: u32,
    /// `group_reporting`.
    pub group_reporting: bool,
    /// `stonewall` / `wait_for_previous`.
    pub stonewall: bool,
    /// `startdelay`, ns.
    pub startdelay_ns: u64,
    /// A size (or filesize) was given, so a missing file may be created.
    pub size_given: bool,
    /// `allow_file_create` (default 1).
    pub allow_file_create: bool,
    /// `unlink`: remove the files this run created when the job ends.
    pub unlink: bool,
    /// `end_fsync`: fsync the job's files when its writes end, inside its
    /// measured time (as fio counts it).
    pub end_fsync: bool,
    /// `clat_percentiles` (default 1).
    pub clat_percentiles: bool,
    /// `lat_percentiles` (default 0).
    pub lat_percentiles: bool,
    /// `slat_percentiles` (default 0).
    pub slat_percentiles: bool,
    /// `percentile_list` (fio's default list otherwise).
    pub percentiles: Vec<f64>,
    /// Logs.
    pub logs: Logs,
    /// The job's own options as written (fio's "job options").
    pub job_options: Vec<(String, String)>,
    /// The `[global]` options that apply (fio's "global options").
    pub global_options: Vec<(String, String)>,
    /// How fio's terms were mapped (printed by `--parse-only`).
    pub notes: Vec<String>,
    /// Options tolerated with `--lenient`.
    pub warnings: Vec<String>,
}

/// The last value given for each option, with where it was given.
struct Given<'a> {
    opts: Vec<(&'static str, &'a RawOpt)>,
}

impl<'a> Given<'a> {
    /// Position of the last `k` given (later options override earlier ones).
    fn pos(&self, k: &str) -> Option<usize> {
        self.opts.iter().rposition(|(n, _)| *n == k)
    }
    fn get(&self, k: &str) -> Option<&'a RawOpt> {
        self.opts
            .iter()
            .rev()
            .find(|(n, _)| *n == k)
            .map(|(_, o)| *o)
    }
    fn val(&self, k: &str) -> Option<(&'a str, &'a Loc)> {
        self.get(k)
            .map(|o| (o.value.as_deref().unwrap_or(""), &o.loc))
    }
    fn flag(&self, k: &str, default: bool) -> Result<bool, FioJobError> {
        match self.get(k) {
            None => Ok(default),
            Some(o) => {
                value::boolean(o.value.as_deref()).map_err(|e| o.loc.err(format!("{}: {e}", o.key)))
            }
        }
    }
    fn int(&self, k: &str) -> Result<Option<u64>, FioJobError> {
        self.parse(k, value::int)
    }
    fn parse<T>(
        &self,
        k: &str,
        f: impl Fn(&str) -> Result<T, String>,
    ) -> Result<Option<T>, FioJobError> {
        match self.get(k) {
            None => Ok(None),
            Some(o) => {
                let v = o.value.as_deref().ok_or_else(|| {
                    o.loc
                        .err(format!("{}: needs a value ({}=...)", o.key, o.key))
                })?;
                f(v).map(Some)
                    .map_err(|e| o.loc.err(format!("{}: {e}", o.key)))
            }
        }
    }
    fn refuse(&self, k: &str, why: &str) -> FioJobError {
        let o = self.get(k).expect("refused option was given");
        o.loc.err(format!(
            "{}={}: {why}",
            o.key,
            o.value.as_deref().unwrap_or("")
        ))
    }
}

fn opt_string(o: &RawOpt) -> (String, String) {
    (o.key.clone(), o.value.clone().unwrap_or_default())
}

fn engine_of(name: &str) -> Result<EngineKind, String> {
    if let Some(k) = EngineKind::of_fio(name) {
        return Ok(k);
    }
    if matches!(name, "vsync" | "pvsync") {
        return Err(format!(
            "'{name}' (readv/preadv of one buffer) is not an iolab engine; pvsync2 (preadv2) or psync (pread) are"
        ));
    }
    let ours: Vec<&str> = iolab::engine::ENGINES
        .iter()
        .filter_map(|d| d.fio.ok())
        .collect();
    Err(format!(
        "'{name}' is not an engine iolab has ({})",
        ours.join(", ")
    ))
}

/// `rw` into (ops, random, its `:N`: the bytes skipped after each
/// sequential I/O, or the I/Os per random offset, 0 when not given).
fn rw_of(v: &str) -> Result<(OpMix, bool, u64), String> {
    let (mode, suffix) = match v.split_once(':') {
        Some((m, s)) => (m, Some(s)),
        None => (v, None),
    };
    let (op, random) = match mode {
        "read" => (OpMix::Read, false),
        "write" => (OpMix::Write, false),
        "randread" => (OpMix::Read, true),
        "randwrite" => (OpMix::Write, true),
        "rw" | "readwrite" => (OpMix::Rw { read_pct: 50 }, false),
        "randrw" => (OpMix::Rw { read_pct: 50 }, true),
        "trim" | "randtrim" | "trimwrite" | "randtrimwrite" => {
            return Err(format!("'{mode}': iolab does not issue trims"))
        }
        _ => {
            return Err(format!(
                "'{mode}' is not an I/O pattern (read, write, randread, randwrite, rw, randrw)"
            ))
        }
    };
    let n = match suffix {
        None => 0,
        Some(n) if random => n
            .parse::<u32>()
            .map_err(|_| format!("':{n}': the I/Os per random offset, a number (e.g. :8)"))?
            .into(),
        Some(n) => super::value::bytes(n).map_err(|e| format!(":{n}: {e}"))?,
    };
    Ok((op, random, n))
}

/// `bs=R,W,T`: the read and write block sizes (empty fields keep 4k).
fn bs_of(v: &str) -> Result<(u64, u64), String> {
    let parts: Vec<&str> = v.split(',').collect();
    let one = |s: &str| -> Result<Option<u64>, String> {
        if s.trim().is_empty() {
            Ok(None)
        } else {
            value::bytes(s).map(Some)
        }
    };
    let r = one(parts[0])?.unwrap_or(4096);
    let w = match parts.get(1) {
        Some(s) => one(s)?.unwrap_or(4096),
        // One value sets every direction.
        None => r,
    };
    Ok((r, w))
}

/// `bsrange=lo-hi[,lo-hi]`: only a single size per direction is supported.
fn bsrange_of(v: &str) -> Result<(u64, u64), String> {
    let mut out = Vec::new();
    for part in v.split(',').take(2) {
        let (lo, hi) = part
            .split_once('-')
            .ok_or_else(|| format!("'{part}': a range is LOW-HIGH (e.g. 4k-4k)"))?;
        let (lo, hi) = (value::bytes(lo)?, value::bytes(hi)?);
        if lo != hi {
            return Err(format!(
                "'{part}': iolab uses one block size per direction; write bs= instead of a range"
            ));
        }
        out.push(lo);
    }
    Ok((out[0], *out.get(1).unwrap_or(&out[0])))
}

fn percentiles_of(v: &str) -> Result<Vec<f64>, String> {
    let mut out = Vec::new();
    for p in v.split(':') {
        let x: f64 = p
            .trim()
            .parse()
            .map_err(|_| format!("'{p}': percentiles are numbers separated by ':'"))?;
        if !(0.0..=100.0).contains(&x) {
            return Err(format!("'{p}': a percentile is between 0 and 100"));
        }
        out.push(x);
    }
    Ok(out)
}

/// Maps one job. `index` is its position among all jobs; `groupid` its
/// fio group. Options iolab does not support are refused; cosmetic ones
/// too unless `lenient` (then they are warnings). One step per family of
/// options, in the order fio's documentation lists them.
// Long only by its two struct literals (the spec and the job), one field
// a line; the logic is in the steps it calls.
pub fn map_job(job: &RawJob, groupid: u32, lenient: bool) -> Result<FioJob, FioJobError> {
    let (given, warnings) = classify(job, lenient)?;
    let g = &given;
    let mut notes = Vec::new();
    let (engine, opts) = engine_of_job(g)?;
    let Direction {
        op,
        random,
        bs,
        pattern,
        seed,
    } = direction(g, &mut notes)?;
    let Queue {
        numjobs,
        qd,
        batch_submit,
        batch_complete,
    } = queue(g, engine, &mut notes)?;
    let (direct, cache) = caching(g)?;
    let files = files(g, job, (numjobs, bs, random), &mut notes)?;
    let (stop, ramp_ns, startdelay_ns) = how_long(g, &files, numjobs)?;
    let (rate_iops, thinktime_ns) = pacing(g, bs, numjobs, &mut notes)?;
    refuse_unsupported(g)?;
    let continue_on_error = continue_on_error(g)?;
    let (logs, interval_ms, percentiles) = output(g, job)?;
    let (time_submit, slat_percentiles) = latency(g, engine, &mut notes)?;
    let Files {
        file,
        file_per_thread,
        more_files,
        nrfiles,
        region,
        offset,
        size_given,
        ..
    } = files;
    let spec = WorkloadSpec {
        engine,
        op,
        pattern,
        bs,
        qd,
        batch_submit,
        batch_complete,
        threads: numjobs,
        file_per_thread,
        file,
        more_files,
        nrfiles,
        // The run covers `region` of the file; iolab's spec calls that file_size.
        file_size: region,
        offset,
        direct,
        cache,
        drop_caches: false,
        engine_opts: opts,
        stop,
        ramp_ns,
        interval_ns: Some(interval_ms * 1_000_000),
        seed,
        verify: false,
        write_once: false,
        continue_on_error,
        op_timeout_ns: None,
        rate_iops,
        thinktime_ns,
        time_submit,
        place: None,
        // fio ignores them on a job that does not write.
        sync_every: if op.writes() { sync_every(g)? } else { None },
        cpus: cpus(g)?,
        placement: iolab_bench::spec::Placement::Irq,
        lat: Default::default(),
        noatime: false,
    };
    let spec_check = iolab_bench::prepare::validate(&spec);
    if let Err(e) = spec_check {
        return Err(job.loc.err(format!("job '{}': {e}", job.name)));
    }
    let group_reporting = g.flag("group_reporting", false)?;
    if numjobs > 1 && !group_reporting {
        notes.push(format!(
            "numjobs={numjobs} without group_reporting: iolab measures its threads together and reports them as one group"
        ));
    }
    Ok(FioJob {
        name: job.name.clone(),
        loc: job.loc.clone(),
        groupid,
        spec,
        numjobs,
        group_reporting,
        stonewall: g.flag("stonewall", false)?,
        startdelay_ns,
        size_given,
        allow_file_create: g.flag("allow_file_create", true)?,
        unlink: g.flag("unlink", false)?,
        end_fsync: g.flag("end_fsync", false)? && op.writes(),
        clat_percentiles: g.flag("clat_percentiles", true)?,
        lat_percentiles: g.flag("lat_percentiles", false)?,
        slat_percentiles,
        percentiles,
        logs,
        job_options: job.opts[job.n_global..].iter().map(opt_string).collect(),
        global_options: job.opts[..job.n_global].iter().map(opt_string).collect(),
        notes,
        warnings,
    })
}

/// Sorts the job's options: mapped ones are kept (with fio's canonical
/// name), cosmetic ones warned about (`lenient`) or refused, the rest refused.
fn classify(job: &RawJob, lenient: bool) -> Result<(Given<'_>, Vec<String>), FioJobError> {
    let mut warnings = Vec::new();
    let mut given = Given { opts: Vec::new() };
    for o in &job.opts {
        let key = options::canonical(&o.key);
        match options::class(key) {
            Class::Mapped => {
                let k = options::MAPPED
                    .iter()
                    .find(|m| **m == key)
                    .expect("mapped name");
                given.opts.push((k, o));
            }
            Class::Cosmetic => {
                let msg = format!(
                    "{}: option '{}' changes only fio's presentation; ignored",
                    o.loc, o.key
                );
                if lenient {
                    warnings.push(msg);
                } else {
                    return Err(o.loc.err(format!(
                        "option '{}': known to fio but not supported by iolab (it does not change what is measured: --lenient ignores it with a warning)",
                        o.key
                    )));
                }
            }
            Class::Refused(why) => {
                return Err(o.loc.err(format!(
                    "option '{}': known to fio but not supported by iolab: {why}",
                    o.key
                )))
            }
            Class::Unknown => {
                return Err(o.loc.err(format!(
                    "option '{}': unknown (not an option fio documents; check the spelling)",
                    o.key
                )))
            }
        }
    }
    Ok((given, warnings))
}

/// `ioengine` and the options that depend on it.
fn engine_of_job(g: &Given) -> Result<(EngineKind, EngineOpts), FioJobError> {
    let engine = match g.val("ioengine") {
        Some((v, loc)) => engine_of(v).map_err(|e| loc.err(format!("ioengine={v}: {e}")))?,
        None => EngineKind::Pread,
    };
    let mut opts = EngineOpts::default();
    for (k, only) in [
        ("fixedbufs", EngineKind::Uring),
        ("registerfiles", EngineKind::Uring),
        ("sqthread_poll", EngineKind::Uring),
        ("sqthread_poll_cpu", EngineKind::Uring),
    ] {
        if g.get(k).is_some() && engine != only {
            return Err(g.refuse(k, "an io_uring option; this job's ioengine is not io_uring"));
        }
    }
    opts.uring.fixed_bufs = g.flag("fixedbufs", false)?;
    opts.uring.reg_files = g.flag("registerfiles", false)?;
    opts.uring.sqpoll = g.flag("sqthread_poll", false)?;
    if let Some(c) = g.int("sqthread_poll_cpu")? {
        opts.uring.sqpoll_cpu = Some(c as u32);
        if !opts.uring.sqpoll {
            return Err(g.refuse("sqthread_poll_cpu", "needs sqthread_poll=1"));
        }
    }
    if g.flag("hipri", false)? {
        match engine {
            EngineKind::Preadv2 => opts.hipri = true,
            EngineKind::Uring => opts.uring.iopoll = true,
            _ => return Err(g.refuse("hipri", "only pvsync2 and io_uring take hipri")),
        }
    }
    Ok((engine, opts))
}

/// What `rw`, `bs`/`bsrange` and the random options decide.
struct Direction {
    op: OpMix,
    random: bool,
    bs: u64,
    pattern: AccessPattern,
    seed: u64,
}

/// Direction, pattern, block size and seed.
fn direction(g: &Given, notes: &mut Vec<String>) -> Result<Direction, FioJobError> {
    let (mut op, random, gap) = match g.val("rw") {
        Some((v, loc)) => rw_of(v).map_err(|e| loc.err(format!("rw={v}: {e}")))?,
        None => (OpMix::Read, false, 0),
    };
    if let OpMix::Rw { read_pct } = &mut op {
        if let Some(r) = g.int("rwmixread")? {
            *read_pct = r.min(100) as u8;
        }
        if let Some(w) = g.int("rwmixwrite")? {
            if g.pos("rwmixread") < g.pos("rwmixwrite") {
                *read_pct = 100 - w.min(100) as u8;
            }
        }
    }
    let (rbs, wbs) = if let Some((r, w)) = g.parse("bsrange", bsrange_of)? {
        if g.pos("bs") > g.pos("bsrange") {
            g.parse("bs", bs_of)?.expect("bs given")
        } else {
            (r, w)
        }
    } else {
        g.parse("bs", bs_of)?.unwrap_or((4096, 4096))
    };
    let bs = match op {
        OpMix::Read => rbs,
        OpMix::Write => wbs,
        OpMix::Rw { .. } => {
            if rbs != wbs {
                let k = if g.get("bs").is_some() {
                    "bs"
                } else {
                    "bsrange"
                };
                return Err(g.refuse(
                    k,
                    "iolab uses one block size for reads and writes of a mixed job; give one size",
                ));
            }
            rbs
        }
    };
    let pattern = pattern_of(g, random, gap, notes)?;
    let seed = match g.int("randseed")? {
        Some(s) => s,
        None => {
            if g.flag("randrepeat", true)? {
                42
            } else {
                iolab_bench::record::unix_ms()
            }
        }
    };
    Ok(Direction {
        op,
        random,
        bs,
        pattern,
        seed,
    })
}

/// The offsets' pattern: `rw`'s order (and its `:N`: a gap, or I/Os per
/// random offset), the random map and `random_distribution`.
fn pattern_of(
    g: &Given,
    random: bool,
    gap: u64,
    notes: &mut Vec<String>,
) -> Result<AccessPattern, FioJobError> {
    if random && gap > 1 {
        return run_pattern(g, gap, notes);
    }
    let mut pattern = if !random {
        if gap > 0 {
            notes.push(format!(
                "rw=...:{gap}: {gap} bytes skipped after each I/O (iolab pattern stride:{gap})"
            ));
            AccessPattern::Stride(gap)
        } else {
            AccessPattern::Seq
        }
    } else if g.flag("norandommap", false)? {
        notes.push(
            "norandommap: uniformly random offsets with replacement (iolab pattern rand)".into(),
        );
        AccessPattern::Rand
    } else {
        notes.push("random map: every block once in random order (iolab pattern shuffle)".into());
        AccessPattern::Shuffle
    };
    if let Some((v, loc)) = g.val("random_distribution") {
        match iolab_bench::skew::Skew::parse(v) {
            _ if v == "random" => {}
            Some(Ok(k)) if random => {
                // fio turns its random map off for these laws, as iolab draws.
                notes.push(format!("random_distribution={v}: iolab pattern {k}"));
                pattern = AccessPattern::Skewed(k);
            }
            Some(Ok(_)) => {}
            Some(Err(e)) => return Err(loc.err(format!("random_distribution={v}: {e}"))),
            None => {
                return Err(loc.err(format!(
                    "random_distribution={v}: iolab draws random, zipf:THETA, pareto:H and normal:DEV (not zoned)"
                )))
            }
        }
    }
    Ok(pattern)
}

/// `rw=randread:N` (N > 1): N I/Os per random offset, the ones between
/// sequential (fio's default `rw_sequencer=sequential`).
fn run_pattern(g: &Given, n: u64, notes: &mut Vec<String>) -> Result<AccessPattern, FioJobError> {
    let n = u32::try_from(n).map_err(|_| g.refuse("rw", "too many I/Os per random offset"))?;
    if g.val("random_distribution")
        .is_some_and(|(v, _)| v != "random")
    {
        return Err(g.refuse(
            "random_distribution",
            "iolab draws runs of rw=...:N from the uniform law only (random_distribution=random)",
        ));
    }
    Ok(if g.flag("norandommap", false)? {
        notes.push(format!("rw=...:{n} with norandommap: {n} blocks in order from each uniformly random one (iolab pattern rand-run:{n})"));
        AccessPattern::RandRun(n)
    } else {
        notes.push(format!("rw=...:{n} with the random map: the file in runs of {n} blocks, every run once in random order (iolab pattern shuffle-run:{n}; fio's runs start at any free block, iolab's at multiples of {n})"));
        AccessPattern::ShuffleRun(n)
    })
}

/// Threads, queue depth and batches.
struct Queue {
    numjobs: u32,
    qd: u32,
    batch_submit: u32,
    batch_complete: u32,
}

/// `numjobs`, `iodepth` and the batch options.
fn queue(g: &Given, engine: EngineKind, notes: &mut Vec<String>) -> Result<Queue, FioJobError> {
    let numjobs = g.int("numjobs")?.unwrap_or(1);
    if numjobs == 0 || numjobs > 4096 {
        return Err(g.refuse("numjobs", "must be 1..=4096"));
    }
    let numjobs = numjobs as u32;
    let mut qd = g.int("iodepth")?.unwrap_or(1).max(1) as u32;
    if engine.is_sync() && qd > 1 {
        notes.push(format!(
            "iodepth={qd} with the synchronous engine {}: one op in flight, as fio does",
            engine
        ));
        qd = 1;
    }
    let batch_submit = g.int("iodepth_batch")?.unwrap_or(1).max(1) as u32;
    let batch_complete = g.int("iodepth_batch_complete_min")?.unwrap_or(1).max(1) as u32;
    if batch_submit > qd {
        return Err(g.refuse("iodepth_batch", &format!("more than iodepth ({qd})")));
    }
    if batch_complete > qd {
        return Err(g.refuse(
            "iodepth_batch_complete_min",
            &format!("more than iodepth ({qd})"),
        ));
    }
    if g.get("iodepth_batch_complete_max").is_some() {
        notes.push(
            "iodepth_batch_complete_max: iolab reaps every completion available, up to iodepth"
                .into(),
        );
    }
    Ok(Queue {
        numjobs,
        qd,
        batch_submit,
        batch_complete,
    })
}

/// `direct`/`buffered` and `invalidate`.
fn caching(g: &Given) -> Result<(bool, CacheMode), FioJobError> {
    let mut direct = g.flag("direct", false)?;
    if let Some(b) = g.get("buffered") {
        let buffered =
            value::boolean(b.value.as_deref()).map_err(|e| b.loc.err(format!("buffered: {e}")))?;
        if g.pos("direct") < g.pos("buffered") {
            direct = !buffered;
        }
    }
    let cache = if g.flag("invalidate", true)? {
        CacheMode::Cold
    } else {
        CacheMode::AsIs
    };
    Ok((direct, cache))
}

/// Which file a job reads and how much of it.
struct Files {
    file: PathBuf,
    file_per_thread: bool,
    more_files: Vec<PathBuf>,
    nrfiles: u32,
    /// Files per thread (fio: per job), which share `size` between them.
    nfiles: u64,
    /// The part of the file the run covers (all slices with `increment`).
    region: u64,
    /// Where that part starts (`offset`).
    offset: u64,
    size_given: bool,
    increment: Option<u64>,
    /// The file's length, if it exists (for sizes given in %).
    existing: Option<u64>,
}

/// A size option in bytes, a percentage resolved against `existing`.
fn resolve_size(g: &Given, existing: Option<u64>, k: &str) -> Result<Option<u64>, FioJobError> {
    Ok(match g.parse(k, value::size)? {
        None => None,
        Some(Size::Bytes(b)) => Some(b),
        Some(Size::Percent(p)) => {
            let len = existing
                .ok_or_else(|| g.refuse(k, "a percentage of a file that does not exist yet"))?;
            Some((len as f64 * p / 100.0) as u64)
        }
    })
}

/// `offset`: bytes, or a percentage of the existing file aligned down to
/// the block size (as fio aligns it, with its default `offset_align`).
fn offset_of(g: &Given, existing: Option<u64>, bs: u64) -> Result<u64, FioJobError> {
    let percent = matches!(g.parse("offset", value::size)?, Some(Size::Percent(_)));
    let offset = resolve_size(g, existing, "offset")?.unwrap_or(0);
    Ok(if percent { offset / bs * bs } else { offset })
}

/// The job's files as iolab names them (see [`file_name`]).
struct Names {
    /// The file, or the stem of per-thread files.
    file: PathBuf,
    /// One file (or `nrfiles`) per thread: STEM.N.
    file_per_thread: bool,
    /// The rest of a `filename=a:b` list.
    more_files: Vec<PathBuf>,
    /// `nrfiles`: each name stands for NAME.0 .. NAME.{n-1}.
    nrfiles: u32,
}

impl Names {
    /// Files each thread spreads its ops over.
    fn per_thread(&self) -> u64 {
        (1 + self.more_files.len() as u64) * self.nrfiles as u64
    }

    /// The first file's path (the one sizes in % are taken from).
    fn first(&self) -> PathBuf {
        let mut s = self.file.clone().into_os_string();
        if self.file_per_thread {
            s.push(".0");
        }
        if self.nrfiles > 1 {
            s.push(".0");
        }
        PathBuf::from(s)
    }
}

/// `nrfiles` (default 1), and `file_service_type`, which iolab takes as
/// fio's default only.
fn nrfiles(g: &Given) -> Result<u32, FioJobError> {
    if let Some((v, _)) = g.val("file_service_type") {
        if v.trim() != "roundrobin" {
            return Err(g.refuse(
                "file_service_type",
                "iolab sends each I/O to the next file in turn (file_service_type=roundrobin)",
            ));
        }
    }
    match g.int("nrfiles")? {
        None => Ok(1),
        Some(n) if (1..=65536).contains(&n) => Ok(n as u32),
        Some(_) => Err(g.refuse("nrfiles", "must be 1..=65536")),
    }
}

/// `filename_format`: iolab names per-thread files STEM.$jobnum, and with
/// nrfiles > 1 STEM.$jobnum.$filenum; the stem, and whether it is per
/// thread.
fn format_stem(
    v: &str,
    loc: &Loc,
    numjobs: u32,
    nrfiles: u32,
) -> Result<(PathBuf, bool), FioJobError> {
    let stem = if nrfiles > 1 {
        v.strip_suffix(".$filenum")
    } else {
        Some(v)
    }
    .and_then(|s| s.strip_suffix(".$jobnum"))
    .filter(|s| !s.contains('$'))
    .ok_or_else(|| {
        loc.err(format!(
            "filename_format={v}: iolab names per-thread files STEM.$jobnum (with nrfiles > 1, STEM.$jobnum.$filenum) only"
        ))
    })?;
    Ok(if numjobs > 1 {
        (PathBuf::from(stem), true)
    } else {
        // One job: fio's $jobnum is 0.
        (PathBuf::from(format!("{stem}.0")), false)
    })
}

/// `filename` (a ':'-separated list: every thread uses every file),
/// `directory`, `filename_format` and `nrfiles`: the job's files.
fn file_name(
    g: &Given,
    job: &RawJob,
    numjobs: u32,
    notes: &mut Vec<String>,
) -> Result<Names, FioJobError> {
    let nrfiles = nrfiles(g)?;
    let dir = g.val("directory").map(|(v, _)| PathBuf::from(v));
    let in_dir = |p: PathBuf| match &dir {
        Some(d) if p.is_relative() => d.join(p),
        _ => p,
    };
    let format = g
        .val("filename_format")
        .filter(|_| g.get("filename").is_none());
    let mut more_files = Vec::new();
    let (file, file_per_thread) = if let Some((v, loc)) = format {
        let (stem, per_thread) = format_stem(v, loc, numjobs, nrfiles)?;
        (in_dir(stem), per_thread)
    } else if let Some((v, _)) = g.val("filename") {
        let mut names = v
            .split(':')
            .filter(|s| !s.is_empty())
            .map(|n| in_dir(n.into()));
        let first = names
            .next()
            .ok_or_else(|| g.refuse("filename", "names no file"))?;
        more_files = names.collect();
        if nrfiles > 1 {
            return Err(g.refuse(
                "nrfiles",
                "with filename=, the files are the ones it names (filename=a:b)",
            ));
        }
        (first, false)
    } else {
        let d = dir.clone().unwrap_or_else(|| PathBuf::from("."));
        // fio's names are JOB.$jobnum.$filenum; iolab's numbers the files
        // only when there are several.
        let name = &job.name;
        if numjobs == 1 {
            let stem = if nrfiles > 1 { "" } else { ".0" };
            (d.join(format!("{name}.0{stem}")), false)
        } else {
            notes.push(if nrfiles > 1 {
                format!("no filename: one set of files per thread, {name}.N.F (as fio names them)")
            } else {
                format!("no filename: one file per thread, {name}.N (fio names them {name}.N.0)")
            });
            (d.join(name), true)
        }
    };
    let names = Names {
        file,
        file_per_thread,
        more_files,
        nrfiles,
    };
    if names.per_thread() > 1 {
        notes.push(format!(
            "{} files: each thread's I/Os go to each of its files in turn (file_service_type=roundrobin), each file its own offsets",
            names.per_thread()
        ));
    }
    Ok(names)
}

/// The file (see [`file_name`]), `offset` (see [`offset_of`]),
/// `offset_increment`, `size` and `filesize`: which file and which part of
/// it, [offset, offset + size) as in fio.
fn files(
    g: &Given,
    job: &RawJob,
    (numjobs, bs, random): (u32, u64, bool),
    notes: &mut Vec<String>,
) -> Result<Files, FioJobError> {
    let names = file_name(g, job, numjobs, notes)?;
    if numjobs > 1 && !names.file_per_thread {
        notes.push(format!(
            "numjobs={numjobs} on shared files: iolab's {numjobs} threads share them (sequential jobs each take a slice)"
        ));
    }
    let increment = g
        .parse("offset_increment", value::bytes)?
        .filter(|o| *o > 0);
    let first = names.first();
    let existing = std::fs::metadata(&first).ok().map(|m| {
        if m.file_type().is_file() {
            m.len()
        } else {
            iolab::file::length(&first).unwrap_or(0)
        }
    });
    let offset = offset_of(g, existing, bs)?;
    let nfiles = names.per_thread();
    let (mut region, size_given) = region(g, job, (&first, nfiles), existing, offset)?;
    let Names {
        file,
        file_per_thread,
        more_files,
        nrfiles,
    } = names;
    if let Some(inc) = increment {
        // numjobs jobs, each `size` long, one after another in one file:
        // iolab's threads slicing a shared file of size x numjobs.
        if file_per_thread || numjobs < 2 || inc != region || random {
            return Err(g.refuse(
                "offset_increment",
                "iolab supports it only as slices of one shared file: sequential, numjobs > 1, offset_increment = size",
            ));
        }
        region *= numjobs as u64;
        notes.push(format!(
            "offset_increment: {numjobs} threads each read their own slice of {}",
            file.display()
        ));
    }
    Ok(Files {
        file,
        file_per_thread,
        more_files,
        nrfiles,
        nfiles,
        region,
        offset,
        size_given,
        increment,
        existing,
    })
}

/// `size` and `filesize` from `offset`: the bytes of each file the job
/// covers (`size` shared by its `nfiles` files as fio shares it, or the
/// rest of the file when no size is given), and whether a size was given.
/// `existing` is the length of `file`, the first, if it exists.
fn region(
    g: &Given,
    job: &RawJob,
    (file, nfiles): (&std::path::Path, u64),
    existing: Option<u64>,
    offset: u64,
) -> Result<(u64, bool), FioJobError> {
    let filesize = resolve_size(g, existing, "filesize")?;
    if let Some(end) = filesize
        .or(existing)
        .filter(|end| offset > 0 && *end <= offset)
    {
        return Err(g.refuse(
            "offset",
            &format!("at or past the end of the file ({end} bytes); the region starts inside it"),
        ));
    }
    let size = resolve_size(g, existing, "size")?.map(|s| s / nfiles);
    // The file's bytes from `offset` on, when a size is not given.
    let after = |len: u64| len.saturating_sub(offset);
    let region = size.or(filesize.map(after));
    let size_given = region.is_some();
    if region.is_none() && existing.is_none() {
        return Err(job.loc.err(format!(
            "job '{}': {} does not exist and no size is given; add size= (e.g. size=1g)",
            job.name,
            file.display()
        )));
    }
    let region = region.unwrap_or(after(existing.unwrap_or(0)));
    let region = match filesize {
        Some(f) => region.min(after(f)),
        None => region,
    };
    Ok((region, size_given))
}

/// `io_size`, `loops`, `runtime`, `time_based`, `number_ios`, `ramp_time`
/// and `startdelay`: the stop rule, the ramp and the start delay.
fn how_long(g: &Given, f: &Files, numjobs: u32) -> Result<(StopRule, u64, u64), FioJobError> {
    let (region, increment) = (f.region, f.increment);
    let io_size = resolve_size(g, f.existing, "io_size")?;
    let loops = g.int("loops")?.unwrap_or(1).max(1);
    let runtime = g
        .parse("runtime", |v| value::time_ns(v, 1_000_000_000))?
        .filter(|t| *t > 0);
    let time_based = g.flag("time_based", false)?;
    if time_based && runtime.is_none() {
        return Err(g.refuse("time_based", "needs runtime= (e.g. runtime=30s)"));
    }
    let slice = region
        / if increment.is_some() {
            numjobs as u64
        } else {
            1
        };
    let per_job = io_size.unwrap_or(slice * f.nfiles).saturating_mul(loops);
    let stop = StopRule {
        bytes: if time_based {
            None
        } else {
            Some(per_job.saturating_mul(numjobs as u64))
        },
        ops: g
            .int("number_ios")?
            .map(|n| n.saturating_mul(numjobs as u64)),
        time_ns: runtime,
    };
    let ramp_ns = g
        .parse("ramp_time", |v| value::time_ns(v, 1_000_000_000))?
        .unwrap_or(0);
    let startdelay_ns = g
        .parse("startdelay", |v| value::time_ns(v, 1_000_000_000))?
        .unwrap_or(0);
    Ok((stop, ramp_ns, startdelay_ns))
}

/// `rate`, `rate_iops` and `thinktime`. fio's rates are per job; iolab's
/// over all its threads.
fn pacing(
    g: &Given,
    bs: u64,
    numjobs: u32,
    notes: &mut Vec<String>,
) -> Result<(Option<u64>, Option<u64>), FioJobError> {
    let one_rate = |k: &str| -> Result<Option<u64>, FioJobError> {
        let Some((v, _)) = g.val(k) else {
            return Ok(None);
        };
        let parts: Vec<u64> = v
            .split(',')
            .filter(|p| !p.trim().is_empty())
            .map(value::bytes)
            .collect::<Result<_, _>>()
            .map_err(|e| g.refuse(k, &e))?;
        match parts.as_slice() {
            [] => Ok(None),
            [r] => Ok(Some(*r)),
            [r, w, ..] if r == w => Ok(Some(*r)),
            _ => Err(g.refuse(k, "iolab paces reads and writes together: give one rate")),
        }
    };
    let mut rate_iops = one_rate("rate_iops")?;
    if let Some(r) = one_rate("rate")? {
        if rate_iops.is_some() {
            return Err(g.refuse("rate", "give rate or rate_iops, not both"));
        }
        rate_iops = Some((r / bs).max(1));
        notes.push(format!("rate={r} B/s: {} ops/s per job of {bs} B", r / bs));
    }
    let rate_iops = rate_iops
        .filter(|r| *r > 0)
        .map(|r| r.saturating_mul(numjobs as u64));
    if let Some(r) = rate_iops {
        notes.push(format!(
            "paced: {r} ops/s over {numjobs} thread(s); latency is measured under that load"
        ));
    }
    let thinktime_ns = g
        .parse("thinktime", |v| value::time_ns(v, 1_000))?
        .filter(|t| *t > 0);
    Ok((rate_iops, thinktime_ns))
}

/// `fsync=N` or `fdatasync=N` (0: none; both at once refused).
fn sync_every(g: &Given) -> Result<Option<SyncEvery>, FioJobError> {
    let fsync = g.int("fsync")?.filter(|n| *n > 0);
    let fdatasync = g.int("fdatasync")?.filter(|n| *n > 0);
    let pick = |n: u64, data_only| {
        u32::try_from(n)
            .map(|writes| Some(SyncEvery { writes, data_only }))
            .map_err(|_| {
                g.refuse(
                    if data_only { "fdatasync" } else { "fsync" },
                    "too many writes per sync",
                )
            })
    };
    match (fsync, fdatasync) {
        (Some(_), Some(_)) => Err(g.refuse(
            "fdatasync",
            "iolab takes fsync=N or fdatasync=N, not both in one job",
        )),
        (Some(n), None) => pick(n, false),
        (None, Some(n)) => pick(n, true),
        (None, None) => Ok(None),
    }
}

/// Options fio has that would change what is measured and iolab does not do.
fn refuse_unsupported(g: &Given) -> Result<(), FioJobError> {
    if let Some((v, _)) = g.val("kb_base") {
        if v.trim() != "1024" {
            return Err(g.refuse(
                "kb_base",
                "iolab reads sizes in binary units (kb_base=1024)",
            ));
        }
    }
    Ok(())
}

/// `cpus_allowed` and `cpus_allowed_policy`: the CPUs the job's threads
/// run on (fio ignores the policy without a list, as this does).
fn cpus(g: &Given) -> Result<Option<CpuPin>, FioJobError> {
    let split = match g.val("cpus_allowed_policy") {
        None => false,
        Some((v, _)) => match v.trim() {
            "shared" => false,
            "split" => true,
            _ => return Err(g.refuse("cpus_allowed_policy", "one of shared, split")),
        },
    };
    let Some(cpus) = g.parse("cpus_allowed", CpuPin::parse_list)? else {
        return Ok(None);
    };
    let pin = CpuPin {
        cpus,
        split,
        first: 0,
    };
    pin.check_here().map_err(|e| g.refuse("cpus_allowed", &e))?;
    Ok(Some(pin))
}

/// `continue_on_error`: iolab counts failed ops and goes on, for any kind
/// of error.
fn continue_on_error(g: &Given) -> Result<bool, FioJobError> {
    Ok(match g.val("continue_on_error") {
        None => false,
        Some((v, loc)) => match v.trim() {
            "0" | "none" | "false" => false,
            "" | "1" | "true" | "read" | "write" | "io" | "all" => true,
            _ => {
                return Err(loc.err(format!(
                    "continue_on_error={v}: one of none, read, write, io, all (verify errors are not iolab's)"
                )))
            }
        },
    })
}

/// The logs, the averaging interval and the percentiles reported.
fn output(g: &Given, job: &RawJob) -> Result<(Logs, u64, Vec<f64>), FioJobError> {
    let log_avg = g.int("log_avg_msec")?.unwrap_or(0);
    let prefix = |k: &str| -> Option<String> {
        g.get(k).map(|o| match o.value.as_deref() {
            Some(v) if !v.is_empty() => v.to_string(),
            _ => job.name.clone(),
        })
    };
    let logs = Logs {
        bw: prefix("write_bw_log"),
        lat: prefix("write_lat_log"),
        iops: prefix("write_iops_log"),
        avg_msec: log_avg,
    };
    if logs.any() && log_avg == 0 {
        let k = ["write_bw_log", "write_lat_log", "write_iops_log"]
            .into_iter()
            .find(|k| g.get(k).is_some())
            .expect("a log");
        return Err(g.refuse(
            k,
            "iolab logs interval averages, not every I/O: add log_avg_msec= (e.g. 100)",
        ));
    }
    if logs.any() && log_avg < 10 {
        return Err(g.refuse("log_avg_msec", "iolab averages over at least 10 ms"));
    }
    let interval_ms = if logs.any() { log_avg } else { FIO_AVG_MSEC };
    let percentiles = g
        .parse("percentile_list", percentiles_of)?
        .unwrap_or_else(|| FIO_PERCENTILES.to_vec());
    Ok((logs, interval_ms, percentiles))
}

/// Whether the submit call is timed (fio's slat), and `slat_percentiles`.
/// fio times it unless `disable_slat=1`; iolab only when a job says
/// `disable_slat=0` or `slat_percentiles=1`: the extra clock read per
/// submit and the separate wait call slow the path measured.
fn latency(
    g: &Given,
    engine: EngineKind,
    notes: &mut Vec<String>,
) -> Result<(bool, bool), FioJobError> {
    let slat_percentiles = g.flag("slat_percentiles", false)?;
    let time_submit =
        (g.get("disable_slat").is_some() && !g.flag("disable_slat", true)?) || slat_percentiles;
    if engine.is_sync() {
        notes.push("latency: synchronous engine, clat = lat = the whole call; slat not reported (fio reports it as 0)".into());
    } else if time_submit {
        notes.push("latency: slat = the submit call (a batch's time divided evenly among its ops), clat = end of the submit call to completion, lat = their sum; submit and wait are separate calls".into());
    } else {
        notes.push("latency: lat = submit call to completion; slat is not timed unless the job says disable_slat=0 (fio's default times it; iolab's does not, because the extra clock read per submit and the separate wait call slow the path measured), so clat is not separated from lat".into());
    }
    Ok((time_submit, slat_percentiles))
}

/// Maps every job, assigning fio's group ids (jobs between two stonewalls
/// run at the same time, as one group; see [`super::group`]).
pub fn map_all(jobs: &[RawJob], lenient: bool) -> Result<Vec<FioJob>, FioJobError> {
    if jobs.is_empty() {
        return Err(Loc::new("<command line>".into(), 0)
            .err("no jobs: give a job file or --name=JOB with options".into()));
    }
    let mut out: Vec<FioJob> = Vec::new();
    let mut group = 0u32;
    // fio numbers threads over the whole file (cpus_allowed_policy=split).
    let mut threads_before = 0u32;
    for (i, j) in jobs.iter().enumerate() {
        // Group ids depend on stonewall/new_group, read before mapping.
        let last = |k: &str| -> Option<&RawOpt> {
            j.opts
                .iter()
                .rev()
                .find(|o| options::canonical(&o.key) == k)
        };
        let flag = |k: &str| -> Result<bool, FioJobError> {
            match last(k) {
                Some(o) => value::boolean(o.value.as_deref())
                    .map_err(|e| o.loc.err(format!("{}: {e}", o.key))),
                None => Ok(false),
            }
        };
        let stonewall = flag("stonewall")?;
        if i > 0 && (stonewall || flag("new_group")?) {
            group += 1;
        }
        let mut fj = map_job(j, group, lenient)?;
        if let Some(p) = &mut fj.spec.cpus {
            p.first = threads_before;
        }
        threads_before = threads_before.saturating_add(fj.numjobs);
        if let Some(prev) = out.last().filter(|p| p.groupid == group) {
            if (fj.group_reporting || prev.group_reporting) && fj.spec.bs != prev.spec.bs {
                return Err(j.loc.err(format!(
                    "job '{}': group_reporting over jobs of different block sizes ({} and {} of '{}'): give them one bs, or put stonewall (a new group) before [{}]",
                    j.name, fj.spec.bs, prev.spec.bs, prev.name, j.name
                )));
            }
        }
        out.push(fj);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::Reader;
    use std::path::Path;

    fn jobs(text: &str, lenient: bool) -> Result<Vec<FioJob>, FioJobError> {
        let mut r = Reader::new();
        r.read_text(text, Path::new("j.fio"), 0)?;
        map_all(&r.finish(), lenient)
    }

    fn one(text: &str) -> FioJob {
        jobs(text, false).unwrap().remove(0)
    }

    fn err(text: &str) -> String {
        jobs(text, false).unwrap_err().to_string()
    }

    #[test]
    fn a_plain_random_read_job_maps_to_the_spec() {
        let j = one("[global]\nioengine=io_uring\ndirect=1\n[rr]\nfilename=/tmp/x\nsize=64m\nrw=randread\nbs=4k\niodepth=32\niodepth_batch_submit=8\nnorandommap\nruntime=10s\ntime_based\n");
        let s = &j.spec;
        assert_eq!(s.engine, EngineKind::Uring);
        assert!(s.direct);
        assert_eq!((s.bs, s.qd, s.batch_submit), (4096, 32, 8));
        assert_eq!(s.pattern, AccessPattern::Rand);
        assert_eq!(s.file, PathBuf::from("/tmp/x"));
        assert_eq!(s.file_size, 64 << 20);
        assert_eq!(s.stop.time_ns, Some(10_000_000_000));
        assert_eq!(s.stop.bytes, None);
        assert_eq!(s.cache, CacheMode::Cold);
        assert_eq!(j.global_options.len(), 2);
        assert_eq!(j.job_options[0], ("filename".into(), "/tmp/x".into()));
    }

    #[test]
    fn a_sequential_suffix_is_a_stride_and_skewed_laws_map_to_patterns() {
        let j = one("[s]\nfilename=/x\nsize=1m\nrw=read:8k\n");
        assert_eq!(j.spec.pattern, AccessPattern::Stride(8192));
        assert!(
            j.notes.iter().any(|n| n.contains("stride:8192")),
            "{:?}",
            j.notes
        );
        // `:0` and `:1` on random I/O are fio's default.
        assert_eq!(
            one("[r]\nfilename=/x\nsize=1m\nrw=randread:1\nnorandommap\n")
                .spec
                .pattern,
            AccessPattern::Rand
        );
        // `:N` > 1 on random I/O: N I/Os per random offset.
        let r = one("[r]\nfilename=/x\nsize=1m\nrw=randrw:8\nnorandommap\n");
        assert_eq!(r.spec.pattern, AccessPattern::RandRun(8));
        let said: Vec<&String> = r
            .notes
            .iter()
            .filter(|n| n.contains("rand-run:8"))
            .collect();
        assert_eq!(said.len(), 1, "{:?}", r.notes);
        let r = one("[r]\nfilename=/x\nsize=1m\nrw=randwrite:4\n");
        assert_eq!(r.spec.pattern, AccessPattern::ShuffleRun(4));
        let z = one("[z]\nfilename=/x\nsize=1m\nrw=randread\nrandom_distribution=zipf:1.2\n");
        assert_eq!(z.spec.pattern.to_string(), "zipf:1.2");
        let n = one("[n]\nfilename=/x\nsize=1m\nrw=randread\nrandom_distribution=normal:10\n");
        assert_eq!(n.spec.pattern.name(), "normal");
        // A law on sequential I/O changes nothing, as in fio.
        let q = one("[q]\nfilename=/x\nsize=1m\nrw=read\nrandom_distribution=zipf:1.2\n");
        assert_eq!(q.spec.pattern, AccessPattern::Seq);
    }

    #[test]
    fn offset_moves_the_region_as_fio_does() {
        // [offset, offset + size): the file made holds both.
        let j = one("[o]\nfilename=/x\nsize=1m\noffset=256k\n");
        assert_eq!((j.spec.offset, j.spec.file_size), (256 << 10, 1 << 20));
        assert_eq!(j.spec.file_end(), (1 << 20) + (256 << 10));
        // filesize without size: the region is the rest of the file.
        let j = one("[o]\nfilename=/x\nfilesize=1m\noffset=256k\n");
        assert_eq!((j.spec.offset, j.spec.file_size), (256 << 10, 768 << 10));
        assert_eq!(j.spec.stop.bytes, Some(768 << 10));
        // A percentage of an existing file, aligned down to bs; no size:
        // the rest of the file.
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("f");
        std::fs::write(&f, vec![0u8; 100_000]).unwrap();
        let j = one(&format!(
            "[p]\nfilename={}\nbs=4k\noffset=50%\n",
            f.display()
        ));
        assert_eq!(j.spec.offset, 12 * 4096);
        assert_eq!(j.spec.file_size, 100_000 - 12 * 4096);
        // Alias, and offset_increment slices starting at the offset.
        let j = one("[i]\nfilename=/x\nsize=64k\nfileoffset=1m\nnumjobs=2\noffset_increment=64k\n");
        assert_eq!((j.spec.offset, j.spec.file_size), (1 << 20, 128 << 10));
    }

    #[test]
    fn cpus_allowed_pins_and_split_numbers_threads_over_the_file() {
        let cpu = iolab::primitives::allowed_cpus().unwrap()[0];
        let j = jobs(
            &format!("[global]\nfilename=/x\nsize=1m\ncpus_allowed={cpu}\ncpus_allowed_policy=split\n[a]\nnumjobs=2\n[b]\n[c]\ncpus_allowed_policy=shared\n"),
            false,
        )
        .unwrap();
        let pins: Vec<_> = j.iter().map(|j| j.spec.cpus.clone().unwrap()).collect();
        assert_eq!(pins[0].cpus, vec![cpu as u32]);
        assert_eq!(
            pins.iter().map(|p| (p.split, p.first)).collect::<Vec<_>>(),
            vec![(true, 0), (true, 2), (false, 3)]
        );
        assert_eq!(one("[a]\nfilename=/x\nsize=1m\n").spec.cpus, None);
    }

    #[test]
    fn filename_lists_and_nrfiles_spread_a_job_over_files() {
        let p = |v: &[&str]| v.iter().map(PathBuf::from).collect::<Vec<_>>();
        // A list: every thread uses every file; they share `size`.
        let j = one("[l]\nfilename=/a:/b::/c\nsize=3m\nnumjobs=2\n");
        assert_eq!(j.spec.files(), p(&["/a", "/b", "/c"]));
        assert!(!j.spec.file_per_thread);
        assert_eq!(j.spec.file_size, 1 << 20);
        assert_eq!(j.spec.stop.bytes, Some(2 * (3 << 20)));
        // nrfiles with fio's default names, JOB.$jobnum.$filenum.
        let j = one("[n]\ndirectory=/d\nnrfiles=2\nfilesize=64k\n");
        assert_eq!(j.spec.files(), p(&["/d/n.0.0", "/d/n.0.1"]));
        assert_eq!(
            (j.spec.file_size, j.spec.stop.bytes),
            (64 << 10, Some(128 << 10))
        );
        let j = one(
            "[n]\ndirectory=/d\nnr_files=2\nsize=128k\nnumjobs=2\nfile_service_type=roundrobin\n",
        );
        assert!(j.spec.file_per_thread);
        assert_eq!(
            j.spec.files(),
            p(&["/d/n.0.0", "/d/n.0.1", "/d/n.1.0", "/d/n.1.1"])
        );
        assert_eq!(j.spec.file_size, 64 << 10);
        // filename_format with $filenum, one job: $jobnum is 0.
        let j = one("[f]\nfilename_format=/d/x.$jobnum.$filenum\nnrfiles=2\nsize=128k\n");
        assert_eq!(j.spec.files(), p(&["/d/x.0.0", "/d/x.0.1"]));
        assert!(
            j.notes.iter().any(|n| n.contains("roundrobin")),
            "{:?}",
            j.notes
        );
    }

    #[test]
    fn fsync_and_fdatasync_every_n_writes() {
        let j = one("[w]\nfilename=/x\nsize=1m\nrw=write\nfsync=8\n");
        assert_eq!(
            j.spec.sync_every,
            Some(SyncEvery {
                writes: 8,
                data_only: false
            })
        );
        let j = one("[w]\nfilename=/x\nsize=1m\nrw=write\nfdatasync=1\nfsync=0\n");
        assert_eq!(
            j.spec.sync_every,
            Some(SyncEvery {
                writes: 1,
                data_only: true
            })
        );
        assert_eq!(
            one("[w]\nfilename=/x\nsize=1m\nrw=write\n").spec.sync_every,
            None
        );
        let e = err("[w]\nfilename=/x\nsize=1m\nrw=write\nfsync=2\nfdatasync=2\n");
        assert!(
            e.contains("j.fio:6: fdatasync=2: iolab takes fsync=N or fdatasync=N"),
            "{e}"
        );
    }

    #[test]
    fn defaults_directory_numjobs_and_mixes() {
        let j = one("[seq]\ndirectory=/d\nsize=1m\nnumjobs=3\nloops=2\ngroup_reporting\n");
        let s = &j.spec;
        assert_eq!(s.engine, EngineKind::Pread);
        assert_eq!(
            (s.op, s.pattern, s.bs),
            (OpMix::Read, AccessPattern::Seq, 4096)
        );
        assert!(s.file_per_thread);
        assert_eq!(s.file, PathBuf::from("/d/seq"));
        assert_eq!(s.threads, 3);
        assert_eq!(s.stop.bytes, Some(3 * 2 * (1 << 20)));
        assert!(j.group_reporting);
        let j =
            one("[m]\nfilename=/x\nsize=1m\nrw=randrw\nrwmixwrite=30\nbs=8k,8k\ninvalidate=0\n");
        assert_eq!(j.spec.op, OpMix::Rw { read_pct: 70 });
        assert_eq!(j.spec.pattern, AccessPattern::Shuffle);
        assert_eq!(j.spec.cache, CacheMode::AsIs);
        assert_eq!(j.spec.bs, 8192);
        assert_eq!(
            one("[n]\nfilename=/x\nsize=1m\n").spec.file,
            PathBuf::from("/x")
        );
        assert_eq!(
            one("[n]\ndirectory=/d\nsize=1m\n").spec.file,
            PathBuf::from("/d/n.0.0")
        );
        // bs split: a write job takes the second size.
        assert_eq!(
            one("[w]\nfilename=/x\nsize=1m\nrw=write\nbs=4k,64k\n")
                .spec
                .bs,
            64 << 10
        );
        // Aliases.
        let j = one("[a]\nfilename=/x\nsize=1m\nreadwrite=randread\nblocksize=16k\ntimeout=2\ntime_based\nbuffered=0\n");
        assert_eq!(
            (j.spec.bs, j.spec.stop.time_ns, j.spec.direct),
            (16384, Some(2_000_000_000), true)
        );
        assert_eq!(
            one("[a]\nfilename=/x\nsize=1m\nbsrange=8k-8k\n").spec.bs,
            8192
        );
        // psync with iodepth: one in flight.
        assert_eq!(one("[a]\nfilename=/x\nsize=1m\niodepth=8\n").spec.qd, 1);
        // Time and percentages.
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("f");
        std::fs::write(&f, vec![0u8; 1 << 16]).unwrap();
        let j = one(&format!(
            "[p]\nfilename={}\nsize=50%\nramp_time=500ms\nstartdelay=1\n",
            f.display()
        ));
        assert_eq!(j.spec.file_size, 1 << 15);
        assert_eq!(
            (j.spec.ramp_ns, j.startdelay_ns),
            (500_000_000, 1_000_000_000)
        );
    }

    #[test]
    fn rates_and_thinktime_pace_the_run() {
        let j = one("[a]\nfilename=/x\nsize=1m\nrate_iops=500\nnumjobs=2\nthinktime=250\n");
        assert_eq!(j.spec.rate_iops, Some(1000));
        assert_eq!(j.spec.thinktime_ns, Some(250_000));
        let j = one("[a]\nfilename=/x\nsize=1m\nbs=4k\nrate=4m\n");
        assert_eq!(j.spec.rate_iops, Some(1024));
        assert_eq!(one("[a]\nfilename=/x\nsize=1m\n").spec.rate_iops, None);
    }

    #[test]
    fn groups_and_stonewalls() {
        let j = jobs("[a]\nfilename=/x\nsize=1m\n[b]\nfilename=/x\nsize=1m\nstonewall\n[c]\nfilename=/x\nsize=1m\nwait_for_previous\nnew_group\n", false).unwrap();
        assert_eq!(
            j.iter().map(|j| j.groupid).collect::<Vec<_>>(),
            vec![0, 1, 2]
        );
        let e =
            err("[a]\nfilename=/x\nsize=1m\ngroup_reporting\n[b]\nfilename=/x\nsize=1m\nbs=8k\n");
        assert!(
            e.starts_with("j.fio:5: job 'b': group_reporting over jobs of different block sizes"),
            "{e}"
        );
    }

    #[test]
    fn every_refusal_names_file_line_and_option() {
        let cases: &[(&str, &str)] = &[
            ("[a]\nfilename=/x\nsize=1m\nblocksise=4k\n", "j.fio:4: option 'blocksise': unknown"),
            ("[a]\nfilename=/x\nsize=1m\nverify=md5\n", "j.fio:4: option 'verify': known to fio but not supported by iolab"),
            ("[a]\nfilename=/x\nsize=1m\ndescription=hi\n", "j.fio:4: option 'description': known to fio but not supported by iolab (it does not change what is measured: --lenient"),
            ("[a]\nfilename=/x\nsize=1m\nioengine=splice\n", "j.fio:4: ioengine=splice: 'splice' is not an engine iolab has"),
            ("[a]\nfilename=/x\nsize=1m\nrw=randread:x\n", "j.fio:4: rw=randread:x: ':x': the I/Os per random offset, a number"),
            ("[a]\nfilename=/x\nsize=1m\nrw=randread:8\nrandom_distribution=zipf:1.2\n", "j.fio:5: random_distribution=zipf:1.2: iolab draws runs of rw=...:N from the uniform law only"),
            ("[a]\nfilename=/x\nsize=1m\nrw=read:x\n", "j.fio:4: rw=read:x: :x: 'x': not a size"),
            ("[a]\nfilename=/x\nsize=1m\nrw=randread\nrandom_distribution=zoned:50/5:50/95\n", "j.fio:5: random_distribution=zoned:50/5:50/95: iolab draws random, zipf"),
            ("[a]\nfilename=/x\nsize=1m\nrw=randread\nrandom_distribution=zipf:1\n", "j.fio:5: random_distribution=zipf:1: "),
            ("[a]\nfilename=/x\nsize=1m\nrw=trim\n", "j.fio:4: rw=trim: 'trim': iolab does not issue trims"),
            ("[a]\nfilename=/x\nsize=1m\nrw=rw\nrate_iops=100,200\n", "j.fio:5: rate_iops=100,200: iolab paces reads and writes together"),
            ("[a]\nfilename=/x\nsize=1m\nrate=1m\nrate_iops=10\n", "j.fio:4: rate=1m: give rate or rate_iops"),
            ("[a]\nfilename=/x\nsize=1m\ncpus_allowed=4095\n", "j.fio:4: cpus_allowed=4095: CPU 4095 is not online or not allowed for this process (it may use "),
            ("[a]\nfilename=/x\nsize=1m\ncpus_allowed=0-x\n", "j.fio:4: cpus_allowed: '0-x': a CPU list is CPUs and ranges"),
            ("[a]\nfilename=/x\nsize=1m\ncpus_allowed=0\ncpus_allowed_policy=half\n", "j.fio:5: cpus_allowed_policy=half: one of shared, split"),
            ("[a]\nfilename=/nonexistent/iolab/x\nsize=1m\noffset=10%\n", "j.fio:4: offset=10%: a percentage of a file that does not exist"),
            ("[a]\nfilename=/x\nfilesize=1m\noffset=1m\n", "j.fio:4: offset=1m: at or past the end of the file (1048576 bytes)"),
            ("[a]\nfilename=/x\nsize=1m\noffset=4q\n", "j.fio:4: offset: '4q': not a size"),
            ("[a]\nfilename=/x\nsize=1m\nfixedbufs\n", "j.fio:4: fixedbufs=: an io_uring option"),
            ("[a]\nfilename=/x\nsize=1m\nioengine=psync\nhipri\n", "j.fio:5: hipri=: only pvsync2 and io_uring"),
            ("[a]\nfilename=/x\nsize=1m\nrw=rw\nbs=4k,8k\n", "j.fio:5: bs=4k,8k: iolab uses one block size"),
            ("[a]\nfilename=/x\nsize=1m\nbsrange=4k-16k\n", "j.fio:4: bsrange: '4k-16k': iolab uses one block size"),
            ("[a]\nfilename=/x\nsize=1m\nwrite_lat_log=a\n", "j.fio:4: write_lat_log=a: iolab logs interval averages"),
            ("[a]\nfilename=/x:/y\nsize=1m\nnrfiles=4\n", "j.fio:4: nrfiles=4: with filename=, the files are the ones it names"),
            ("[a]\nsize=1m\nnrfiles=0\n", "j.fio:3: nrfiles=0: must be 1..=65536"),
            ("[a]\nfilename=/x\nsize=1m\nfile_service_type=random\n", "j.fio:4: file_service_type=random: iolab sends each I/O to the next file in turn"),
            ("[a]\nfilename_format=x.$jobnum.$filenum\nsize=1m\n", "j.fio:2: filename_format=x.$jobnum.$filenum: iolab names per-thread files STEM.$jobnum"),
            ("[a]\nfilename=/x\nsize=1m\nbs=4q\n", "j.fio:4: bs: '4q': not a size"),
            ("[a]\nfilename=/x\nsize=1m\nruntime=soon\n", "j.fio:4: runtime: 'soon': not a time"),
            ("[a]\nfilename=/x\nsize=1m\ntime_based\n", "j.fio:4: time_based=: needs runtime="),
            ("[a]\nfilename=/x\nsize=1m\nkb_base=1000\n", "j.fio:4: kb_base=1000:"),
            ("[a]\nfilename=/x\nsize=1m\nioengine=io_uring\niodepth=4\niodepth_batch=8\n", "j.fio:6: iodepth_batch=8: more than iodepth (4)"),
            ("[a]\nfilename=/nonexistent/iolab/x\n", "j.fio:1: job 'a': /nonexistent/iolab/x does not exist and no size is given"),
            ("[a]\nfilename=/nonexistent/iolab/x\nsize=10%\n", "j.fio:3: size=10%: a percentage of a file that does not exist"),
            ("[a]\nfilename=/x\nsize=1m\nioengine=mmap\nrw=write\n", "j.fio:1: job 'a': --op write: engine mmap only reads"),
        ];
        for (text, want) in cases {
            let e = err(text);
            assert!(e.starts_with(want), "for {text:?}\n got: {e}\nwant: {want}");
            assert!(!e.contains('\n'), "{e}");
        }
    }

    #[test]
    fn lenient_turns_cosmetic_refusals_into_warnings() {
        let j = jobs(
            "[a]\nfilename=/x\nsize=1m\ndescription=hello\nper_job_logs=0\n",
            true,
        )
        .unwrap();
        assert_eq!(j[0].warnings.len(), 2);
        assert!(j[0].warnings[0].starts_with("j.fio:4: option 'description'"));
        // Lenient never hides what changes the measurement.
        assert!(jobs("[a]\nfilename=/x\nsize=1m\nverify=md5\n", true).is_err());
    }
}
