//! `iolab bench`: one measurement, or the cartesian product of the
//! comma-separated values of `--engine --bs --qd --batch --threads --pattern`.

pub use crate::bench_args::{BenchArgs, CpusPolicy, OpArg, WriteFill};
use crate::export::{self, Exporters};
use crate::session::{temp_path, Session};
use crate::sweep::execute;
use anyhow::Result;
use iolab::engine::{EngineKind, EngineOpts, UringOpts};
use iolab_bench::env::Environment;
use iolab_bench::pin::CpuPin;
use iolab_bench::prepare;
use iolab_bench::spec::{CacheMode, OpMix, StopRule, SyncEvery, WorkloadSpec};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Every combination of flags that cannot run, refused in one line each
/// before anything is made.
// Long on purpose: one flat list of independent checks, each a few lines,
// read best in the order the flags appear in --help.
fn check_flags(a: &BenchArgs) -> Result<()> {
    let uring_only = [
        ("--reg-files", a.reg_files),
        ("--fixed-bufs", a.fixed_bufs),
        ("--sqpoll", a.sqpoll),
        ("--iopoll", a.iopoll),
        ("--sqpoll-idle", a.sqpoll_idle.is_some()),
        ("--sqpoll-cpu", a.sqpoll_cpu.is_some()),
        ("--sqpoll-wait", a.sqpoll_wait.is_some()),
        ("--uring-nop", a.uring_nop),
    ];
    for (flag, set) in uring_only {
        if set {
            if let Some(e) = a.engine.iter().find(|e| **e != EngineKind::Uring) {
                return Err(super::usage(format!(
                    "{flag}: only the uring engine takes it, not {e}"
                )));
            }
        }
    }
    if a.pool_threads.is_some() {
        if let Some(e) = a.engine.iter().find(|e| **e != EngineKind::Threadpool) {
            return Err(super::usage(format!(
                "--pool-threads: only the threadpool engine takes it, not {e}"
            )));
        }
    }
    if (a.sqpoll_idle.is_some() || a.sqpoll_cpu.is_some() || a.sqpoll_wait.is_some()) && !a.sqpoll {
        return Err(super::usage(
            "--sqpoll-idle/--sqpoll-cpu/--sqpoll-wait need --sqpoll",
        ));
    }
    if let Some(c) = a.sqpoll_cpu {
        let n = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1);
        if c as usize >= n {
            return Err(super::usage(format!(
                "--sqpoll-cpu {c}: this machine has CPUs 0..{} only",
                n - 1
            )));
        }
    }
    if a.direct && a.buf_offset.is_some_and(|o| o > 0) {
        return Err(super::usage(
            "--buf-offset must be 0 with --direct: O_DIRECT needs aligned buffers",
        ));
    }
    if a.iopoll && !a.direct {
        return Err(super::usage(
            "--iopoll needs --direct: polled completion bypasses the page cache",
        ));
    }
    if a.drop_caches && a.cache != CacheMode::Cold {
        return Err(super::usage("--drop-caches goes with --cache cold"));
    }
    if a.op != OpArg::Rw && a.read_pct != 70 {
        return Err(super::usage("--read-pct needs --op rw"));
    }
    if let Some(p) = cpu_pin(a) {
        p.check_here()
            .map_err(|e| super::usage(format!("--cpus {}: {e}", p.list())))?;
    }
    crate::limits::check_bench(a)?;
    crate::gpu_bench::check(a)?;
    if a.time.is_some_and(|t| t.is_zero()) {
        return Err(super::usage(
            "--time 0: give a positive duration (e.g. 10s)",
        ));
    }
    if a.op_timeout.is_some_and(|t| t < Duration::from_millis(1)) {
        return Err(super::usage("--op-timeout: use at least 1ms (e.g. 5s)"));
    }
    if a.interval.is_some_and(|t| t < Duration::from_millis(10)) {
        return Err(super::usage("--interval: use at least 10ms"));
    }
    Ok(())
}

/// `--cpus` and `--cpus-policy`.
fn cpu_pin(a: &BenchArgs) -> Option<CpuPin> {
    a.cpus.as_ref().map(|p| CpuPin {
        split: a.cpus_policy == Some(CpusPolicy::Split),
        ..p.clone()
    })
}

/// The configurations the flags describe (cartesian product).
fn specs(a: &BenchArgs, file: &Path, size: u64) -> Vec<WorkloadSpec> {
    let base = base_spec(a, file, size);
    let mut v = Vec::new();
    for &engine in &a.engine {
        for &pattern in &a.pattern {
            for &bs in &a.bs {
                for &qd in &a.qd {
                    for &batch in &a.batch {
                        for &threads in &a.threads {
                            v.push(WorkloadSpec {
                                engine,
                                pattern,
                                bs,
                                qd,
                                batch_submit: batch,
                                batch_complete: a.batch_complete.min(qd.max(1)),
                                threads,
                                // --rate is in bytes: ops per second at this block size.
                                rate_iops: a
                                    .rate_iops
                                    .or(a.rate.map(|r| (r / bs.max(1)).max(1)))
                                    .filter(|r| *r > 0),
                                ..base.clone()
                            });
                            let last = v.pop().expect("just pushed");
                            v.push(stay_cold(last, a));
                        }
                    }
                }
            }
        }
    }
    v
}

/// A cold run through the page cache stays cold unless a count was asked
/// for (`--ops`, `--io-size`): a sequential run ends after one pass over
/// the data (a second would come from memory) and a random one after
/// touching a few percent of its pages (reads with replacement would hit
/// pages it brought in itself), so the default run measures what it says.
fn stay_cold(mut s: WorkloadSpec, a: &BenchArgs) -> WorkloadSpec {
    use iolab_bench::spec::AccessPattern::*;
    let counted = a.ops.is_some() || a.io_size.is_some();
    // The size of an existing file is known only once it is opened.
    if counted || s.op.writes() || s.cache != CacheMode::Cold || s.direct || s.data_bytes() == 0 {
        return s;
    }
    match s.pattern {
        // With replacement: a later read may hit a page read before.
        Rand | RandRun(_) | Skewed(_) => {
            s.stop.ops = iolab_bench::residency::cold_ops_limit(&s);
        }
        // Each block once per pass: only a second pass comes from memory.
        Seq | Shuffle | ShuffleRun(_) if s.stop.time_ns.is_some() => {
            s.stop.bytes = Some(s.data_bytes());
        }
        _ => {}
    }
    s
}

/// What every configuration of the sweep shares: the flags that are not
/// swept (the swept ones are filled in by [`specs`]).
// Long on purpose: the spec and its engine options are two struct
// literals, one field a line.
fn base_spec(a: &BenchArgs, file: &Path, size: u64) -> WorkloadSpec {
    let op = match a.op {
        OpArg::Read => OpMix::Read,
        OpArg::Write => OpMix::Write,
        OpArg::Rw => OpMix::Rw {
            read_pct: a.read_pct,
        },
    };
    let engine_opts = EngineOpts {
        hipri: a.hipri,
        mmap_touch: a.mmap_touch,
        access: Default::default(),
        pool_threads: a.pool_threads.unwrap_or(0),
        mem: a.mem.host,
        buf_offset: a.buf_offset,
        uring: UringOpts {
            // SQPOLL always registers the files (as fio does): say so in the record.
            reg_files: a.reg_files || a.sqpoll,
            fixed_bufs: a.fixed_bufs,
            sqpoll: a.sqpoll,
            sqpoll_idle_ms: a.sqpoll_idle,
            sqpoll_cpu: a.sqpoll_cpu,
            sqpoll_wait: a.sqpoll_wait.unwrap_or_default(),
            iopoll: a.iopoll,
            nop: a.uring_nop,
        },
    };
    let ns = |t: Duration| t.as_nanos() as u64;
    WorkloadSpec {
        op,
        file_per_thread: a.file_per_thread,
        file: file.to_path_buf(),
        more_files: a
            .named_files()
            .and_then(|v| v.get(1..).map(<[PathBuf]>::to_vec))
            .unwrap_or_default(),
        nrfiles: a.nrfiles,
        file_size: size,
        offset: a.offset,
        direct: a.direct,
        cache: a.cache,
        drop_caches: a.drop_caches,
        engine_opts,
        stop: StopRule {
            bytes: a.io_size,
            ops: a.ops,
            time_ns: a.time.map(ns),
        },
        ramp_ns: a.ramp.map(ns).unwrap_or(0),
        interval_ns: a.interval.map(ns),
        seed: a.seed,
        verify: a.verify,
        write_once: a.write_fill == WriteFill::Once,
        continue_on_error: a.continue_on_error,
        op_timeout_ns: a.op_timeout.map(ns),
        thinktime_ns: a.thinktime.map(ns).filter(|t| *t > 0),
        time_submit: false,
        place: None,
        sync_every: a
            .fsync
            .map(|writes| (writes, false))
            .or(a.fdatasync.map(|writes| (writes, true)))
            .map(|(writes, data_only)| SyncEvery { writes, data_only }),
        cpus: cpu_pin(a),
        placement: a.placement,
        lat: a.lat,
        noatime: a.noatime,
        copy_to_gpu: a.mem.gpu,
        ..WorkloadSpec::default()
    }
}

/// Keeps the valid configurations; a sweep skips invalid combinations with
/// a note, a single invalid configuration is an error.
pub fn valid_only(all: Vec<WorkloadSpec>) -> Result<Vec<WorkloadSpec>> {
    let n = all.len();
    let mut ok = Vec::new();
    let mut first_err = None;
    for s in all {
        match prepare::validate(&s) {
            Ok(()) => ok.push(s),
            Err(e) => {
                if n > 1 {
                    eprintln!("note: skipping {}: {e}", export::table::in_words(&s));
                }
                first_err.get_or_insert(e);
            }
        }
    }
    if ok.is_empty() {
        return Err(first_err.expect("at least one configuration").into());
    }
    Ok(ok)
}

/// What `run` decides before measuring anything: the checked flags, the
/// valid configurations and the checked output files. Creates, opens for
/// writing and measures nothing, so the fuzz tests call it in process.
pub(crate) struct Plan {
    temp: bool,
    file: PathBuf,
    size_given: bool,
    all: Vec<WorkloadSpec>,
    /// None with --print-fio or --fio-job (nothing is written).
    targets: Option<export::flags::Targets>,
}

/// Checks `a` and plans the run (see [`Plan`]).
pub(crate) fn plan(a: &BenchArgs) -> Result<Plan> {
    check_flags(a)?;
    let named = a.named_files();
    if named.as_ref().is_some_and(|v| v.is_empty()) {
        return Err(super::usage(
            "--files: give the files as A:B (e.g. --files data.0:data.1)",
        ));
    }
    let temp = named.is_none();
    let file = match &named {
        Some(f) => f[0].clone(),
        None => temp_path(&a.dir)?,
    };
    let size_given = a.size.is_some() || temp;
    let size = match (a.size, &named) {
        (Some(s), _) => s,
        (None, None) => 1 << 30,
        (None, Some(names)) => {
            let f = &names[0];
            if std::fs::symlink_metadata(f).is_err() && !a.file_per_thread && a.nrfiles == 1 {
                let flag = if a.file.is_some() {
                    "--file"
                } else {
                    "--files"
                };
                return Err(super::usage(format!(
                    "{flag} {}: no such file; give --size to create it (e.g. --size 1g)",
                    f.display()
                )));
            }
            0
        }
    };
    let all = valid_only(specs(a, &file, size))?;
    if a.print_fio.is_some() || a.fio_job {
        return Ok(Plan {
            temp,
            file,
            size_given,
            all,
            targets: None,
        });
    }
    let mut measured: Vec<PathBuf> = all.iter().flat_map(|s| s.files()).collect();
    measured.dedup();
    for f in &measured {
        prepare::check_file_kind(f, all.iter().any(|s| s.op.writes()))?;
    }
    let targets = a.out.check(&measured)?;
    Ok(Plan {
        temp,
        file,
        size_given,
        all,
        targets: Some(targets),
    })
}

/// Runs `iolab bench`.
// Long on purpose: the command's outline, from flags to printed table;
// each step is a call into a named function.
pub fn run(a: &BenchArgs, stop: &AtomicBool) -> Result<i32> {
    let planner = |b: &BenchArgs| plan(b).map(|p| (p.all, p.targets));
    if let Some(code) = crate::ranks::maybe_run(a, stop, &planner)? {
        return Ok(code);
    }
    let Plan {
        temp,
        file,
        size_given,
        all,
        targets,
    } = plan(a)?;
    if temp {
        crate::work_dir::ensure("--dir", &a.dir)?;
    }
    let Some(targets) = targets else {
        if a.fio_job {
            return crate::vs::print_job_files(&all, temp);
        }
        let fair = a.print_fio.as_deref() == Some("fair");
        return crate::vs::print_commands(&all, fair);
    };
    let all = crate::sweep::resume_bench(
        a.resume,
        a.out.file("--jsonl").map(|p| p.as_path()),
        &a.dir,
        all,
    )?;
    if all.is_empty() {
        return Ok(0);
    }
    if all.iter().any(|s| s.engine == EngineKind::Libaio) {
        if let Some(w) = iolab::engine::libaio::buffered_warning(a.direct) {
            eprintln!("warning: {w}");
        }
    }
    // Started before the first run, ended (killed and reaped) when this
    // function returns.
    let wakers = crate::waker::Wakers::for_run(a.waker, a.vs.is_some(), a.cpus.as_ref())?;
    let ses = Session {
        stop,
        repeat: a.repeat,
        size_given,
        overwrite: a.out.overwrite,
        live: a.interval.is_some(),
        waker: wakers.as_ref().map(|w| w.info.clone()),
    };
    let mut exporters = Exporters::new(targets);
    if a.out.json {
        exporters.push(Box::new(export::json::Json::new(
            iolab_bench::record::SCHEMA_VERSION,
        )));
    }
    let single = all.len() == 1;
    if a.vs.is_some() {
        crate::vs::check(&all)?;
        let env = Environment::capture(
            &file
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_else(|| ".".into()),
        );
        let mut text = String::new();
        for s in &all {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let rec = crate::vs::compare(s, &ses, temp, a.pairs, &env)?;
            exporters.record(&rec)?;
            text.push_str(&crate::vs::render(&rec));
            text.push('\n');
        }
        exporters.finish()?;
        if !a.out.json {
            text.push_str(&export::table::footer(1));
            export::stdout(&text)?;
        }
        return Ok(if stop.load(Ordering::Relaxed) { 130 } else { 0 });
    }
    let (records, failed) = execute(&all, &ses, temp, &mut exporters, |_| {})?;
    if !a.out.json && !records.is_empty() {
        let mut text = if single {
            export::table::detail(&records[0])
        } else {
            export::table::sweep(&records)
        };
        text.push_str(&export::table::footer(a.repeat as usize));
        export::stdout(&text)?;
    }
    if let Some(e) = failed {
        return Err(e.into());
    }
    if stop.load(Ordering::Relaxed) {
        return Ok(130);
    }
    if let Some(line) = failed_ops(&records) {
        eprintln!("error: {line}");
        return Ok(1);
    }
    Ok(0)
}

/// With --continue-on-error a run goes on past failed ops (an error, a
/// short transfer, a verify mismatch): it still failed, and says so.
fn failed_ops(records: &[iolab_bench::record::BenchRecord]) -> Option<String> {
    let (mut n, mut first) = (0u64, None);
    for r in records {
        for m in &r.runs {
            n += m.errors;
            if first.is_none() {
                first = m.first_errors.first().cloned();
            }
        }
    }
    (n > 0).then(|| {
        format!(
            "{n} ops failed (kept going: --continue-on-error); first: {}",
            first.as_deref().unwrap_or("not kept")
        )
    })
}
