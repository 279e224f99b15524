//! Translating a workload into the fio command a careful fio user would
//! write, and reading fio's JSON output back into comparable numbers.
//!
//! Fairness rules: iolab's `shuffle` is fio's default random map, `rand` is
//! fio with `--norandommap`; `--cache cold` is fio's `--invalidate=1` (both
//! drop the file's pages with POSIX_FADV_DONTNEED), warm and as-is are
//! `--invalidate=0` after iolab prepares the cache; latency is compared with
//! fio's `lat` (submission to completion), which fio reports as percentiles
//! only with `--lat_percentiles=1`.

use iolab::engine::EngineKind;
use iolab_bench::spec::{AccessPattern, CacheMode, OpMix, WorkloadSpec};

/// A fio command line and what a reader should know about it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FioCommand {
    /// Arguments after `fio`.
    pub args: Vec<String>,
    /// How the translation maps iolab's terms to fio's.
    pub notes: Vec<String>,
}

impl FioCommand {
    /// The command as one shell line.
    pub fn line(&self) -> String {
        let mut s = String::from("fio");
        for a in &self.args {
            s.push(' ');
            // `--opt=value` stays bare when the value needs no quoting (the
            // `=` is harmless after the command name). An argument with a NUL
            // byte cannot be quoted; it is shown as it is (fio refuses it).
            let bare = match a.split_once('=') {
                Some((k, v)) => {
                    k.starts_with("--")
                        && shlex::try_quote(k).is_ok_and(|q| q == k)
                        && shlex::try_quote(v).is_ok_and(|q| q == v)
                }
                None => false,
            };
            if bare {
                s.push_str(a);
            } else {
                s.push_str(&shlex::try_quote(a).map_or_else(|_| a.clone(), |q| q.into()));
            }
        }
        s
    }
}

pub use iolab_bench::units::fio_size;

fn secs(ns: u64) -> String {
    if ns.is_multiple_of(1_000_000_000) {
        format!("{}s", ns / 1_000_000_000)
    } else {
        format!("{}ms", ns.div_ceil(1_000_000))
    }
}

/// The fio command equivalent to `spec`, or why there is none. One step
/// per family of fio options.
pub fn command(spec: &WorkloadSpec) -> Result<FioCommand, String> {
    let mut a: Vec<String> = vec!["--name=iolab".into()];
    let mut notes = Vec::new();
    let engine = fio_engine(spec)?;
    refuse_untranslatable(spec)?;
    if spec.op.writes() {
        notes.push("writes: fio writes its own data into the file (iolab writes its pattern back on its next run; nothing here verifies)".into());
    }
    let workers = spec.workers() as u64;
    file_args(spec, &mut a);
    a.push(format!("--ioengine={engine}"));
    pattern_args(spec, &mut a, &mut notes);
    a.push(format!("--direct={}", u8::from(spec.direct)));
    queue_args(spec, &mut a);
    engine_args(spec, &mut a, &mut notes);
    size_args(spec, workers, &mut a);
    cache_args(spec, &mut a, &mut notes);
    if let Some(p) = &spec.cpus {
        a.push(format!("--cpus_allowed={}", p.list()));
        if p.split {
            a.push("--cpus_allowed_policy=split".into());
        }
    }
    stop_args(spec, workers, &mut a);
    a.push("--lat_percentiles=1".into());
    a.push("--percentile_list=50:90:99:99.9:99.99".into());
    a.push("--output-format=json".into());
    notes.push(
        "latency: iolab's submit-to-completion = fio's lat (percentiles via --lat_percentiles=1)"
            .into(),
    );
    if let Some(why) = cpu_offload(spec) {
        notes.push(format!("cpu: {why}"));
    }
    Ok(FioCommand { args: a, notes })
}

/// `--filename` (every shared file, ':'-separated), or per thread
/// `--filename_format` with `--nrfiles`.
fn file_args(spec: &WorkloadSpec, a: &mut Vec<String>) {
    if spec.file_per_thread {
        let stem = spec.file.display().to_string();
        if spec.nrfiles > 1 {
            a.push(format!("--filename_format={stem}.$jobnum.$filenum"));
            a.push(format!("--nrfiles={}", spec.nrfiles));
        } else {
            a.push(format!("--filename_format={stem}.$jobnum"));
        }
    } else {
        let names: Vec<String> = spec
            .files()
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        a.push(format!("--filename={}", names.join(":")));
    }
}

/// fio's name for the engine, or why fio has none like it (the engine
/// table's `fio` entry).
fn fio_engine(spec: &WorkloadSpec) -> Result<&'static str, String> {
    spec.engine.desc().fio.map_err(str::to_string)
}

/// What fio cannot do that `spec` asks for.
fn refuse_untranslatable(spec: &WorkloadSpec) -> Result<(), String> {
    if spec.engine_opts.mmap_touch {
        return Err(
            "fio's mmap engine always copies; it has no touch-only mode (--mmap-touch)".into(),
        );
    }
    if spec.verify {
        return Err(
            "fio cannot check iolab's data pattern (--verify); drop --verify to compare".into(),
        );
    }
    if spec.engine_opts.uring.sqpoll_idle_ms.is_some() {
        return Err("fio has no option for the SQPOLL idle time (--sqpoll-idle)".into());
    }
    Ok(())
}

/// `--rw`, `--rwmixread`, `--bs` and the random-offset options.
fn pattern_args(spec: &WorkloadSpec, a: &mut Vec<String>, notes: &mut Vec<String>) {
    let seq = matches!(
        spec.pattern,
        AccessPattern::Seq | AccessPattern::Stride(_) | AccessPattern::Back(_)
    );
    let rw = match (spec.op, seq) {
        (OpMix::Read, true) => "read",
        (OpMix::Read, false) => "randread",
        (OpMix::Write, true) => "write",
        (OpMix::Write, false) => "randwrite",
        (OpMix::Rw { .. }, true) => "rw",
        (OpMix::Rw { .. }, false) => "randrw",
    };
    match spec.pattern {
        // fio's sequential `:N`: N bytes skipped after each I/O.
        AccessPattern::Stride(gap) => a.push(format!("--rw={rw}:{}", fio_size(gap))),
        // fio's negative `:N`: N bytes back after each I/O.
        AccessPattern::Back(b) => a.push(format!("--rw={rw}:-{}", fio_size(b))),
        // fio's random `:N`: N I/Os per random offset.
        AccessPattern::RandRun(n) | AccessPattern::ShuffleRun(n) => {
            a.push(format!("--rw={rw}:{n}"))
        }
        _ => a.push(format!("--rw={rw}")),
    }
    if let OpMix::Rw { read_pct } = spec.op {
        a.push(format!("--rwmixread={read_pct}"));
    }
    a.push(format!("--bs={}", fio_size(spec.bs)));
    if let Some(e) = spec.sync_every {
        a.push(format!("--{}={}", e.call(), e.writes));
    }
    random_args(spec, a, notes);
    if !seq {
        // iolab's offsets are a function of --seed: the same every run.
        a.push("--randrepeat=1".into());
        notes.push("random offsets repeat from run to run on both sides (iolab --seed, fio --randrepeat=1)".into());
    }
}

/// How random offsets are drawn: the random map, the law.
fn random_args(spec: &WorkloadSpec, a: &mut Vec<String>, notes: &mut Vec<String>) {
    match spec.pattern {
        AccessPattern::Rand => {
            a.push("--norandommap".into());
            notes.push("rand = uniform with replacement = fio --norandommap".into());
        }
        AccessPattern::Shuffle => {
            notes.push("shuffle = every block once = fio's default random map".into())
        }
        AccessPattern::RandRun(n) => {
            a.push("--norandommap".into());
            notes.push(format!("rand-run:{n} = fio --rw=...:{n} --norandommap ({n} I/Os per uniformly random offset)"));
        }
        AccessPattern::ShuffleRun(n) => notes.push(format!(
            "shuffle-run:{n} = fio --rw=...:{n} with its random map (runs of {n}; fio starts a run at any free block, iolab at multiples of {n})"
        )),
        AccessPattern::Skewed(k) => {
            a.push(format!("--random_distribution={}:{}", k.kind(), k.param()));
            a.push("--norandommap".into());
            notes.push(format!("{k} = fio --random_distribution={k} (same law and parameter, not fio's sequence; fio disables its random map for it)"));
        }
        AccessPattern::Zoned(z) => {
            a.push(format!("--random_distribution={}", z.to_fio()));
            a.push("--norandommap".into());
        }
        AccessPattern::Sequence(q) => {
            a.push(format!("--random_distribution={}", q.to_fio()));
            if q.stride {
                a.push("--random_sequence_stride=1".into());
            }
        }
        AccessPattern::Seq | AccessPattern::Stride(_) | AccessPattern::Back(_) => {}
    }
}

/// Queue depth and batches (asynchronous engines only).
fn queue_args(spec: &WorkloadSpec, a: &mut Vec<String>) {
    if !spec.engine.is_sync() {
        a.push(format!("--iodepth={}", spec.qd));
        if spec.batch_submit != 1 {
            a.push(format!("--iodepth_batch_submit={}", spec.batch_submit));
        }
        if spec.batch_complete != 1 {
            a.push(format!(
                "--iodepth_batch_complete_min={}",
                spec.batch_complete
            ));
        }
    }
}

/// io_uring's options, the buffer memory and polled I/O.
fn engine_args(spec: &WorkloadSpec, a: &mut Vec<String>, notes: &mut Vec<String>) {
    let u = &spec.engine_opts.uring;
    if spec.engine == EngineKind::Uring {
        if u.fixed_bufs {
            a.push("--fixedbufs".into());
        }
        if u.reg_files {
            a.push("--registerfiles".into());
        }
        if u.sqpoll {
            a.push("--sqthread_poll=1".into());
            if let Some(c) = u.sqpoll_cpu {
                a.push(format!("--sqthread_poll_cpu={c}"));
            }
        }
    }
    match spec.engine_opts.mem {
        iolab::mem::MemKind::Malloc => a.push("--mem=malloc".into()),
        iolab::mem::MemKind::Hugetlb => {
            a.push("--mem=shmhuge".into());
            notes.push("mem hugetlb = fio --mem=shmhuge (both take reserved huge pages, /proc/sys/vm/nr_hugepages)".into());
        }
        iolab::mem::MemKind::Thp => notes.push(
            "mem thp (iolab's default): fio has no transparent-huge-page buffer option, so fio runs with its default, malloc".into(),
        ),
    }
    if spec.engine_opts.hipri || u.iopoll {
        a.push("--hipri".into());
    }
}

/// fio's `size` of one job (over all its files, which share it evenly),
/// and the slice each thread starts apart when a shared file's sequential
/// work is split between threads.
fn job_region(spec: &WorkloadSpec, workers: u64) -> (u64, Option<u64>) {
    let nfiles = spec.files_of(0).len() as u64;
    if !spec.file_per_thread && workers > 1 && !spec.pattern.with_replacement() {
        let slice = spec.file_size / workers / spec.bs * spec.bs;
        (slice * nfiles, Some(slice))
    } else {
        (spec.file_size * nfiles, None)
    }
}

/// `--size`, `--offset`, `--offset_increment` and the threads.
fn size_args(spec: &WorkloadSpec, workers: u64, a: &mut Vec<String>) {
    let (size, slice) = job_region(spec, workers);
    a.push(format!("--size={}", fio_size(size)));
    if let Some(slice) = slice {
        a.push(format!("--offset_increment={}", fio_size(slice)));
    }
    if spec.offset > 0 {
        a.push(format!("--offset={}", fio_size(spec.offset)));
    }
    if workers > 1 {
        a.push(format!("--numjobs={workers}"));
        a.push("--thread".into());
        a.push("--group_reporting".into());
    }
}

/// `--invalidate`, as iolab's cache mode.
fn cache_args(spec: &WorkloadSpec, a: &mut Vec<String>, notes: &mut Vec<String>) {
    match spec.cache {
        CacheMode::Cold => {
            a.push("--invalidate=1".into());
            notes.push("cache cold: iolab evicts the file's pages before each run and, buffered, at each new pass; fio --invalidate=1 does the same".into());
        }
        CacheMode::Warm => {
            a.push("--invalidate=0".into());
            notes.push("cache warm: iolab reads the file into the page cache before each run of either tool; fio --invalidate=0 keeps it".into());
        }
        CacheMode::AsIs => a.push("--invalidate=0".into()),
    }
}

/// When the run stops, and its ramp.
fn stop_args(spec: &WorkloadSpec, workers: u64, a: &mut Vec<String>) {
    if let Some(t) = spec.stop.time_ns {
        a.push("--time_based".into());
        a.push(format!("--runtime={}", secs(t)));
    } else if let Some(o) = spec.stop.ops {
        let n = o.div_ceil(workers);
        a.push(format!("--number_ios={n}"));
        // fio ends at its region's end even before number_ios; an io_size
        // past the region makes it wrap around, as iolab does.
        if n.saturating_mul(spec.bs) > job_region(spec, workers).0 {
            a.push(format!("--io_size={}", fio_size(n * spec.bs)));
        }
    } else if let Some(b) = spec.stop.bytes {
        a.push(format!("--io_size={}", fio_size(b.div_ceil(workers))));
    }
    if spec.ramp_ns > 0 {
        a.push(format!("--ramp_time={}", secs(spec.ramp_ns)));
    }
}

/// The fio job file equivalent to `spec` (`iolab bench ... --fio-job`):
/// the same translation as [`command`], written as a job file that
/// `fio FILE` and `iolab fio FILE` both run.
pub fn job_file(spec: &WorkloadSpec) -> Result<String, String> {
    let cmd = command(spec)?;
    let mut o = format!(
        "; fio job for iolab's {} (iolab bench ... --fio-job)\n",
        spec.label()
    );
    for n in &cmd.notes {
        o.push_str(&format!("; {n}\n"));
    }
    o.push_str("[iolab]\n");
    for a in &cmd.args {
        let a = a.trim_start_matches("--");
        // The name is the section; the output format belongs to the command line.
        if a.starts_with("name=") || a.starts_with("output-format=") {
            continue;
        }
        o.push_str(a);
        o.push('\n');
    }
    Ok(o)
}

/// Why fio's CPU figure misses part of the work for `spec`, if it does.
/// fio reports each job's thread CPU (RUSAGE_THREAD); where the I/O is done
/// by other threads it does not count, only iolab's submitting-thread CPU
/// is the same quantity.
pub fn cpu_offload(spec: &WorkloadSpec) -> Option<&'static str> {
    match spec.engine {
        EngineKind::Uring if spec.engine_opts.uring.sqpoll => Some(
            "with SQPOLL the kernel thread iou-sqp submits; fio counts only its job thread, so only the submitting threads' CPU compares",
        ),
        EngineKind::Uring if !spec.direct => Some(
            "buffered io_uring reads that miss the cache run in io-wq kernel workers (iou-wrk), which fio does not count",
        ),
        EngineKind::Posixaio => Some(
            "glibc's POSIX AIO helper threads do the reads; fio counts only its job thread",
        ),
        EngineKind::Threadpool => Some("the pool's helper threads do the reads"),
        _ => None,
    }
}

/// The CPU both null-engine sides are pinned to: the last CPU this process
/// may use (CPU 0 takes most interrupts).
pub fn null_cpu() -> usize {
    iolab::primitives::allowed_cpus()
        .ok()
        .and_then(|c| c.last().copied())
        .unwrap_or(0)
}

/// The two fio commands a null-engine comparison runs, both pinned to
/// `cpu` like iolab: `default` keeps fio's default accounting (slat, clat
/// and lat: three clock reads and the histograms per op, plus the lat
/// percentiles the translation asks for); `fair` gives fio iolab's
/// accounting: two clock reads and one latency histogram per op
/// (`--disable_slat=1 --disable_lat=1`, clat percentiles only).
/// `--gtod_reduce=1` is not used: it would stop fio timing ops at all while
/// iolab still times every one.
pub fn null_commands(spec: &WorkloadSpec, cpu: usize) -> Result<(FioCommand, FioCommand), String> {
    if spec.engine != EngineKind::Null {
        return Err("the fair null comparison is for --engine null".into());
    }
    if spec.cpus.is_some() {
        return Err(format!(
            "--cpus: the null comparison pins both tools to CPU {cpu} itself; drop --cpus"
        ));
    }
    let mut default = command(spec)?;
    let pin = format!("--cpus_allowed={cpu}");
    let at = default.args.len() - 1; // before --output-format
    default.args.insert(at, pin.clone());
    default.notes.push(format!(
        "null, default accounting: fio as its users run it (slat, clat, lat), both tools pinned to CPU {cpu}"
    ));
    let mut fair = default.clone();
    fair.args.retain(|a| a != "--lat_percentiles=1");
    let at = fair
        .args
        .iter()
        .position(|a| a == &pin)
        .unwrap_or(fair.args.len() - 1);
    for (i, x) in [
        "--disable_slat=1",
        "--disable_lat=1",
        "--clat_percentiles=1",
    ]
    .into_iter()
    .enumerate()
    {
        fair.args.insert(at + i, x.into());
    }
    fair.notes.pop();
    fair.notes.push(format!(
        "null, fair accounting: fio with iolab's per-op cost (two clock reads, one latency histogram: --disable_slat=1 --disable_lat=1, clat percentiles), both tools pinned to CPU {cpu}; --gtod_reduce is not used, it would stop fio timing ops at all"
    ));
    Ok((default, fair))
}

/// The numbers compared between iolab and fio (defined with the records).
pub use iolab_bench::record::Comparable;

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_bench::spec::StopRule;
    use std::path::PathBuf;

    fn base() -> WorkloadSpec {
        WorkloadSpec {
            bs: 1 << 20,
            file: PathBuf::from("/data/f"),
            file_size: 2 << 30,
            direct: true,
            cache: CacheMode::Cold,
            stop: StopRule {
                time_ns: Some(10_000_000_000),
                ..Default::default()
            },
            seed: 1,
            ..WorkloadSpec::default()
        }
    }

    const TAIL: &str =
        "--lat_percentiles=1 --percentile_list=50:90:99:99.9:99.99 --output-format=json";

    fn line(s: &WorkloadSpec) -> String {
        command(s).unwrap().line()
    }

    #[test]
    fn skewed_patterns_translate_to_random_distribution() {
        let mut s = base();
        s.pattern = "zipf:1.2".parse().unwrap();
        let c = command(&s).unwrap();
        for want in [
            "--rw=randread",
            "--random_distribution=zipf:1.2",
            "--norandommap",
        ] {
            assert!(c.args.contains(&want.to_string()), "{want}: {:?}", c.args);
        }
        s.pattern = "normal:10".parse().unwrap();
        let c = command(&s).unwrap();
        assert!(c
            .args
            .contains(&"--random_distribution=normal:10".to_string()));
    }

    #[test]
    fn buffer_memory_translates_to_fio_mem() {
        let mut s = base();
        s.engine_opts.mem = iolab::mem::MemKind::Malloc;
        assert!(command(&s)
            .unwrap()
            .args
            .contains(&"--mem=malloc".to_string()));
        s.engine_opts.mem = iolab::mem::MemKind::Hugetlb;
        assert!(command(&s)
            .unwrap()
            .args
            .contains(&"--mem=shmhuge".to_string()));
        s.engine_opts.mem = iolab::mem::MemKind::Thp;
        let c = command(&s).unwrap();
        assert!(!c.args.iter().any(|a| a.starts_with("--mem")));
        assert!(c.notes.iter().any(|n| n.contains("transparent")));
    }

    #[test]
    fn a_dozen_specs_translate_exactly() {
        let mut s = base();
        assert_eq!(line(&s), format!("fio --name=iolab --filename=/data/f --ioengine=psync --rw=read --bs=1m --direct=1 --size=2g --invalidate=1 --time_based --runtime=10s {TAIL}"));

        s.pattern = AccessPattern::Rand;
        s.bs = 4096;
        assert_eq!(line(&s), format!("fio --name=iolab --filename=/data/f --ioengine=psync --rw=randread --bs=4k --norandommap --randrepeat=1 --direct=1 --size=2g --invalidate=1 --time_based --runtime=10s {TAIL}"));

        s.pattern = AccessPattern::Shuffle;
        assert_eq!(line(&s), format!("fio --name=iolab --filename=/data/f --ioengine=psync --rw=randread --bs=4k --randrepeat=1 --direct=1 --size=2g --invalidate=1 --time_based --runtime=10s {TAIL}"));

        s.pattern = AccessPattern::Rand;
        s.engine = EngineKind::Uring;
        s.qd = 32;
        assert_eq!(line(&s), format!("fio --name=iolab --filename=/data/f --ioengine=io_uring --rw=randread --bs=4k --norandommap --randrepeat=1 --direct=1 --iodepth=32 --size=2g --invalidate=1 --time_based --runtime=10s {TAIL}"));

        s.batch_submit = 8;
        s.batch_complete = 4;
        s.engine_opts.uring.fixed_bufs = true;
        s.engine_opts.uring.reg_files = true;
        assert_eq!(line(&s), format!("fio --name=iolab --filename=/data/f --ioengine=io_uring --rw=randread --bs=4k --norandommap --randrepeat=1 --direct=1 --iodepth=32 --iodepth_batch_submit=8 --iodepth_batch_complete_min=4 --fixedbufs --registerfiles --size=2g --invalidate=1 --time_based --runtime=10s {TAIL}"));

        s.engine_opts.uring.sqpoll = true;
        s.engine_opts.uring.sqpoll_cpu = Some(1);
        s.threads = 2;
        assert_eq!(line(&s), format!("fio --name=iolab --filename=/data/f --ioengine=io_uring --rw=randread --bs=4k --norandommap --randrepeat=1 --direct=1 --iodepth=32 --iodepth_batch_submit=8 --iodepth_batch_complete_min=4 --fixedbufs --registerfiles --sqthread_poll=1 --sqthread_poll_cpu=1 --size=2g --numjobs=2 --thread --group_reporting --invalidate=1 --time_based --runtime=10s {TAIL}"));

        let mut s = base();
        s.threads = 4;
        s.bs = 128 << 10;
        s.direct = false;
        s.cache = CacheMode::Warm;
        assert_eq!(line(&s), format!("fio --name=iolab --filename=/data/f --ioengine=psync --rw=read --bs=128k --direct=0 --size=512m --offset_increment=512m --numjobs=4 --thread --group_reporting --invalidate=0 --time_based --runtime=10s {TAIL}"));

        s.file_per_thread = true;
        s.file_size = 1 << 30;
        assert_eq!(line(&s), format!("fio --name=iolab '--filename_format=/data/f.$jobnum' --ioengine=psync --rw=read --bs=128k --direct=0 --size=1g --numjobs=4 --thread --group_reporting --invalidate=0 --time_based --runtime=10s {TAIL}"));

        let mut s = base();
        s.engine = EngineKind::Mmap;
        s.direct = false;
        s.pattern = AccessPattern::Rand;
        s.bs = 4096;
        s.cache = CacheMode::Warm;
        s.stop = StopRule {
            ops: Some(1_000_000),
            ..Default::default()
        };
        assert_eq!(line(&s), format!("fio --name=iolab --filename=/data/f --ioengine=mmap --rw=randread --bs=4k --norandommap --randrepeat=1 --direct=0 --size=2g --invalidate=0 --number_ios=1000000 --io_size=4000000k {TAIL}"));

        let mut s = base();
        s.engine = EngineKind::Preadv2;
        s.engine_opts.hipri = true;
        s.stop = StopRule {
            bytes: Some(1 << 30),
            ..Default::default()
        };
        s.ramp_ns = 2_000_000_000;
        assert_eq!(line(&s), format!("fio --name=iolab --filename=/data/f --ioengine=pvsync2 --rw=read --bs=1m --direct=1 --hipri --size=2g --invalidate=1 --io_size=1g --ramp_time=2s {TAIL}"));

        let mut s = base();
        s.engine = EngineKind::Null;
        s.qd = 1;
        s.cache = CacheMode::AsIs;
        s.stop = StopRule::default();
        assert_eq!(line(&s), format!("fio --name=iolab --filename=/data/f --ioengine=null --rw=read --bs=1m --direct=1 --iodepth=1 --size=2g --invalidate=0 {TAIL}"));

        let mut s = base();
        s.engine = EngineKind::Read;
        s.direct = false;
        s.stop.time_ns = Some(1_500_000_000);
        assert_eq!(line(&s), format!("fio --name=iolab --filename=/data/f --ioengine=sync --rw=read --bs=1m --direct=0 --size=2g --invalidate=1 --time_based --runtime=1500ms {TAIL}"));
    }

    #[test]
    fn null_comparison_has_a_fair_and_a_default_fio_command() {
        let mut s = base();
        s.engine = EngineKind::Null;
        s.cache = CacheMode::AsIs;
        let (d, f) = null_commands(&s, 1).unwrap();
        let (d, f) = (d.line(), f.line());
        // Both pinned to the CPU iolab is pinned to.
        assert!(d.contains("--cpus_allowed=1") && f.contains("--cpus_allowed=1"));
        // Default: fio's own accounting, lat percentiles on top.
        assert!(d.contains("--lat_percentiles=1") && !d.contains("--disable"));
        // Fair: two clock reads and one histogram per op, as iolab.
        for x in [
            "--disable_slat=1",
            "--disable_lat=1",
            "--clat_percentiles=1",
        ] {
            assert!(f.contains(x), "{f}");
        }
        assert!(!f.contains("--lat_percentiles=1") && !f.contains("gtod_reduce"));
        assert_eq!(f.matches("--percentile_list=").count(), 1);
        assert!(f.ends_with("--output-format=json"), "{f}");
        assert!(null_commands(&base(), 0).is_err());
    }

    #[test]
    fn cpu_is_compared_like_for_like() {
        let mut s = base();
        s.engine = EngineKind::Uring;
        assert!(cpu_offload(&s).is_none());
        s.engine_opts.uring.sqpoll = true;
        assert!(cpu_offload(&s).unwrap().contains("iou-sqp"));
        assert!(command(&s)
            .unwrap()
            .notes
            .iter()
            .any(|n| n.contains("iou-sqp")));
        s.engine = EngineKind::Posixaio;
        assert!(cpu_offload(&s).is_some());
    }

    #[test]
    fn untranslatable_specs_are_refused_with_a_reason() {
        let mut s = base();
        s.engine = EngineKind::Stream;
        assert!(command(&s).unwrap_err().contains("stream"));
        let mut s = base();
        s.verify = true;
        assert!(command(&s).unwrap_err().contains("--verify"));
        let mut s = base();
        s.op = OpMix::Write;
        s.pattern = AccessPattern::Rand;
        let c = command(&s).unwrap();
        assert!(c.args.contains(&"--rw=randwrite".to_string()));
        assert!(c.notes.iter().any(|n| n.starts_with("writes:")));
        s.op = OpMix::Rw { read_pct: 70 };
        let c = command(&s).unwrap();
        assert!(
            c.args.contains(&"--rw=randrw".to_string())
                && c.args.contains(&"--rwmixread=70".to_string())
        );
        let mut s = base();
        s.engine = EngineKind::Mmap;
        s.engine_opts.mmap_touch = true;
        assert!(command(&s).unwrap_err().contains("--mmap-touch"));
    }

    // Long on purpose: one spec translated to a job file and read back,
    // checked option by option against the command-line translation.
    #[test]
    fn the_job_file_is_the_same_translation_and_iolab_reads_it_back() {
        let mut s = base();
        s.engine = EngineKind::Uring;
        s.pattern = AccessPattern::Rand;
        s.bs = 4096;
        s.qd = 16;
        s.threads = 2;
        let text = job_file(&s).unwrap();
        assert!(
            text.contains(
                "\n[iolab]\nfilename=/data/f\nioengine=io_uring\nrw=randread\nbs=4k\nnorandommap\n"
            ),
            "{text}"
        );
        assert!(!text.contains("output-format"));
        // Read back through iolab's own job-file reader: the same workload.
        let mut r = crate::parse::Reader::new();
        r.read_text(&text, std::path::Path::new("x.fio"), 0)
            .unwrap();
        let raw = r.finish();
        let clones = crate::map::map_all(&raw, false).unwrap();
        let back = clones[0].spec.clone();
        assert_eq!(
            (
                back.engine,
                back.op,
                back.pattern,
                back.bs,
                back.qd,
                clones.len() as u32,
                back.direct
            ),
            (s.engine, s.op, s.pattern, s.bs, s.qd, s.threads, s.direct)
        );
        assert_eq!(back.stop.time_ns, s.stop.time_ns);
        assert_eq!(back.file, s.file);
        // Threads on slices of one file, per-thread files, byte limits.
        let mut variants = Vec::new();
        let mut v = base();
        v.threads = 4;
        v.stop = StopRule {
            bytes: Some(1 << 30),
            ..Default::default()
        };
        variants.push(v.clone());
        v.file_per_thread = true;
        variants.push(v.clone());
        v.threads = 1;
        v.file_per_thread = false;
        v.op = OpMix::Write;
        v.stop = StopRule {
            ops: Some(1000),
            ..Default::default()
        };
        variants.push(v);
        // Two files shared by two threads from an offset; three files per
        // thread with runs of random I/Os, on pinned threads.
        let mut v = base();
        v.threads = 2;
        v.more_files = vec![PathBuf::from("/data/g")];
        v.offset = 1 << 20;
        v.stop = StopRule {
            bytes: Some(1 << 30),
            ..Default::default()
        };
        variants.push(v.clone());
        v.more_files.clear();
        v.nrfiles = 3;
        v.file_per_thread = true;
        v.pattern = AccessPattern::RandRun(8);
        variants.push(v.clone());
        v.pattern = AccessPattern::ShuffleRun(4);
        let cpu = iolab::primitives::allowed_cpus().unwrap()[0] as u32;
        v.cpus = Some(iolab_bench::pin::CpuPin {
            cpus: vec![cpu],
            split: true,
            first: 0,
        });
        variants.push(v);
        for s in variants {
            let text = job_file(&s).unwrap();
            let mut r = crate::parse::Reader::new();
            r.read_text(&text, std::path::Path::new("x.fio"), 0)
                .unwrap();
            let clones =
                crate::map::map_all(&r.finish(), false).unwrap_or_else(|e| panic!("{e}\n{text}"));
            let back = clones[0].spec.clone();
            assert_eq!(
                (back.op, back.pattern, clones.len() as u32),
                (s.op, s.pattern, s.workers()),
                "{text}"
            );
            // fio also stops after `size` per job: the same limit iolab's
            // ops or time limits reach first.
            // Each clone is one of iolab's threads: their limits add up
            // to the spec's, and their files are its files.
            let sum = |f: fn(&iolab_bench::spec::WorkloadSpec) -> Option<u64>| {
                clones.iter().map(|c| f(&c.spec)).sum::<Option<u64>>()
            };
            let bytes = s.stop.bytes.or(Some(s.file_size * s.files().len() as u64));
            assert_eq!(
                (sum(|c| c.stop.bytes), sum(|c| c.stop.ops)),
                (bytes, s.stop.ops),
                "{text}"
            );
            let mut files: Vec<PathBuf> = Vec::new();
            for c in &clones {
                for f in c.spec.files() {
                    if !files.contains(&f) {
                        files.push(f);
                    }
                }
            }
            assert_eq!(files, s.files(), "{text}");
            assert_eq!(back.offset, s.offset, "{text}");
            assert_eq!(
                back.cpus.as_ref().map(|c| (&c.cpus, c.split)),
                s.cpus.as_ref().map(|c| (&c.cpus, c.split)),
                "{text}"
            );
        }
    }

    #[test]
    fn parses_fio_json() {
        let j = r#"{"jobs":[{"usr_cpu":1.5,"sys_cpu":10.0,
            "read":{"io_bytes":4096000,"bw_bytes":1048576,"iops":256.0,
              "lat_ns":{"percentile":{"50.000000":1000,"99.000000":5000,"99.900000":9000}}},
            "write":{"io_bytes":0,"bw_bytes":0,"iops":0}}]}"#;
        let c = Comparable::of_fio_json(j).unwrap();
        assert_eq!(
            (
                c.mib_per_s,
                c.iops,
                c.p50_ns,
                c.p99_ns,
                c.p99_9_ns,
                c.cpu_pct
            ),
            (1.0, 256.0, 1000.0, 5000.0, 9000.0, 11.5)
        );
        assert!(Comparable::of_fio_json("fio: bad option").is_err());
        // Group reporting over 2 jobs averages CPU per job: scaled back up.
        let j2 = j.replace(r#""usr_cpu""#, r#""job options":{"numjobs":"2"},"usr_cpu""#);
        assert_eq!(Comparable::of_fio_json(&j2).unwrap().cpu_pct, 23.0);
        // fio measures its job threads: that is its submitting CPU, and it
        // has no figure for helper or kernel threads.
        assert_eq!(c.cpu_submit_pct, 11.5);
        assert_eq!(c.cpu_offload_pct, None);
        // With --disable_lat=1 the percentiles are clat's.
        let j3 = j.replace("lat_ns", "clat_ns");
        assert_eq!(Comparable::of_fio_json(&j3).unwrap().p99_ns, 5000.0);
    }
}
