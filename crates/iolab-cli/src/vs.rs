//! `iolab bench ... --vs fio`: iolab and fio alternately on the same file,
//! side by side, with the ratios, the noise between pairs, and the exact fio
//! command used.

use crate::export::table::{count, ns};
use crate::session::{prepare_files, Session};
use anyhow::{Context, Result};
use iolab_bench::measure::{self, Measure};
use iolab_bench::prepare;
use iolab_bench::record::{unix_ms, BenchRecord, FairFio, FioComparison};
use iolab_bench::spec::{CacheMode, WorkloadSpec};
use iolab_bench::stats::median;
use iolab_fio::translate::{self as fio, Comparable};
use std::fmt::Write;
use std::process::Command;
use std::sync::atomic::Ordering;

/// Checks that fio is installed and every spec can be translated.
pub fn check(specs: &[WorkloadSpec]) -> Result<()> {
    let ok = Command::new("fio")
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !ok {
        return Err(crate::error::usage(
            "--vs fio: fio is not installed (scripts/setup.sh installs it)",
        ));
    }
    for s in specs {
        fio::command(s).map_err(|why| {
            crate::error::usage(format!(
                "--vs fio: {} cannot be expressed in fio: {why}",
                crate::export::table::in_words(s)
            ))
        })?;
    }
    Ok(())
}

/// `iolab bench ... --print-fio [fair]`: the fio command line of each
/// configuration, one per line, exactly as `--vs fio` would run it.
pub fn print_commands(specs: &[WorkloadSpec], fair: bool) -> Result<i32> {
    let mut text = String::new();
    for s in specs {
        let mut s = s.clone();
        if s.file_size == 0 {
            // An existing file of unstated size: its length, as --vs uses.
            let len = std::fs::metadata(&s.file).map(|m| m.len()).unwrap_or(0);
            s.file_size = len.saturating_sub(s.offset);
        }
        let why = |w: String| {
            crate::error::usage(format!(
                "--print-fio: {}: {w}",
                crate::export::table::in_words(&s)
            ))
        };
        // As --vs runs it: the null engine's pinned pair unless --cpus pins.
        let null = (s.engine == iolab::engine::EngineKind::Null)
            .then(|| fio::null_commands(&s, fio::null_cpu()).ok())
            .flatten();
        let cmd = match (null, fair) {
            (Some((d, _)), false) => d,
            (Some((_, fa)), true) => fa,
            (None, true) => {
                return Err(crate::error::usage(
                    "--print-fio fair: only the null engine (without --cpus) has a fair-accounting command",
                ))
            }
            (None, false) => fio::command(&s).map_err(why)?,
        };
        text.push_str(&cmd.line());
        text.push('\n');
    }
    crate::export::stdout(&text)?;
    Ok(0)
}

fn run_fio(
    spec: &WorkloadSpec,
    prep: &prepare::Prepared,
    cmd: &fio::FioCommand,
) -> Result<Comparable> {
    if spec.cache == CacheMode::Warm {
        prepare::set_cache(spec, prep, spec.file_size)?;
    }
    // The device's counters around fio's whole process: its setup reads
    // nothing from the device, so requests and their mean time are the run's.
    let dev = iolab_bench::devstat::Snapshot::of_file(&prep.files[0].path);
    let out = Command::new("fio")
        .args(&cmd.args)
        .output()
        .context("--vs fio: run fio")?;
    let view = dev.finish();
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        anyhow::bail!("fio failed: {}", err.lines().next().unwrap_or("no message"));
    }
    // fio may print notes before the JSON document.
    let start = text.find('{').unwrap_or(0);
    Comparable::of_fio_json(&text[start..])
        .map(|c| c.with_device(Some(&view)))
        .map_err(|e| anyhow::anyhow!(e))
}

/// Runs `pairs` alternating pairs for one configuration.
pub fn compare(
    spec: &WorkloadSpec,
    ses: &Session,
    temp: bool,
    pairs: u32,
    env: &iolab_bench::env::Environment,
) -> Result<BenchRecord> {
    let cmd = fio::command(spec).map_err(|why| crate::error::usage(format!("--vs fio: {why}")))?;
    let prep = prepare_files(spec, ses, temp)?;
    let mut spec = spec.clone();
    if !ses.size_given {
        spec.file_size = prep.region_len(spec.offset);
    }
    let cmds = FioCommands::new(&spec, cmd);
    let started = unix_ms();
    let mut sides = Sides::default();
    for p in 0..pairs {
        // Alternate who goes first: iolab, fio (, fio fair), then reversed.
        let mut order: Vec<usize> = (0..cmds.sides()).collect();
        if p % 2 == 1 {
            order.reverse();
        }
        for side in order {
            if ses.stop.load(Ordering::Relaxed) {
                break;
            }
            sides.run(side, &spec, &prep, ses, &cmds)?;
        }
    }
    Ok(sides.record(spec, env, ses, started, cmds))
}

/// The fio commands of a comparison, and the CPU both tools are pinned to
/// when the null engine measures the framework alone.
struct FioCommands {
    /// fio as its users run it.
    cmd: fio::FioCommand,
    /// fio with iolab's accounting (the null engine only).
    fair: Option<fio::FioCommand>,
    /// The one CPU both tools run on (the null engine only).
    pin: Option<usize>,
}

impl FioCommands {
    /// The commands for `spec` (of its final size), `cmd` where the final
    /// spec does not translate.
    fn new(spec: &WorkloadSpec, cmd: fio::FioCommand) -> Self {
        let cmd = fio::command(spec).unwrap_or(cmd);
        // The null engine measures the framework alone: both tools pinned to
        // one CPU, fio both as its users run it and with iolab's accounting.
        let null = fio::null_commands(spec, fio::null_cpu()).ok();
        let pin = null.as_ref().map(|_| fio::null_cpu());
        let (cmd, fair) = match null {
            Some((d, f)) => (d, Some(f)),
            None => (cmd, None),
        };
        FioCommands { cmd, fair, pin }
    }

    /// Sides of a pair: iolab and fio, and fio fair where there is one.
    fn sides(&self) -> usize {
        if self.fair.is_some() {
            3
        } else {
            2
        }
    }
}

/// What the pairs measured, side by side.
#[derive(Default)]
struct Sides {
    /// iolab's runs, whole.
    runs: Vec<iolab_bench::record::RunMetrics>,
    /// iolab's runs, as fio's figures are compared.
    ours: Vec<Comparable>,
    /// fio's runs.
    theirs: Vec<Comparable>,
    /// fio's runs with iolab's accounting.
    fair: Vec<Comparable>,
}

impl Sides {
    /// Runs one side of a pair: 0 iolab, 1 fio, 2 fio fair.
    fn run(
        &mut self,
        side: usize,
        spec: &WorkloadSpec,
        prep: &prepare::Prepared,
        ses: &Session,
        cmds: &FioCommands,
    ) -> Result<()> {
        match side {
            0 => {
                let mut side = IolabSide {
                    stand_in: ses.waker.is_some(),
                    pin: cmds.pin,
                };
                let got = measure::runs(spec, prep, &Measure::new(ses.stop, 1), &mut side)?;
                for m in got.complete()? {
                    self.ours.push(Comparable::of_run(&m));
                    self.runs.push(m);
                }
            }
            1 => self.theirs.push(run_fio(spec, prep, &cmds.cmd)?),
            _ => self
                .fair
                .push(run_fio(spec, prep, cmds.fair.as_ref().expect("fair"))?),
        }
        Ok(())
    }

    /// The record of the comparison: iolab's runs, with fio's beside them.
    fn record(
        self,
        spec: WorkloadSpec,
        env: &iolab_bench::env::Environment,
        ses: &Session,
        started: u64,
        cmds: FioCommands,
    ) -> BenchRecord {
        let mut env = env.clone();
        env.fio_version = iolab_bench::env::fio_version();
        env.waker = ses.waker.clone().map(|mut w| {
            w.fio_supervisor_stand_in = true;
            w
        });
        let FioCommands { cmd, fair, pin } = cmds;
        let mut rec = BenchRecord::new(spec, env, started, self.runs);
        rec.vs_fio = Some(FioComparison {
            command: cmd.line(),
            notes: cmd.notes.clone(),
            iolab: self.ours,
            fio: self.theirs,
            fair: fair.map(|f| FairFio {
                command: f.line(),
                notes: f.notes.last().cloned().into_iter().collect(),
                cpu: pin.unwrap_or(0),
                fio: self.fair,
            }),
        });
        rec
    }
}

/// What iolab's side of a pair runs beside: fio's job has fio's
/// supervisor beside it, so iolab's run gets a stand-in (unless `--waker
/// off`), started first so that it is up (exec'd and sleeping) by the time
/// the cache is set; with `pin`, the calling thread is bound to that CPU
/// for the run (the runner's workers inherit the binding) and given its
/// CPUs back after. No thread is spawned: a one-worker run stays a
/// single-threaded process, as fio's job process is.
struct IolabSide {
    stand_in: bool,
    pin: Option<usize>,
}

/// Gives the calling thread its CPUs back when the run ends.
struct Unpin(Vec<usize>);

impl Drop for Unpin {
    fn drop(&mut self) {
        if let Err(e) = iolab::primitives::pin_to_cpus(&self.0) {
            eprintln!("warning: --vs fio: could not give the CPUs back: {e}");
        }
    }
}

impl measure::Hooks for IolabSide {
    fn before(&mut self) -> iolab_bench::Result<Option<Box<dyn std::any::Any>>> {
        let stand_in = match self.stand_in {
            true => Some(crate::waker::Wakers::stand_in().map_err(bench_err)?),
            false => None,
        };
        let unpin = match self.pin {
            Some(cpu) => {
                let before = iolab::primitives::allowed_cpus()?;
                iolab::primitives::pin_to_cpu(cpu)?;
                Some(Unpin(before))
            }
            None => None,
        };
        Ok(Some(Box::new((stand_in, unpin))))
    }
}

/// A set-up failure of iolab's side, as the measurement loop reports it.
fn bench_err(e: anyhow::Error) -> iolab_bench::BenchError {
    iolab_bench::BenchError::Io(iolab::Error::io(
        "--vs fio: start the stand-in for fio's supervisor",
        std::io::Error::other(format!("{e:#}")),
    ))
}

/// What ran next to the measurement, in words (`both`: with `--vs fio`).
pub fn waker_line(w: &iolab_bench::env::WakerInfo, both: bool) -> String {
    let cpus: Vec<String> = w.cpus.iter().map(usize::to_string).collect();
    let who = if both { "both tools" } else { "the run" };
    let stand_in = if w.fio_supervisor_stand_in {
        ", and iolab's runs beside one more, unpinned, every 10 ms, standing in for fio's supervisor beside fio's job"
    } else {
        ""
    };
    format!(
        "wakers: {who} ran next to a process waking every {} on CPU {}{stand_in} (fio's supervisor wakes every 10 ms; some VMs return from an I/O faster to a CPU that ran another task recently; --waker off leaves them out)",
        crate::export::table::ns(w.every_us as f64 * 1e3),
        cpus.join(",")
    )
}

/// (max - min) / median of a series, the spread between pairs.
fn spread(v: &[f64]) -> f64 {
    let m = median(v);
    if v.len() < 2 || m == 0.0 || m.is_nan() {
        return 0.0;
    }
    let (lo, hi) = v
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), &x| (a.min(x), b.max(x)));
    (hi - lo) / m
}

/// How a compared figure is shown.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Num,
    Count,
    Ns,
    Cpu,
    /// The device's view: shown where both sides have it, never a verdict.
    Device,
}

/// Requests the device completed per op, where both are known.
fn req_per_op(c: &Comparable) -> Option<f64> {
    c.dev_requests.filter(|_| c.ops > 0.0).map(|r| r / c.ops)
}

/// The side-by-side text of one comparison.
// Long on purpose: the side-by-side table, line by line, as printed.
pub fn render(rec: &BenchRecord) -> String {
    let mut o = String::new();
    let Some(c) = &rec.vs_fio else { return o };
    let _ = writeln!(
        o,
        "{}  vs fio, {} pairs, alternating who runs first",
        rec.label,
        c.iolab.len().min(c.fio.len())
    );
    let _ = writeln!(o, "fio command: {}", c.command);
    for n in &c.notes {
        let _ = writeln!(o, "  {n}");
    }
    if let Some(p) = rec.runs.iter().find_map(|r| r.placement.as_deref()) {
        let cpus = p.split(':').next().unwrap_or(p);
        let _ = writeln!(
            o,
            "  placement: iolab ran on {cpus}, next to the device's completion interrupts; fio runs where the scheduler puts it (--cpus pins both, fio's cpus_allowed; --placement any leaves both to the scheduler)"
        );
    }
    if let Some(w) = &rec.env.waker {
        let _ = writeln!(o, "  {}", waker_line(w, true));
    }
    let _ = writeln!(
        o,
        "{:<10} {:>12} {:>12} {:>10} {:>8}",
        "metric", "iolab", "fio", "iolab/fio", "noise"
    );
    type Get<'a> = Box<dyn Fn(&Comparable) -> Option<f64> + 'a>;
    // Where fio's CPU figure misses work iolab counts, the totals differ in
    // kind: only the submitting threads' CPU is the same quantity.
    let offload = iolab_fio::translate::cpu_offload(&rec.spec);
    // At depth 1 a worker's op is one request at a time: 1/IOPS per worker
    // is its mean latency, and what the device did not spend of it was
    // spent on the host (system call, file system, block layer, wake-up).
    let workers = f64::from(rec.spec.threads.max(1));
    let depth1 = rec.spec.qd <= 1;
    // The device's figures are the run's only where it moved at least half
    // the run's bytes; a warm run's requests are other programs'.
    let bs = rec.spec.bs as f64;
    let carried = move |c: &Comparable| c.dev_bytes.is_some_and(|b| b >= 0.5 * c.ops * bs);
    let metrics: Vec<(&str, Get, Kind)> = vec![
        ("MiB/s", Box::new(|c| Some(c.mib_per_s)), Kind::Num),
        ("IOPS", Box::new(|c| Some(c.iops)), Kind::Count),
        ("p50", Box::new(|c| Some(c.p50_ns)), Kind::Ns),
        ("p99", Box::new(|c| Some(c.p99_ns)), Kind::Ns),
        ("p99.9", Box::new(|c| Some(c.p99_9_ns)), Kind::Ns),
        ("cpu sub%", Box::new(|c| Some(c.cpu_submit_pct)), Kind::Cpu),
        ("cpu oth%", Box::new(|c| c.cpu_offload_pct), Kind::Cpu),
        ("cpu tot%", Box::new(|c| Some(c.cpu_pct)), Kind::Cpu),
        (
            "dev req/op",
            Box::new(move |c| req_per_op(c).filter(|_| carried(c))),
            Kind::Device,
        ),
        (
            "dev await",
            Box::new(move |c| c.dev_await_ns.filter(|_| carried(c))),
            Kind::Device,
        ),
        (
            "outside",
            Box::new(move |c| {
                let one_request =
                    carried(c) && req_per_op(c).is_some_and(|r| (r - 1.0).abs() < 0.02);
                (depth1 && one_request && c.iops > 0.0)
                    .then(|| workers * 1e9 / c.iops - c.dev_await_ns.unwrap_or(0.0))
            }),
            Kind::Device,
        ),
    ];
    let mut verdicts = Vec::new();
    let mut device_rows = false;
    for (name, get, kind) in metrics {
        let a: Vec<f64> = c.iolab.iter().filter_map(&get).collect();
        let b: Vec<f64> = c.fio.iter().filter_map(&get).collect();
        if kind == Kind::Device {
            // Only where the device saw the run on both sides.
            if a.is_empty() || b.is_empty() {
                continue;
            }
            device_rows = true;
        }
        let ma = median(&a);
        let mb = (!b.is_empty()).then(|| median(&b));
        let fmt = |v: f64| match kind {
            Kind::Ns => ns(v),
            Kind::Device if name == "dev req/op" => format!("{v:.3}"),
            Kind::Device => ns(v),
            Kind::Count => count(v),
            _ => format!("{v:.1}"),
        };
        // Not comparable: fio has no such figure, or its total misses the
        // helper/kernel threads' work.
        let comparable = mb.is_some() && !(name == "cpu tot%" && offload.is_some());
        let noise = spread(&a).max(spread(&b));
        let (fio_s, ratio_s, ratio) = match mb {
            Some(mb) if comparable => (fmt(mb), format!("{:.3}", ma / mb), ma / mb),
            Some(mb) => (fmt(mb), "n/c".to_string(), f64::NAN),
            None => ("not measured".to_string(), "n/c".to_string(), f64::NAN),
        };
        // Noise between pairs only where there is a ratio to judge.
        let noise_s = if comparable {
            format!("{:.1}%", noise * 100.0)
        } else {
            "-".to_string()
        };
        let _ = writeln!(
            o,
            "{:<10} {:>12} {:>12} {:>10} {:>8}",
            name,
            fmt(ma),
            fio_s,
            ratio_s,
            noise_s
        );
        // The device rows explain a verdict; they are not one.
        let judged = !matches!(kind, Kind::Cpu | Kind::Device);
        if judged && ratio.is_finite() && (ratio - 1.0).abs() > noise && a.len() > 1 {
            verdicts.push(format!(
                "{name}: iolab {:+.1} % against fio, more than the noise between pairs ({:.1} %)",
                (ratio - 1.0) * 100.0,
                noise * 100.0
            ));
        }
    }
    if verdicts.is_empty() {
        let _ = writeln!(o, "iolab and fio agree within the noise between pairs.");
    } else {
        for v in verdicts {
            let _ = writeln!(o, "{v}");
        }
    }
    let _ = writeln!(
        o,
        "(cpu sub: the submitting threads on both sides (RUSAGE_THREAD), like for like; cpu oth: iolab's helper and io_uring kernel threads, which fio does not measure; cpu tot: iolab's whole process against fio's job threads{})",
        match offload {
            Some(why) => format!(", not comparable (n/c) here: {why}"),
            None => ", comparable here: this engine does its I/O on the submitting thread".into(),
        }
    );
    if device_rows {
        let _ = writeln!(
            o,
            "(dev: the file's device, read from /sys/block/DEV/stat before and after each run on both sides: req/op = requests it completed per op, await = its mean time per request (iostat's r_await/w_await); outside{}: the rest of an op's time, spent on the host: system call, file system, block layer, wake-up)",
            if depth1 { " = workers/IOPS − await" } else { " is shown at depth 1 only, where 1/IOPS per worker is an op's mean time" }
        );
    }
    if let Some(f) = &c.fair {
        render_fair(&mut o, c, f);
    }
    o
}

/// The null engine's framework-cost lines: iolab against fio with iolab's
/// accounting (fair) and with fio's own (default).
fn render_fair(o: &mut String, c: &FioComparison, f: &FairFio) {
    let iops = |v: &[Comparable]| median(&v.iter().map(|c| c.iops).collect::<Vec<_>>());
    // CPU per op of the submitting threads: on a loaded machine the
    // IOPS ratio also measures who got more of the CPU; this does not.
    let per_op = |v: &[Comparable]| {
        median(
            &v.iter()
                .map(|c| c.cpu_submit_pct * 1e7 / c.iops.max(1.0))
                .collect::<Vec<_>>(),
        )
    };
    let (ours, our_ns) = (iops(&c.iolab), per_op(&c.iolab));
    let _ = writeln!(
        o,
        "null engine, framework cost (both tools pinned to CPU {}); iolab/fio IOPS, and fio/iolab CPU per op (higher = iolab cheaper):",
        f.cpu
    );
    let mut side = |label: &str, fio: &[Comparable], how: &str| {
        let _ = writeln!(
            o,
            "  {label} IOPS {:.3}  cpu/op {:.3} ({} vs {})  {how}",
            ours / iops(fio),
            per_op(fio) / our_ns,
            ns(our_ns),
            ns(per_op(fio)),
        );
    };
    side(
        "fair   ",
        &f.fio,
        &format!("fio with iolab's accounting: {}", f.command),
    );
    side(
        "default",
        &c.fio,
        "fio's default accounting: slat, clat, lat and their histograms per op",
    );
}

/// `iolab bench ... --fio-job`: the fio job file of each configuration.
pub fn print_job_files(specs: &[iolab_bench::spec::WorkloadSpec], temp: bool) -> Result<i32> {
    let mut text = String::new();
    for s in specs {
        let mut s = s.clone();
        if s.file_size == 0 {
            // An existing --file without --size: its length.
            let len = iolab::file::length(&s.files()[0]).unwrap_or(0);
            s.file_size = len.saturating_sub(s.offset);
        }
        let s = &s;
        let job = iolab_fio::translate::job_file(s).map_err(|why| {
            crate::error::usage(format!(
                "--fio-job: {} cannot be expressed in fio: {why}",
                crate::export::table::in_words(s)
            ))
        })?;
        text.push_str(&job);
        if temp {
            text.push_str("; (no --file given: name the file to run it)\n");
        }
        text.push('\n');
    }
    crate::export::stdout(&text)?;
    Ok(0)
}
