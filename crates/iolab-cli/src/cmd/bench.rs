//! `iolab bench`: one measurement, or the cartesian product of the
//! comma-separated values of `--engine --bs --qd --batch --threads --pattern`.

pub use super::bench_args::{BenchArgs, CpusPolicy, OpArg, WriteFill};
use super::session::{prepare_files, temp_path, Session};
use crate::output::{self, Exporter};
use anyhow::Result;
use iolab::engine::{EngineKind, EngineOpts, UringOpts};
use iolab_bench::env::Environment;
use iolab_bench::measure::{self, Measure};
use iolab_bench::pin::CpuPin;
use iolab_bench::prepare;
use iolab_bench::record::{unix_ms, BenchRecord, IntervalSample};
use iolab_bench::spec::{CacheMode, OpMix, StopRule, SyncEvery, WorkloadSpec};
use iolab_bench::BenchError;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

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
    super::limits::check_bench(a)?;
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
                        }
                    }
                }
            }
        }
    }
    v
}

/// What every configuration of the sweep shares: the flags that are not
/// swept (the swept ones are filled in by [`specs`]).
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
        mem: a.mem,
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
                    eprintln!("note: skipping {}: {e}", s.label());
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

/// Runs every configuration `repeat` times, feeding exporters as records
/// complete. Stops early (keeping what was measured) on Ctrl-C, and at a
/// run that fails: what it measured is recorded and the error handed back
/// next to the records, for the caller to report after printing them.
// Long on purpose: the loop over configurations and repeats reads best
// whole, with its three ways out (Ctrl-C, a failed run, a blocked write).
pub fn execute(
    specs: &[WorkloadSpec],
    ses: &Session,
    temp: bool,
    exporters: &mut [Box<dyn Exporter>],
    mut each: impl FnMut(&BenchRecord),
) -> Result<(Vec<BenchRecord>, Option<BenchError>)> {
    let mut failed = None;
    let mut env = Environment::capture(
        &specs[0]
            .file
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| ".".into()),
    );
    env.waker = ses.waker.clone();
    let total = specs.len() as u64 * ses.repeat as u64;
    let pb = crate::progress::runs(total);
    let mut records = Vec::new();
    for spec in specs {
        if ses.stop.load(Ordering::Relaxed) {
            break;
        }
        let prep = prepare_files(spec, ses, temp)?;
        if ses.stop.load(Ordering::Relaxed) {
            break;
        }
        let size = if ses.size_given {
            spec.file_size
        } else {
            prep.region_len(spec.offset)
        };
        let mut spec = spec.clone();
        spec.file_size = size;
        let started = unix_ms();
        pb.set_message(spec.label());
        let pb2 = pb.clone();
        let live = |s: &IntervalSample| say(&pb2, output::table::interval_line(s));
        let m = Measure {
            on_interval: if ses.live { Some(&live) } else { None },
            ..Measure::new(ses.stop, ses.repeat)
        };
        let mut shown = Shown {
            pb: &pb,
            label: spec.label(),
        };
        let measured = measure::runs(&spec, &prep, &m, &mut shown)?;
        let runs = measured.runs;
        failed = measured.error;
        if runs.is_empty() {
            break;
        }
        let rec = BenchRecord::new(spec.clone(), env.clone(), started, runs);
        let written = exporters.iter_mut().try_for_each(|e| e.record(&rec));
        each(&rec);
        records.push(rec);
        if let Err(e) = written {
            // A write blocked (a FIFO nobody reads) and Ctrl-C ended it:
            // still print what was measured. Any other failure is an error.
            if ses.stop.load(Ordering::SeqCst) {
                break;
            }
            return Err(e);
        }
        if failed.is_some() {
            break;
        }
    }
    pb.finish_and_clear();
    for e in exporters.iter_mut() {
        if let Err(e) = e.finish() {
            if !ses.stop.load(Ordering::SeqCst) {
                return Err(e);
            }
        }
    }
    Ok((records, failed))
}

/// Each run's warnings, and one step of the progress bar.
struct Shown<'a> {
    pb: &'a indicatif::ProgressBar,
    label: String,
}

impl measure::Hooks for Shown<'_> {
    fn after(&mut self, m: &iolab_bench::record::RunMetrics) {
        for w in output::table::warnings(m) {
            say(self.pb, format!("warning: {}: {w}", self.label));
        }
        self.pb.inc(1);
    }
}

/// A line on stderr that does not tear the progress bar (which is hidden,
/// and would swallow the line, when stderr is not a terminal).
fn say(pb: &indicatif::ProgressBar, line: String) {
    if pb.is_hidden() {
        eprintln!("{line}");
    } else {
        pb.println(line);
    }
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
    targets: Option<output::flags::Targets>,
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
    if let Some(code) = super::ranks::maybe_run(a, stop, &planner)? {
        return Ok(code);
    }
    let Plan {
        temp,
        file,
        size_given,
        all,
        targets,
    } = plan(a)?;
    let Some(targets) = targets else {
        if a.fio_job {
            return super::fio::print_job_files(&all, temp);
        }
        let fair = a.print_fio.as_deref() == Some("fair");
        return super::vs::print_commands(&all, fair);
    };
    let all = super::lab::resume_bench(a.resume, a.out.jsonl.as_deref(), &a.dir, all)?;
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
    let wakers = super::waker::Wakers::for_run(a.waker, a.vs.is_some(), a.cpus.as_ref())?;
    let ses = Session {
        stop,
        repeat: a.repeat,
        size_given,
        overwrite: a.out.overwrite,
        live: a.interval.is_some(),
        waker: wakers.as_ref().map(|w| w.info.clone()),
    };
    let mut exporters: Vec<Box<dyn Exporter>> = Vec::new();
    if let Some(t) = targets.csv {
        exporters.push(Box::new(output::csv::Csv::new(t)));
    }
    if let Some(t) = targets.jsonl {
        exporters.push(Box::new(output::jsonl::JsonLines::new(t)));
    }
    if a.out.json {
        exporters.push(Box::new(output::json::Json::default()));
    }
    let single = all.len() == 1;
    if a.vs.is_some() {
        super::vs::check(&all)?;
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
            let rec = super::vs::compare(s, &ses, temp, a.pairs, &env)?;
            for e in exporters.iter_mut() {
                e.record(&rec)?;
            }
            text.push_str(&super::vs::render(&rec));
            text.push('\n');
        }
        for e in exporters.iter_mut() {
            e.finish()?;
        }
        if !a.out.json {
            text.push_str(&output::table::footer(1));
            output::stdout(&text)?;
        }
        return Ok(if stop.load(Ordering::Relaxed) { 130 } else { 0 });
    }
    let (records, failed) = execute(&all, &ses, temp, &mut exporters, |_| {})?;
    if !a.out.json && !records.is_empty() {
        let mut text = if single {
            output::table::detail(&records[0])
        } else {
            output::table::sweep(&records)
        };
        text.push_str(&output::table::footer(a.repeat as usize));
        output::stdout(&text)?;
    }
    if let Some(e) = failed {
        return Err(e.into());
    }
    Ok(if stop.load(Ordering::Relaxed) { 130 } else { 0 })
}
