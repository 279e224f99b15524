//! fio jobs onto iolab's workload spec. Every option is run as fio runs it,
//! accepted with a one-line note, or refused here, before anything runs,
//! naming the file, line and option. One step per family of options:
//!
//! - [`io`]: engine, direction, sizes, offsets' order, queue, caching;
//! - [`gpu`]: `ioengine=libcufile`, each read copied into a GPU;
//! - [`layout`]: files, offsets and sizes of the region;
//! - [`pace`]: how long, rates, thinktime, flow, latency target;
//! - [`data`]: buffer contents, verification, syncs;
//! - [`report`]: logs, percentiles and what the output shows.
//!
//! A job with `numjobs=N` is N jobs, as in fio: [`map_all`] makes one
//! [`FioJob`] per clone, each with its own files and seed.

mod data;
mod given;
mod gpu;
mod io;
mod layout;
mod pace;
mod report;
#[cfg(test)]
mod tests;

pub use data::Verify;
pub use pace::{ExitWhat, RateMin};
pub use report::{Logs, Report, FIO_AVG_MSEC, FIO_PERCENTILES};

use super::options::{self, Class};
use super::parse::{RawJob, RawOpt};
use super::value;
use super::{FioJobError, Loc};
use given::{bad, Given};
use iolab::engine::EngineKind;
use iolab_bench::spec::WorkloadSpec;
use std::cell::RefCell;

/// One fio job (one clone of a job with `numjobs`) as iolab will run it.
#[derive(Clone, Debug, PartialEq)]
pub struct FioJob {
    /// Job name.
    pub name: String,
    /// Where the job's section (or `--name`) is.
    pub loc: Loc,
    /// fio's group id (bumped by `stonewall` and `new_group`).
    pub groupid: u32,
    /// What iolab runs (one worker: fio's job is one thread or process).
    pub spec: WorkloadSpec,
    /// Jobs this result stands for: 1, or the sum of a group's with
    /// `group_reporting`.
    pub numjobs: u32,
    /// Which clone of its section this is (fio's `$jobnum`), from 0.
    pub jobnum: u32,
    /// fio's thread number over the whole run, from 1 (log file names).
    pub thread_number: u32,
    /// `group_reporting`.
    pub group_reporting: bool,
    /// `stonewall` / `wait_for_previous` (the first clone only).
    pub stonewall: bool,
    /// `wait_for`: the section whose jobs must end before this one starts.
    pub wait_for: Option<String>,
    /// `exitall` / `exit_what`: which jobs end when this one does.
    pub exit: Option<ExitWhat>,
    /// `startdelay`, ns.
    pub startdelay_ns: u64,
    /// A size (or filesize) was given, so a missing file may be created.
    pub size_given: bool,
    /// `allow_file_create` (default 1).
    pub allow_file_create: bool,
    /// `create_only`: lay out the files, run no I/O.
    pub create_only: bool,
    /// `unlink`: remove the files this run created when the job ends.
    pub unlink: bool,
    /// `end_fsync`: fsync the job's files when its writes end, inside its
    /// measured time (as fio counts it).
    pub end_fsync: bool,
    /// `fsync_on_close`: fsync the files at the end, outside it.
    pub fsync_on_close: bool,
    /// Verification of what the job wrote (or reads).
    pub verify: Option<Verify>,
    /// `rate_min` / `rate_iops_min`: the job fails below this.
    pub rate_min: Option<RateMin>,
    /// `max_latency`: the job fails when an I/O takes longer, ns.
    pub max_latency_ns: Option<u64>,
    /// `description`: text fio prints with the job (`desc` in JSON).
    pub description: Option<String>,
    /// What the output shows, and how.
    pub report: Report,
    /// Logs.
    pub logs: Logs,
    /// The job's own options as written (fio's "job options").
    pub job_options: Vec<(String, String)>,
    /// The `[global]` options that apply (fio's "global options").
    pub global_options: Vec<(String, String)>,
    /// How fio's terms were mapped (printed by `--parse-only`).
    pub notes: Vec<String>,
    /// Warnings.
    pub warnings: Vec<String>,
}

fn opt_string(o: &RawOpt) -> (String, String) {
    (o.key.clone(), o.value.clone().unwrap_or_default())
}

/// Where a clone sits among all jobs: its section's clone number and
/// fio's global thread number, its group, and the CPUs used before it
/// (`cpus_allowed_policy=split`).
#[derive(Clone, Copy, Debug)]
struct Place {
    jobnum: u32,
    thread_number: u32,
    groupid: u32,
}

/// Maps one clone of a job. Options iolab does not run are refused; those
/// that cannot change the measurement are kept with a note.
// Long on purpose: one line per family of options and the two struct
// literals (spec and job), one field a line; the logic is in the steps.
fn map_job(job: &RawJob, at: Place) -> Result<FioJob, FioJobError> {
    let engine = io::engine_named(job)?;
    let (given, mut notes) = classify(job, engine)?;
    let g = &given;
    let opts = io::engine_opts(g, engine)?;
    let dir = io::direction(g, &mut notes)?;
    let queue = io::queue(g, engine, &mut notes)?;
    let (direct, cache) = io::caching(g, &mut notes)?;
    let gpu = gpu::gpu(job, g, (at.jobnum, dir.op.writes(), direct), &mut notes)?;
    let files = layout::files(g, job, (at.jobnum, &dir, engine), &mut notes)?;
    let pattern = io::zoned_abs(g, files.region, dir.random)?.unwrap_or(dir.pattern);
    let run = pace::how_long(g, &files, &mut notes)?;
    let pacing = pace::pacing(g, &dir, &queue, &mut notes)?;
    let data = data::data(g, &dir, &mut notes)?;
    let report = report::report(g, engine, &mut notes)?;
    let seed = io::seed(g, at.jobnum)?;
    let logs = report::logs(g, job, at.thread_number)?;
    let spec = WorkloadSpec {
        engine,
        op: dir.op,
        pattern,
        bs: dir.bs,
        sizes: dir.sizes.clone(),
        qd: queue.qd,
        batch_submit: queue.batch_submit,
        batch_complete: queue.batch_complete,
        threads: 1,
        file: files.file.clone(),
        more_files: files.more_files.clone(),
        nrfiles: files.nrfiles,
        file_service: files.service,
        // The run covers `region` of the file; iolab's spec calls that file_size.
        file_size: files.region,
        offset: files.offset,
        no_files: files.no_files,
        direct,
        cache,
        engine_opts: opts,
        stop: run.stop,
        ramp_ns: run.ramp_ns,
        interval_ns: Some(report.interval_ms * 1_000_000),
        seed,
        continue_on_error: pace::continue_on_error(g)?,
        pacing,
        time_submit: report.time_submit,
        sync_every: data.sync_every,
        open_sync: data.open_sync,
        content: data.content.clone(),
        write_once: data.write_once,
        verify: data.read_verify,
        trim: dir.trim,
        cpus: pace::cpus(g, &mut notes)?,
        placement: iolab_bench::spec::Placement::Irq,
        log_ops: logs.any(),
        direct_logical: true,
        copy_to_gpu: gpu,
        ..WorkloadSpec::default()
    };
    if let Err(e) = iolab_bench::prepare::validate(&spec) {
        return Err(job.loc.err(format!("job '{}': {e}", job.name)));
    }
    notes.extend(given.notes.take());
    Ok(FioJob {
        name: job.name.clone(),
        loc: job.loc.clone(),
        groupid: at.groupid,
        spec,
        numjobs: 1,
        jobnum: at.jobnum,
        thread_number: at.thread_number,
        group_reporting: g.flag("group_reporting", false)?,
        stonewall: at.jobnum == 0 && g.flag("stonewall", false)?,
        wait_for: g.val("wait_for").map(|(v, _)| v.trim().to_string()),
        exit: pace::exit_what(g)?,
        startdelay_ns: run.startdelay_ns,
        size_given: files.size_given,
        allow_file_create: g.flag("allow_file_create", true)?,
        create_only: g.flag("create_only", false)?,
        unlink: g.flag("unlink", false)?,
        end_fsync: g.flag("end_fsync", false)? && dir.op.writes(),
        fsync_on_close: g.flag("fsync_on_close", false)? && dir.op.writes(),
        verify: data.verify,
        rate_min: pace::rate_min(g, &dir)?,
        max_latency_ns: g.parse("max_latency", |v| value::time_ns(v, 1_000))?,
        description: job
            .opts
            .iter()
            .rev()
            .find(|o| o.key == "description")
            .and_then(|o| o.value.clone()),
        report,
        logs,
        job_options: job.opts[job.n_global..].iter().map(opt_string).collect(),
        global_options: job.opts[..job.n_global].iter().map(opt_string).collect(),
        notes,
        warnings: Vec::new(),
    })
}

/// Sorts the job's options: mapped ones are kept (with fio's canonical
/// name), noted ones kept with their note, the rest refused. `engine` is
/// the job's engine (an option of another engine is refused).
fn classify(job: &RawJob, engine: EngineKind) -> Result<(Given<'_>, Vec<String>), FioJobError> {
    let mut notes = Vec::new();
    let mut given = Given {
        opts: Vec::new(),
        notes: RefCell::new(Vec::new()),
    };
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
            Class::Noted(n) => notes.push(format!("{}: option '{}': {n}", o.loc, o.key)),
            Class::Profile(p) => notes.push(format!(
                "{}: option '{}' belongs to fio's {p} profile; without profile={p} it changes nothing, in fio as in iolab",
                o.loc, o.key
            )),
            Class::Engine(list) => return Err(engine_option(o, list, engine, job)),
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
    Ok((given, notes))
}

/// An option of the engines in `list` given to a job of `engine`: refused
/// with what it belongs to.
fn engine_option(o: &RawOpt, list: &str, engine: EngineKind, job: &RawJob) -> FioJobError {
    let ours = io::fio_name(engine);
    let theirs: Vec<&str> = list.split(',').collect();
    if theirs.contains(&ours) {
        return o.loc.err(format!(
            "option '{}' of ioengine={ours}: known to fio but not supported by iolab: {}",
            o.key,
            options::engine_option_reason(&o.key)
        ));
    }
    let has = theirs.iter().any(|e| EngineKind::of_fio(e).is_some());
    let named = job
        .opts
        .iter()
        .rev()
        .find(|x| x.key == "ioengine")
        .map(|x| format!("ioengine={} at {}", x.value.as_deref().unwrap_or(""), x.loc));
    let runs = named.unwrap_or_else(|| {
        format!("no ioengine= (so {ours}, fio's default; fio's examples name theirs on the command line)")
    });
    let which = if has { "" } else { ", none of which iolab has" };
    o.loc.err(format!(
        "option '{}' belongs to ioengine {}{which}; this job has {runs}",
        o.key,
        theirs.join(", ")
    ))
}

/// Maps every job, one [`FioJob`] per clone of a job with `numjobs`, and
/// assigns fio's group ids (jobs between two stonewalls run at the same
/// time, as one group; see [`super::group`]). `_lenient` is kept for older
/// command lines: options that only change presentation are always
/// accepted with a note now.
pub fn map_all(jobs: &[RawJob], _lenient: bool) -> Result<Vec<FioJob>, FioJobError> {
    if jobs.is_empty() {
        return Err(Loc::new("<command line>".into(), 0)
            .err("no jobs: give a job file or --name=JOB with options".into()));
    }
    let mut out: Vec<FioJob> = Vec::new();
    let mut group = 0u32;
    // fio numbers threads over the whole file (cpus_allowed_policy=split, log names).
    let mut threads_before = 0u32;
    for (i, j) in jobs.iter().enumerate() {
        let flag = |k: &str| raw_flag(j, k);
        if i > 0 && (flag("stonewall")? || flag("new_group")?) {
            group += 1;
        }
        let numjobs = numjobs(j)?;
        for jobnum in 0..numjobs {
            let at = Place {
                jobnum,
                thread_number: threads_before + 1,
                groupid: group,
            };
            let mut fj = map_job(j, at)?;
            if let Some(p) = &mut fj.spec.cpus {
                p.first = threads_before;
            }
            threads_before = threads_before.saturating_add(1);
            out.push(fj);
        }
    }
    check_waits(&out)?;
    Ok(out)
}

/// The last value of boolean option `k` of a raw job (before mapping).
fn raw_flag(j: &RawJob, k: &str) -> Result<bool, FioJobError> {
    match j
        .opts
        .iter()
        .rev()
        .find(|o| options::canonical(&o.key) == k)
    {
        Some(o) => value::boolean(o.value.as_deref()).map_err(|e| bad(o, &e)),
        None => Ok(false),
    }
}

/// `numjobs` (1..=4096) of a raw job.
fn numjobs(j: &RawJob) -> Result<u32, FioJobError> {
    let Some(o) = j.opts.iter().rev().find(|o| o.key == "numjobs") else {
        return Ok(1);
    };
    let v = o.value.as_deref().unwrap_or("");
    let n = value::int(v)
        .or_else(|e| crate::expr::leading(v).map_or(Err(e), value::int))
        .map_err(|e| bad(o, &e))?;
    if n == 0 || n > 4096 {
        return Err(o.loc.err(format!("numjobs={v}: must be 1..=4096")));
    }
    Ok(n as u32)
}

/// Every `wait_for` names a job written before it, as fio requires.
fn check_waits(jobs: &[FioJob]) -> Result<(), FioJobError> {
    for (i, j) in jobs.iter().enumerate() {
        if let Some(w) = &j.wait_for {
            if !jobs[..i].iter().any(|p| &p.name == w) {
                return Err(j.loc.err(format!(
                    "job '{}': wait_for={w}: no job of that name before it (fio waits only for a job written earlier)",
                    j.name
                )));
            }
        }
    }
    Ok(())
}
