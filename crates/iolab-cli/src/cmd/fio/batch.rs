//! Running fio's jobs as fio runs them: the jobs between two stonewalls at
//! the same time, each on its own thread, a job with `wait_for` after the
//! one it names, `startdelay`, `exitall` ending the jobs it says; per job
//! its files laid out first, then the measurement, the read-back of
//! `verify`, `end_fsync`, and what fails a job afterwards (`rate_min`,
//! `max_latency`).

use super::cli::Cli;
use crate::session::{prepare_files, Session};
use anyhow::{Context, Result};
use iolab_bench::measure::{self, Cache, Measure, NoHooks};
use iolab_bench::prepare;
use iolab_bench::record::RunMetrics;
use iolab_bench::spec::{AccessPattern, OpMix, StopRule, WorkloadSpec};
use iolab_fio::map::{ExitWhat, FioJob};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// One job's measured runs: its I/O, and the read-back of `verify`.
#[derive(Clone, Debug, Default)]
pub struct Measured {
    /// The job's own run.
    pub run: RunMetrics,
    /// The verification pass, reported as the job's reads (as fio does).
    pub verify: Option<RunMetrics>,
    /// Why the job failed after it ran (`rate_min`, `max_latency`).
    pub failed: Option<String>,
}

/// A job's files laid out and its cache state set, ready to measure.
struct Ready {
    spec: WorkloadSpec,
    prep: prepare::Prepared,
    resident: f64,
}

/// Checks a job's files, lays them out and sets the cache state.
fn prepare_job(j: &FioJob, c: &Cli, stop: &AtomicBool) -> Result<Ready> {
    let spec = &j.spec;
    if !spec.no_files {
        for f in spec.files() {
            if !j.size_given && std::fs::symlink_metadata(&f).is_err() {
                return Err(crate::error::usage(format!(
                    "{} does not exist and no size is given; add size= (e.g. size=1g)",
                    f.display()
                )));
            }
            prepare::check_file_kind(&f, spec.op.writes())?;
            if !j.allow_file_create && std::fs::symlink_metadata(&f).is_err() {
                return Err(crate::error::usage(format!(
                    "allow_file_create=0 and {} does not exist",
                    f.display()
                )));
            }
        }
    }
    let ses = Session {
        stop,
        repeat: 1,
        size_given: j.size_given,
        overwrite: c.overwrite,
        live: false,
        waker: None,
    };
    // With unlink=1 the files this run creates stay registered for
    // removal (by identity: never a file that was already there).
    let prep = prepare_files(spec, &ses, j.unlink)?;
    let mut spec = spec.clone();
    if !j.size_given {
        spec.file_size = prep.region_len(spec.offset);
        if spec.stop.bytes.is_some() && spec.stop.time_ns.is_none() {
            spec.stop.bytes = Some(spec.file_size * spec.files().len() as u64);
        }
    }
    let resident = prepare::set_cache(&spec, &prep, spec.file_size)?;
    Ok(Ready {
        spec,
        prep,
        resident,
    })
}

/// Sleeps `ns`, or less if `stop` is set.
fn delay(ns: u64, stop: &AtomicBool) {
    let end = Instant::now() + Duration::from_nanos(ns);
    while Instant::now() < end && !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(20).min(end - Instant::now()));
    }
}

/// Measures `spec` once on prepared files.
fn once(spec: &WorkloadSpec, r: &Ready, resident: f64, stop: &AtomicBool) -> Result<RunMetrics> {
    let m = Measure {
        cache: Cache::Given(resident),
        // ioengine=libcufile: each read copied into its GPU.
        engines: crate::gpu_bench::engines(spec),
        ..Measure::new(stop, 1)
    };
    Ok(measure::runs(spec, &r.prep, &m, &mut NoHooks)?.one()?)
}

/// The read-back of a job that wrote with `verify`: its whole region, in
/// order, every byte checked against the pattern its writes carry.
fn verify_spec(spec: &WorkloadSpec) -> WorkloadSpec {
    WorkloadSpec {
        op: OpMix::Read,
        pattern: AccessPattern::Seq,
        verify: true,
        sizes: None,
        trim: None,
        pacing: Default::default(),
        rate_iops: None,
        thinktime_ns: None,
        sync_every: None,
        stop: StopRule {
            bytes: Some(spec.file_size * spec.files().len() as u64),
            ..StopRule::default()
        },
        ramp_ns: 0,
        ..spec.clone()
    }
}

/// The job's files with the pattern its writes carried: iolab's own
/// file's, or (a file iolab did not make) the one its writes fill with,
/// when they covered the whole region once; otherwise the bytes outside
/// what was written are unknown, and the read-back is refused.
fn patterned(j: &FioJob, r: &Ready) -> Result<prepare::Prepared> {
    let mut prep = r.prep.clone();
    let s = &r.spec;
    let only = j.verify.as_ref().is_some_and(|v| v.only);
    let whole = !only
        && matches!(s.pattern, AccessPattern::Seq | AccessPattern::Shuffle)
        && s.stop.time_ns.is_none()
        && s.stop.bytes.unwrap_or(0) >= s.file_size * s.files().len() as u64;
    for f in &mut prep.files {
        if f.pattern.is_none() {
            if !whole {
                return Err(crate::error::usage(format!(
                    "verify: {} was not made by iolab and job '{}' does not write all of it once, so what it should hold is unknown (remove it and iolab lays it out)",
                    f.path.display(),
                    j.name
                )));
            }
            f.pattern = Some(iolab::pattern::Pattern::new(0));
        }
    }
    Ok(prep)
}

/// Waits the job's `startdelay`, then measures it (and reads back what it
/// wrote when it verifies).
fn measure(j: &FioJob, r: &Ready, stop: &AtomicBool) -> Result<Measured> {
    delay(j.startdelay_ns, stop);
    if j.create_only {
        return Ok(Measured::default());
    }
    let verify = j.verify.as_ref();
    let mut run = if verify.is_some_and(|v| v.only) {
        RunMetrics::default()
    } else {
        once(&r.spec, r, r.resident, stop)?
    };
    if j.end_fsync {
        fsync(r, Some(&mut run))?;
    }
    if j.fsync_on_close {
        fsync(r, None)?;
    }
    let verify = match verify {
        Some(v) if (v.after_writes || v.only) && !stop.load(Ordering::Relaxed) => {
            let spec = verify_spec(&r.spec);
            let back = Ready {
                spec: spec.clone(),
                prep: patterned(j, r)?,
                resident: 0.0,
            };
            let resident = prepare::set_cache(&spec, &back.prep, spec.file_size)?;
            Some(
                once(&spec, &back, resident, stop)
                    .context("verify: reading back what the job wrote")?,
            )
        }
        _ => None,
    };
    let failed = after_checks(j, &run);
    Ok(Measured {
        run,
        verify,
        failed,
    })
}

/// fsyncs the job's files: with `run` (`end_fsync`), inside the job's
/// measured time, as fio counts it; without (`fsync_on_close`), outside.
fn fsync(r: &Ready, run: Option<&mut RunMetrics>) -> Result<()> {
    if r.spec.no_files {
        return Ok(());
    }
    let t0 = Instant::now();
    for f in &r.prep.files {
        std::fs::File::open(&f.path)
            .and_then(|h| h.sync_all())
            .with_context(|| format!("end_fsync: {}", f.path.display()))?;
    }
    if let Some(m) = run {
        m.duration_ns += t0.elapsed().as_nanos() as u64;
        let secs = m.duration_ns.max(1) as f64 / 1e9;
        m.mib_per_s = m.bytes as f64 / secs / (1 << 20) as f64;
        m.iops = m.ops as f64 / secs;
    }
    Ok(())
}

/// `rate_min` over each `rate_cycle`, and `max_latency`: why fio would
/// fail the job, if it would.
fn after_checks(j: &FioJob, run: &RunMetrics) -> Option<String> {
    if let (Some(max), Some(h)) = (j.max_latency_ns, run.latency_hist.as_ref()) {
        if !h.is_empty() && h.max() > max {
            return Some(format!(
                "max_latency: an I/O took {} us, more than {} us",
                h.max() / 1000,
                max / 1000
            ));
        }
    }
    let rm = j.rate_min?;
    let per_iv = j.report.interval_ms.max(1);
    let n = (rm.cycle_ms / per_iv).max(1) as usize;
    let samples: Vec<f64> = run
        .intervals
        .iter()
        .map(|s| {
            if rm.bytes {
                s.mib_per_s * (1 << 20) as f64
            } else {
                s.iops
            }
        })
        .collect();
    for (i, w) in samples.chunks(n).enumerate() {
        let got = w.iter().sum::<f64>() / w.len() as f64;
        if w.len() == n && got < rm.per_sec as f64 {
            let unit = if rm.bytes { "B/s" } else { "IOPS" };
            return Some(format!(
                "rate_min: {} {unit} not met in the {} ms ending at {} ms: {got:.0} {unit}",
                rm.per_sec,
                rm.cycle_ms,
                (i + 1) as u64 * n as u64 * per_iv
            ));
        }
    }
    None
}

/// `unlink=1`: removes the files this run created (never others).
fn unlink(j: &FioJob, r: &Ready) {
    if !j.unlink || r.spec.no_files {
        return;
    }
    for f in &r.prep.files {
        if f.created {
            crate::cleanup::remove(&f.path);
        } else {
            eprintln!(
                "note: {}: unlink: {} was not created by this run; kept",
                j.loc,
                f.path.display()
            );
        }
    }
}

/// Which jobs have ended (for `wait_for`), and the stop flags `exitall`
/// sets.
pub struct Board {
    ended: Mutex<Vec<bool>>,
    cv: Condvar,
    /// Per job: set to stop it early (Ctrl-C, or another job's `exitall`).
    stops: Vec<AtomicBool>,
    /// `exit_what=all`: no later batch starts.
    pub all_done: AtomicBool,
}

impl Board {
    /// For `n` jobs.
    pub fn new(n: usize) -> Self {
        Board {
            ended: Mutex::new(vec![false; n]),
            cv: Condvar::new(),
            stops: (0..n).map(|_| AtomicBool::new(false)).collect(),
            all_done: AtomicBool::new(false),
        }
    }

    fn end(&self, i: usize) {
        let mut e = self.ended.lock().unwrap_or_else(|p| p.into_inner());
        e[i] = true;
        self.cv.notify_all();
    }

    /// Waits until every job named `name` has ended (or Ctrl-C).
    fn wait_for(&self, jobs: &[FioJob], name: &str, stop: &AtomicBool) {
        let mut e = self.ended.lock().unwrap_or_else(|p| p.into_inner());
        while !stop.load(Ordering::Relaxed)
            && jobs
                .iter()
                .enumerate()
                .any(|(i, j)| j.name == name && !e[i])
        {
            e = self
                .cv
                .wait_timeout(e, Duration::from_millis(50))
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }
}

/// Runs one batch (indices into `jobs`) at the same time, each on its own
/// thread; results in the batch's order.
pub fn run_batch(
    jobs: &[FioJob],
    batch: &[usize],
    c: &Cli,
    stop: &AtomicBool,
    board: &Board,
) -> Result<Vec<Measured>> {
    let ctx = |j: &FioJob| format!("{}: job '{}'", j.loc, j.name);
    let mut ready = Vec::new();
    for &i in batch {
        ready.push(prepare_job(&jobs[i], c, stop).with_context(|| ctx(&jobs[i]))?);
    }
    let runs: Vec<Result<Measured>> = std::thread::scope(|s| {
        let forward = s.spawn(|| forward_stop(batch, stop, board));
        let hs: Vec<_> = batch
            .iter()
            .zip(&ready)
            .map(|(&i, r)| s.spawn(move || run_one(jobs, i, batch, r, board, stop)))
            .collect();
        let out = hs
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("job panicked")))
            })
            .collect();
        let _ = forward.join();
        out
    });
    for (&i, r) in batch.iter().zip(&ready) {
        unlink(&jobs[i], r);
    }
    batch
        .iter()
        .zip(runs)
        .map(|(&i, r)| r.with_context(|| ctx(&jobs[i])))
        .collect()
}

/// Passes Ctrl-C on to the batch's jobs until they have all ended.
fn forward_stop(batch: &[usize], stop: &AtomicBool, board: &Board) {
    loop {
        let done = {
            let e = board.ended.lock().unwrap_or_else(|p| p.into_inner());
            batch.iter().all(|&i| e[i])
        };
        if done {
            return;
        }
        if stop.load(Ordering::Relaxed) {
            for &i in batch {
                board.stops[i].store(true, Ordering::Relaxed);
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Job `i` of a batch: waits for the job it names, runs, then ends the
/// jobs its `exitall` says.
fn run_one(
    jobs: &[FioJob],
    i: usize,
    batch: &[usize],
    r: &Ready,
    board: &Board,
    stop: &AtomicBool,
) -> Result<Measured> {
    let j = &jobs[i];
    if let Some(w) = &j.wait_for {
        board.wait_for(jobs, w, stop);
    }
    let out = measure(j, r, &board.stops[i]);
    if let Some(e) = j.exit {
        for &k in batch {
            let hit = match e {
                ExitWhat::Group => jobs[k].groupid == j.groupid,
                ExitWhat::Stonewall | ExitWhat::All => true,
            };
            if hit {
                board.stops[k].store(true, Ordering::Relaxed);
            }
        }
        if e == ExitWhat::All {
            board.all_done.store(true, Ordering::Relaxed);
        }
    }
    board.end(i);
    out
}
