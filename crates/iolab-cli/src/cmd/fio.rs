//! `iolab fio JOBFILE...` and `iolab fio --name=x --rw=randread ...`: run
//! fio job files and fio command lines with iolab's engines, and print
//! what fio prints (normal, json, json+, terse) plus iolab's extras.
//!
//! Jobs run as fio runs them: all at once, except that a job with
//! `stonewall` waits for the ones before it. Every option is
//! mapped, or refused before anything runs with one line naming the file,
//! line and option (exit status 2).

use crate::export::fio::{FioFormat, FIO_FORMATS};
use crate::export::target::{Mode, OutputTarget};
use crate::session::{prepare_files, Session};
use anyhow::{Context, Result};
use iolab_bench::measure::{self, Cache, Measure, NoHooks};
use iolab_bench::prepare;
use iolab_bench::record::{unix_ms, RunMetrics};
use iolab_fio::json::JobResult;
use iolab_fio::map::{self, FioJob};
use iolab_fio::options::{self, Class};
use iolab_fio::parse::Reader;
use iolab_fio::{group, log};
use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// Arguments of `iolab fio`: job files and fio's options, as fio takes them.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "iolab's own flags: --parse-only (check and print the jobs, run nothing), \
--lenient (options that change only presentation become warnings), --overwrite \
(replace output files; write into files iolab did not make), --output-format=normal|json|json+|terse, \
--output=FILE, --list-options (which fio options iolab supports), --placement=irq|any (where \
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

/// The command line split into iolab's flags, job files and fio options.
#[derive(Debug, Default)]
struct Cli {
    files: Vec<PathBuf>,
    options: Vec<String>,
    parse_only: bool,
    lenient: bool,
    overwrite: bool,
    list: bool,
    formats: Vec<&'static FioFormat>,
    output: Option<PathBuf>,
    /// Where jobs without `cpus_allowed` run (`--placement`).
    placement: iolab_bench::spec::Placement,
    /// `--waker`; None: fio's 10 ms.
    waker: Option<crate::waker::WakerArg>,
}

fn split(args: &[std::ffi::OsString]) -> Result<Cli> {
    // fio's job files and options are text: a name that is not UTF-8 is
    // refused here, naming it, rather than by clap without a name.
    let args: Vec<String> = args
        .iter()
        .map(|a| {
            a.to_str().map(str::to_string).ok_or_else(|| {
                super::usage(format!(
                    "job file or option {}: not valid UTF-8 (give fio job files and options as text)",
                    a.to_string_lossy()
                ))
            })
        })
        .collect::<Result<_>>()?;
    let mut c = Cli::default();
    let mut it = args.iter().peekable();
    while let Some(a) = it.next() {
        let (k, v) = match a.split_once('=') {
            Some((k, v)) => (k, Some(v.to_string())),
            None => (a.as_str(), None),
        };
        let mut value = |flag: &str| -> Result<String> {
            match &v {
                Some(v) => Ok(v.clone()),
                None => it
                    .next()
                    .cloned()
                    .ok_or_else(|| super::usage(format!("{flag} needs a value ({flag}=...)"))),
            }
        };
        match k {
            "--parse-only" => c.parse_only = true,
            "--lenient" => c.lenient = true,
            "--overwrite" => c.overwrite = true,
            "--list-options" => c.list = true,
            "--minimal" => c.formats.extend(fio_format("terse")),
            "--output-format" => {
                for f in value("--output-format")?.split(',') {
                    let Some(format) = fio_format(f) else {
                        let names: Vec<&str> = FIO_FORMATS.iter().map(|f| f.name).collect();
                        return Err(super::usage(format!(
                            "--output-format={f}: one of {}",
                            names.join(", ")
                        )));
                    };
                    c.formats.push(format);
                }
            }
            "--output" => c.output = Some(PathBuf::from(value("--output")?)),
            "--placement" => {
                c.placement = value("--placement")?
                    .parse()
                    .map_err(|e| super::usage(format!("--placement: {e}")))?
            }
            "--waker" => {
                c.waker = Some(
                    crate::waker::parse_arg(&value("--waker")?)
                        .map_err(|e| super::usage(format!("--waker: {e}")))?,
                )
            }
            // fio's progress display: iolab shows none while measuring.
            k if k.starts_with("--eta") => {}
            k if k.starts_with("--") => c.options.push(a.clone()),
            _ => c.files.push(PathBuf::from(a)),
        }
    }
    if c.formats.iter().any(|f| f.name == "json") && c.formats.iter().any(|f| f.name == "json+") {
        c.formats.retain(|f| f.name != "json");
    }
    if c.formats.is_empty() {
        c.formats.extend(fio_format("normal"));
    }
    Ok(c)
}

/// The jobs of the command line and job files, mapped (or refused).
fn jobs(c: &Cli) -> Result<Vec<FioJob>> {
    let mut r = Reader::new();
    let bad = |e: iolab_fio::FioJobError| super::usage(e.to_string());
    r.read_args(&c.options).map_err(bad)?;
    for f in &c.files {
        r.read_file(f).map_err(bad)?;
    }
    let mut jobs = map::map_all(&r.finish(), c.lenient).map_err(bad)?;
    for j in &mut jobs {
        j.spec.placement = c.placement;
    }
    Ok(jobs)
}

/// What `--parse-only` prints for one job.
fn describe(j: &FioJob) -> String {
    let s = &j.spec;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{} ({}): group {}, {}",
        j.name,
        j.loc,
        j.groupid,
        s.label()
    );
    let _ = writeln!(
        o,
        "  engine={} op={} pattern={} bs={} iodepth={} batch={}/{} threads={} direct={} cache={}",
        s.engine,
        s.op.name(),
        s.pattern,
        s.bs,
        s.qd,
        s.batch_submit,
        s.batch_complete,
        s.workers(),
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
        let _ = writeln!(
            o,
            "  logs every {} ms: {:?}",
            j.logs.avg_msec,
            [&j.logs.bw, &j.logs.lat, &j.logs.iops]
        );
    }
    for n in &j.notes {
        let _ = writeln!(o, "  note: {n}");
    }
    for w in &j.warnings {
        let _ = writeln!(o, "  warning: {w}");
    }
    o
}

fn list_options() -> String {
    let mut o = String::new();
    for (name, class) in options::table() {
        let what = match class {
            Class::Mapped => match options::limits(&name) {
                Some(l) => format!("supported in part: {l}"),
                None => "supported".to_string(),
            },
            Class::Cosmetic => "warning with --lenient (presentation only), else refused".into(),
            Class::Refused(why) => format!("refused: {why}"),
            Class::Unknown => continue,
        };
        let _ = writeln!(o, "{name:<28} {what}");
    }
    o
}

/// A job's files laid out and its cache state set, ready to measure.
struct Ready {
    spec: iolab_bench::spec::WorkloadSpec,
    prep: prepare::Prepared,
    resident: f64,
}

/// Checks a job's files, lays them out and sets the cache state: done for
/// every job of a batch before any of them is measured.
fn prepare_job(j: &FioJob, c: &Cli, stop: &AtomicBool) -> Result<Ready> {
    let spec = &j.spec;
    for f in spec.files() {
        prepare::check_file_kind(&f, spec.op.writes())?;
        if !j.allow_file_create && std::fs::symlink_metadata(&f).is_err() {
            return Err(super::usage(format!(
                "allow_file_create=0 and {} does not exist",
                f.display()
            )));
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
            spec.stop.bytes = Some(spec.file_size * spec.workers() as u64);
        }
    }
    let resident = prepare::set_cache(&spec, &prep, spec.file_size)?;
    Ok(Ready {
        spec,
        prep,
        resident,
    })
}

/// Waits the job's `startdelay`, then measures it.
fn measure(j: &FioJob, r: &Ready, stop: &AtomicBool) -> Result<RunMetrics> {
    if j.startdelay_ns > 0 {
        let end = std::time::Instant::now() + std::time::Duration::from_nanos(j.startdelay_ns);
        while std::time::Instant::now() < end && !stop.load(Ordering::Relaxed) {
            std::thread::sleep(
                std::time::Duration::from_millis(20).min(end - std::time::Instant::now()),
            );
        }
    }
    let once = Measure {
        cache: Cache::Given(r.resident),
        ..Measure::new(stop, 1)
    };
    let mut m = measure::runs(&r.spec, &r.prep, &once, &mut NoHooks)?.one()?;
    if j.end_fsync {
        end_fsync(r, &mut m)?;
    }
    Ok(m)
}

/// `end_fsync=1`: fsyncs the job's files after its last write; fio counts
/// that time in the job's runtime, so its rates include it.
fn end_fsync(r: &Ready, m: &mut RunMetrics) -> Result<()> {
    let t0 = std::time::Instant::now();
    for f in &r.prep.files {
        std::fs::File::open(&f.path)
            .and_then(|h| h.sync_all())
            .with_context(|| format!("end_fsync: {}", f.path.display()))?;
    }
    m.duration_ns += t0.elapsed().as_nanos() as u64;
    let secs = m.duration_ns.max(1) as f64 / 1e9;
    m.mib_per_s = m.bytes as f64 / secs / (1 << 20) as f64;
    m.iops = m.ops as f64 / secs;
    Ok(())
}

/// `unlink=1`: removes the files this run created (never others).
fn unlink(j: &FioJob, r: &Ready) {
    if !j.unlink {
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

/// Runs one batch of jobs at the same time (fio's jobs between two
/// stonewalls), each on its own thread; results in job order.
fn run_batch(jobs: &[&FioJob], c: &Cli, stop: &AtomicBool) -> Result<Vec<RunMetrics>> {
    let ctx = |j: &FioJob| format!("{}: job '{}'", j.loc, j.name);
    let mut ready = Vec::new();
    for j in jobs {
        ready.push(prepare_job(j, c, stop).with_context(|| ctx(j))?);
    }
    let runs: Vec<Result<RunMetrics>> = if jobs.len() == 1 {
        vec![measure(jobs[0], &ready[0], stop)]
    } else {
        std::thread::scope(|s| {
            let hs: Vec<_> = jobs
                .iter()
                .zip(&ready)
                .map(|(j, r)| s.spawn(move || measure(j, r, stop)))
                .collect();
            hs.into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(anyhow::anyhow!("job panicked")))
                })
                .collect()
        })
    };
    for (j, r) in jobs.iter().zip(&ready) {
        unlink(j, r);
    }
    jobs.iter()
        .zip(runs)
        .map(|(j, r)| r.with_context(|| ctx(j)))
        .collect()
}

/// Checks the command line and its jobs without running or creating
/// anything (what `--parse-only` does, minus the printing).
#[cfg(test)]
pub fn check(a: &FioArgs) -> Result<()> {
    let c = split(&a.args)?;
    if !c.list {
        jobs(&c)?;
    }
    Ok(())
}

/// Runs `iolab fio`.
pub fn run(a: &FioArgs, stop: &AtomicBool) -> Result<i32> {
    let c = split(&a.args)?;
    if c.list {
        crate::export::stdout(&list_options())?;
        return Ok(0);
    }
    let jobs = jobs(&c)?;
    for j in &jobs {
        for w in &j.warnings {
            eprintln!("warning: {w}");
        }
    }
    if c.parse_only {
        let text: String = jobs.iter().map(describe).collect();
        crate::export::stdout(&text)?;
        return Ok(0);
    }
    // Every output checked before anything runs.
    let measured: Vec<PathBuf> = jobs.iter().flat_map(|j| j.spec.files()).collect();
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
    let mut log_targets = check_logs(&jobs, &c, &measured)?;
    // fio's supervisor process wakes every 10 ms beside its jobs, and on
    // some VMs that makes each completed I/O cheaper to return from (see
    // waker.rs): iolab's jobs get a stand-in for it unless told
    // `--waker=off`, and `--waker=DURATION` adds one pinned waker per CPU
    // of the jobs. Ended (killed and reaped) when this function returns.
    let wakers = match c.waker {
        Some(crate::waker::WakerArg::Off) => None,
        Some(crate::waker::WakerArg::Every(every)) => {
            let pins: Vec<_> = jobs.iter().map(|j| j.spec.cpus.as_ref()).collect();
            let cpus = crate::waker::cpus_for_all(&pins)?;
            let mut w = crate::waker::Wakers::start(every, &cpus)?;
            w.add_stand_in()?;
            Some(w)
        }
        None => Some(crate::waker::Wakers::stand_in()?),
    };
    let waker = wakers.as_ref().map(|w| &w.info);
    let started = unix_ms();
    let mut done: Vec<(FioJob, RunMetrics)> = Vec::new();
    for batch in group::batches(&jobs) {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let members: Vec<&FioJob> = batch.iter().map(|&i| &jobs[i]).collect();
        let runs = run_batch(&members, &c, stop)?;
        done.extend(members.into_iter().cloned().zip(runs));
    }
    // Logs are per job, as fio writes them; the summary follows group_reporting.
    for (job, run) in &done {
        for l in log::logs(&JobResult { job, run, waker }) {
            if let Some((_, t)) = log_targets.iter_mut().find(|(n, _)| *n == l.name) {
                t.write_all_atomically(l.text.as_bytes())?;
            }
        }
    }
    let reported = group::report_groups(done);
    let results: Vec<JobResult> = reported
        .iter()
        .map(|(job, run)| JobResult { job, run, waker })
        .collect();
    let text = crate::export::fio::render(&c.formats, &results, started)?;
    match out.as_mut() {
        Some(t) => t.write_all_atomically(text.as_bytes())?,
        None => crate::export::stdout(&text)?,
    }
    Ok(if stop.load(Ordering::Relaxed) { 130 } else { 0 })
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
        for name in log_names(j) {
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

/// fio's format called `name`.
fn fio_format(name: &str) -> Option<&'static FioFormat> {
    crate::export::fio::by_name(name)
}

/// The log file names a job will write (checked before running).
fn log_names(j: &FioJob) -> Vec<String> {
    let mut v = Vec::new();
    if let Some(p) = &j.logs.bw {
        v.push(format!("{p}_bw.1.log"));
    }
    if let Some(p) = &j.logs.iops {
        v.push(format!("{p}_iops.1.log"));
    }
    if let Some(p) = &j.logs.lat {
        if j.spec.engine.is_sync() {
            v.push(format!("{p}_clat.1.log"));
        }
        v.push(format!("{p}_lat.1.log"));
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<std::ffi::OsString> {
        v.iter().map(std::ffi::OsString::from).collect()
    }

    #[test]
    fn command_line_splits_into_flags_files_and_options() {
        let c = split(&s(&[
            "--output-format=json+",
            "a.fio",
            "--name=x",
            "--bs=4k",
            "--output",
            "o.json",
            "--lenient",
            "--eta=never",
        ]))
        .unwrap();
        assert_eq!(c.formats, vec![fio_format("json+").unwrap()]);
        assert_eq!(c.files, vec![PathBuf::from("a.fio")]);
        assert_eq!(c.options, vec!["--name=x", "--bs=4k"]);
        assert_eq!(c.output, Some(PathBuf::from("o.json")));
        assert!(c.lenient && !c.parse_only);
        assert!(split(&s(&["--output-format=xml"])).is_err());
        assert_eq!(
            split(&s(&[])).unwrap().formats,
            vec![fio_format("normal").unwrap()]
        );
    }
}
