//! `iolab fio JOBFILE...` and `iolab fio --name=x --rw=randread ...`: run
//! fio job files and fio command lines with iolab's engines, and print
//! what fio prints (normal, json, json+, terse) plus iolab's extras.
//!
//! Jobs run as fio runs them: all at once, except that a job with
//! `stonewall` waits for the ones before it. Every option is
//! mapped, or refused before anything runs with one line naming the file,
//! line and option (exit status 2).

mod batch;
mod cli;

use crate::export::target::{Mode, OutputTarget};
use anyhow::{Context, Result};
use batch::{Board, Measured};
use cli::{Action, Cli};
use iolab_bench::record::unix_ms;
use iolab_fio::json::JobResult;
use iolab_fio::map::{self, FioJob};
use iolab_fio::parse::{RawJob, Reader};
use iolab_fio::{group, log};
use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// Arguments of `iolab fio`: job files and fio's options, as fio takes them.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "fio's flags: --parse-only (check and print the jobs, run nothing), \
--output-format=normal|json|json+|terse, --output=FILE, --minimal, --section=JOB, --showcmd, \
--version, --terse-version=3, --warnings-fatal, --readonly, --bandwidth-log, --cmdhelp=OPTION, \
--status-interval, --eta, --debug (accepted, change nothing). iolab's own: --overwrite \
(replace output files; write into files iolab did not make), \
--list-options (which fio options iolab runs), --placement=irq|any (where \
jobs without cpus_allowed run: next to the device's completion interrupts, or where the scheduler puts them), \
--waker=DURATION|off (jobs run beside an unpinned process waking every 10 ms, as fio's \
run beside fio's supervisor; DURATION adds one pinned per CPU of the jobs waking that often; off: none). Everything else is fio's: \
job files, and --key=value options where each --name=JOB starts a job."
)]
pub struct FioArgs {
    /// Job files and fio options (`--name=x --rw=randread --bs=4k ...`).
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "JOBFILE|--OPTION",
        value_parser = clap::value_parser!(std::ffi::OsString)
    )]
    pub args: Vec<std::ffi::OsString>,
}

/// The raw jobs of the command line and job files (only `--section`'s).
fn raw_jobs(c: &Cli) -> Result<Vec<RawJob>> {
    let mut r = Reader::new();
    let bad = |e: iolab_fio::FioJobError| super::usage(e.to_string());
    r.read_args(&c.options).map_err(bad)?;
    for f in &c.files {
        r.read_file(f).map_err(bad)?;
    }
    let mut raw = r.finish();
    if !c.sections.is_empty() {
        for s in &c.sections {
            if !raw.iter().any(|j| &j.name == s) {
                return Err(super::usage(format!("--section={s}: no job of that name")));
            }
        }
        raw.retain(|j| c.sections.contains(&j.name));
    }
    Ok(raw)
}

/// The jobs of the command line and job files, mapped (or refused).
fn jobs(c: &Cli) -> Result<Vec<FioJob>> {
    let raw = raw_jobs(c)?;
    let bad = |e: iolab_fio::FioJobError| super::usage(e.to_string());
    let mut jobs = map::map_all(&raw, false).map_err(bad)?;
    for j in &mut jobs {
        j.spec.placement = c.placement;
        if c.warnings_fatal {
            // The notes that name a line are fio's parser warnings.
            if let Some(n) = j.notes.iter().find(|n| n.starts_with(&j.loc.file)) {
                return Err(super::usage(format!("{n} (--warnings-fatal)")));
            }
        }
        if c.readonly && j.spec.op.writes() {
            return Err(super::usage(format!(
                "{}: job '{}' writes, and --readonly allows no writes",
                j.loc, j.name
            )));
        }
    }
    Ok(jobs)
}

/// What `--parse-only` prints for one job.
fn describe(j: &FioJob) -> String {
    let s = &j.spec;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{} ({}): group {}, job {} of its section, {}",
        j.name,
        j.loc,
        j.groupid,
        j.jobnum,
        s.label()
    );
    let _ = writeln!(
        o,
        "  engine={} op={} pattern={} bs={} iodepth={} batch={}/{} direct={} cache={}",
        s.engine,
        s.op.name(),
        s.pattern,
        s.bs,
        s.qd,
        s.batch_submit,
        s.batch_complete,
        u8::from(s.direct),
        s.cache.name()
    );
    let files: Vec<String> = s.files().iter().map(|p| p.display().to_string()).collect();
    let _ = writeln!(
        o,
        "  file(s)={} size={} stop: bytes={} time={} ops={} ramp={}ms startdelay={}ms",
        files.join(","),
        s.file_size,
        s.stop.bytes.map_or("-".into(), |b| b.to_string()),
        s.stop
            .time_ns
            .map_or("-".into(), |t| format!("{}ms", t / 1_000_000)),
        s.stop.ops.map_or("-".into(), |b| b.to_string()),
        s.ramp_ns / 1_000_000,
        j.startdelay_ns / 1_000_000
    );
    if j.logs.any() {
        let _ = writeln!(o, "  logs: {}", j.logs.files().join(", "));
    }
    for n in &j.notes {
        let _ = writeln!(o, "  note: {n}");
    }
    o
}

/// fio's `--showcmd`: the job files as one fio command line.
fn showcmd(c: &Cli) -> Result<String> {
    let raw = raw_jobs(c)?;
    let mut o = String::from("fio");
    let arg = |o: &mut String, r: &iolab_fio::parse::RawOpt| {
        let k = iolab_fio::options::canonical(&r.key);
        match &r.value {
            Some(v) => {
                let _ = write!(o, " --{k}={v}");
            }
            None => {
                let _ = write!(o, " --{k}");
            }
        }
    };
    if let Some(first) = raw.first() {
        for r in &first.opts[..first.n_global] {
            arg(&mut o, r);
        }
    }
    for j in &raw {
        let _ = write!(o, " --name={}", j.name);
        for r in &j.opts[j.n_global..] {
            if r.key != "name" {
                arg(&mut o, r);
            }
        }
    }
    o.push('\n');
    Ok(o)
}

/// `--cmdhelp=OPTION`: what iolab does with one of fio's options (`all`:
/// every one).
fn cmdhelp(name: &str) -> String {
    let table = iolab_fio::options::table_text();
    if name == "all" {
        return table;
    }
    let key = iolab_fio::options::canonical(name);
    table
        .lines()
        .find(|l| l.split_whitespace().next() == Some(key))
        .map(|l| format!("{l}\n"))
        .unwrap_or_else(|| format!("{name}: not an option fio documents\n"))
}

/// Runs `iolab fio`.
pub fn run(a: &FioArgs, stop: &AtomicBool) -> Result<i32> {
    let c = cli::split(&a.args)?;
    for n in &c.notes {
        eprintln!("note: {n}");
    }
    if let Some(name) = &c.cmdhelp {
        crate::export::stdout(&cmdhelp(name))?;
        return Ok(0);
    }
    match c.action {
        Action::ListOptions => {
            crate::export::stdout(&iolab_fio::options::table_text())?;
            return Ok(0);
        }
        Action::Version => {
            crate::export::stdout(&format!(
                "iolab-{} (runs fio job files; fio 3.33's options)\n",
                env!("CARGO_PKG_VERSION")
            ))?;
            return Ok(0);
        }
        Action::ShowCmd => {
            crate::export::stdout(&showcmd(&c)?)?;
            return Ok(0);
        }
        Action::ParseOnly => {
            let text: String = jobs(&c)?.iter().map(describe).collect();
            crate::export::stdout(&text)?;
            return Ok(0);
        }
        Action::Run => {}
    }
    run_jobs(&c, jobs(&c)?, stop)
}

/// Opens each GPU a job copies its reads into (`ioengine=libcufile`) once,
/// so a missing driver, GPU or GPU number is one line before anything runs.
fn check_gpus(jobs: &[FioJob]) -> Result<()> {
    let mut seen = Vec::new();
    for j in jobs {
        let Some(n) = j.spec.copy_to_gpu else {
            continue;
        };
        if seen.contains(&n) {
            continue;
        }
        seen.push(n);
        crate::gpu_bench::open(n).map_err(|why| {
            crate::error::usage(format!(
                "{}: job '{}': ioengine=libcufile, GPU {n}: {why}",
                j.loc, j.name
            ))
        })?;
    }
    Ok(())
}

/// Runs the jobs and writes what fio writes.
fn run_jobs(c: &Cli, jobs: Vec<FioJob>, stop: &AtomicBool) -> Result<i32> {
    check_gpus(&jobs)?;
    // Every output checked before anything runs.
    let measured: Vec<PathBuf> = jobs
        .iter()
        .filter(|j| !j.spec.no_files)
        .flat_map(|j| j.spec.files())
        .collect();
    let mut out = match &c.output {
        Some(p) => Some(OutputTarget::check(
            "--output",
            p,
            c.overwrite,
            Mode::Replace,
            &measured,
        )?),
        None => None,
    };
    let mut log_targets = check_logs(&jobs, c, &measured)?;
    let wakers = wakers(c, &jobs)?;
    let waker = wakers.as_ref().map(|w| &w.info);
    let started = unix_ms();
    let done = run_all(&jobs, c, stop)?;
    write_logs(c, &done, waker, &mut log_targets, &measured)?;
    let failed: Vec<String> = done
        .iter()
        .filter_map(|(j, m)| {
            m.failed
                .as_ref()
                .map(|f| format!("{}: job '{}': {f}", j.loc, j.name))
        })
        .collect();
    let text = render(c, done, waker, started)?;
    match out.as_mut() {
        Some(t) => t.write_all_atomically(text.as_bytes())?,
        None => crate::export::stdout(&text)?,
    }
    for f in &failed {
        eprintln!("error: {f}");
    }
    Ok(match (stop.load(Ordering::Relaxed), failed.is_empty()) {
        (true, _) => 130,
        (false, true) => 0,
        (false, false) => 1,
    })
}

/// The jobs' results in the formats asked for, as `group_reporting` groups
/// them.
fn render(
    c: &Cli,
    done: Vec<(FioJob, Measured)>,
    waker: Option<&iolab_bench::env::WakerInfo>,
    started: u64,
) -> Result<String> {
    let runs = done.into_iter().map(|(j, m)| {
        let r = group::Run {
            run: m.run,
            verify: m.verify,
        };
        (j, r)
    });
    let reported = group::report_groups(runs.collect());
    let results: Vec<JobResult> = reported
        .iter()
        .map(|(job, r)| JobResult {
            job,
            run: &r.run,
            verify: r.verify.as_ref(),
            waker,
        })
        .collect();
    crate::export::fio::render(&c.formats, &results, started)
}

/// Runs every batch of jobs in turn (until Ctrl-C, or an `exitall`
/// that ends everything); each job with what it measured.
fn run_all(jobs: &[FioJob], c: &Cli, stop: &AtomicBool) -> Result<Vec<(FioJob, Measured)>> {
    let board = Board::new(jobs.len());
    let mut done = Vec::new();
    for b in group::batches(jobs) {
        if stop.load(Ordering::Relaxed) || board.all_done.load(Ordering::Relaxed) {
            break;
        }
        let runs = batch::run_batch(jobs, &b, c, stop, &board)?;
        done.extend(b.iter().map(|&i| jobs[i].clone()).zip(runs));
    }
    Ok(done)
}

/// The logs the jobs ask for, per job as fio writes them, and
/// `--bandwidth-log`'s aggregate logs.
fn write_logs(
    c: &Cli,
    done: &[(FioJob, Measured)],
    waker: Option<&iolab_bench::env::WakerInfo>,
    targets: &mut [(String, OutputTarget)],
    measured: &[PathBuf],
) -> Result<()> {
    let all: Vec<JobResult> = done
        .iter()
        .map(|(job, m)| JobResult {
            job,
            run: &m.run,
            verify: m.verify.as_ref(),
            waker,
        })
        .collect();
    for r in &all {
        for l in log::logs(r) {
            if let Some((_, t)) = targets.iter_mut().find(|(n, _)| *n == l.name) {
                t.write_all_atomically(l.text.as_bytes())?;
            }
        }
    }
    if c.bandwidth_log {
        for l in log::aggregate(&all) {
            let path = Path::new(&l.name);
            let mut t = OutputTarget::check(
                "--bandwidth-log",
                path,
                c.overwrite,
                Mode::Replace,
                measured,
            )?;
            t.write_all_atomically(l.text.as_bytes())?;
        }
    }
    Ok(())
}

/// fio's supervisor process wakes every 10 ms beside its jobs, and on
/// some VMs that makes each completed I/O cheaper to return from (see
/// waker.rs): iolab's jobs get a stand-in for it unless told
/// `--waker=off`, and `--waker=DURATION` adds one pinned waker per CPU of
/// the jobs. Ended (killed and reaped) when dropped.
fn wakers(c: &Cli, jobs: &[FioJob]) -> Result<Option<crate::waker::Wakers>> {
    Ok(match c.waker {
        Some(crate::waker::WakerArg::Off) => None,
        Some(crate::waker::WakerArg::Every(every)) => {
            let pins: Vec<_> = jobs.iter().map(|j| j.spec.cpus.as_ref()).collect();
            let cpus = crate::waker::cpus_for_all(&pins)?;
            let mut w = crate::waker::Wakers::start(every, &cpus)?;
            w.add_stand_in()?;
            Some(w)
        }
        None => Some(crate::waker::Wakers::stand_in()?),
    })
}

/// Every log file the jobs ask for (`write_*_log`), checked before
/// anything runs: (file name, its target).
fn check_logs(
    jobs: &[FioJob],
    c: &Cli,
    measured: &[PathBuf],
) -> Result<Vec<(String, OutputTarget)>> {
    let mut log_targets = Vec::new();
    for j in jobs {
        for name in j.logs.files() {
            if log_targets.iter().any(|(n, _)| *n == name) {
                continue;
            }
            let t = OutputTarget::check(
                "write_*_log",
                Path::new(&name),
                c.overwrite,
                Mode::Replace,
                measured,
            )
            .with_context(|| format!("{}: job '{}'", j.loc, j.name))?;
            log_targets.push((name, t));
        }
    }
    Ok(log_targets)
}

/// Checks the command line and its jobs without running or creating
/// anything (what `--parse-only` does, minus the printing).
#[cfg(test)]
pub fn check(a: &FioArgs) -> Result<()> {
    let c = cli::split(&a.args)?;
    if c.action != Action::ListOptions {
        jobs(&c)?;
    }
    Ok(())
}
