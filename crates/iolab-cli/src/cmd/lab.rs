//! `iolab lab list` and `iolab lab run NAME...`: the named experiments that
//! reproduce the studies, with resume, figures, the key table and findings.

use crate::cleanup;
use crate::export::target::{Mode, OutputTarget};
use crate::lab_files::write_regenerated;
use anyhow::{Context, Result};
use iolab_lab::record::{LabRecord, Machine};
use iolab_lab::{self as lab, resume, Ctx, Experiment, Scale};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// Arguments of `iolab lab`.
#[derive(clap::Args, Debug)]
pub struct LabArgs {
    #[command(subcommand)]
    cmd: LabCmd,
}

#[derive(clap::Subcommand, Debug)]
enum LabCmd {
    /// The experiments, one line each.
    List,
    /// Run experiments (`all` for every one).
    Run(RunArgs),
}

/// Size of the experiments.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScaleArg {
    /// Tiny files, one repeat: seconds (for tests).
    Smoke,
    /// Minutes per experiment.
    Quick,
    /// Follows the study (up to 30 minutes per experiment).
    Full,
}

/// Arguments of `iolab lab run`.
#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// Experiment names (see `iolab lab list`), or `all`.
    #[arg(required = true, value_name = "NAME")]
    names: Vec<String>,
    /// Directory for data files (default: a temporary folder here, removed afterwards).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Size of the experiments.
    #[arg(long, value_enum, default_value = "quick")]
    scale: ScaleArg,
    /// Directory for records (NAME.jsonl) and figures (SVG).
    #[arg(long, default_value = "iolab-lab")]
    out: PathBuf,
    /// Measure every configuration again (ignore records already in OUT).
    #[arg(long)]
    fresh: bool,
    /// Allow replacing figure files iolab did not write.
    #[arg(long)]
    overwrite: bool,
}

/// Runs `iolab lab`.
pub fn run(a: &LabArgs, stop: &'static AtomicBool) -> Result<i32> {
    match &a.cmd {
        LabCmd::List => {
            crate::export::stdout(&list())?;
            Ok(0)
        }
        LabCmd::Run(r) => run_experiments(r, stop),
    }
}

fn list() -> String {
    let mut s = String::from("experiment    studies   time smoke/quick/full   answers\n");
    for e in lab::experiments() {
        let t = e.times();
        s.push_str(&format!(
            "{:<13} {:<9} {:<23} {}\n",
            e.name(),
            e.study(),
            format!("{} / {} / {}", t[0], t[1], t[2]),
            e.answers()
        ));
    }
    s
}

fn select(names: &[String]) -> Result<Vec<&'static dyn Experiment>> {
    if names.iter().any(|n| n == "all") {
        return Ok(lab::experiments());
    }
    let mut v: Vec<&'static dyn Experiment> = Vec::new();
    for n in names {
        match lab::find(n) {
            Some(e) => {
                if !v.iter().any(|x| x.name() == e.name()) {
                    v.push(e);
                }
            }
            None => {
                let all: Vec<&str> = lab::experiments().iter().map(|e| e.name()).collect();
                return Err(super::usage(format!(
                    "unknown experiment '{n}' (one of {}, or all)",
                    all.join(", ")
                )));
            }
        }
    }
    Ok(v)
}

/// Marker written into every figure, so a later run knows the file is ours.
pub const FIGURE_MARK: &str = "<!-- iolab figure -->";

/// The SVG with the iolab mark after its XML declaration.
pub fn marked_svg(svg: &str) -> String {
    match svg.find("?>") {
        Some(i) if svg.starts_with("<?xml") => {
            format!("{}\n{FIGURE_MARK}{}", &svg[..i + 2], &svg[i + 2..])
        }
        _ => format!("{FIGURE_MARK}\n{svg}"),
    }
}

/// Runs `iolab lab run`: checks the outputs, then runs each experiment in
/// turn (see [`run_one`]).
fn run_experiments(a: &RunArgs, stop: &'static AtomicBool) -> Result<i32> {
    // Under mpirun rank 0 runs the lab; the other ranks follow it here.
    let ranks = match crate::lab_ranks::join(stop)? {
        crate::lab_ranks::Joined::Followed(code) => return Ok(code),
        j => j,
    };
    let exps = select(&a.names)?;
    prepare_dirs(a)?;
    // Check every record file before measuring anything.
    let mut targets = Vec::new();
    for e in &exps {
        let p = a.out.join(format!("{}.jsonl", e.name()));
        targets.push(OutputTarget::check("--out", &p, false, Mode::Append, &[])?);
    }
    let (dir, _temp) = data_dir(a)?;
    let scale = match a.scale {
        ScaleArg::Smoke => Scale::Smoke,
        ScaleArg::Quick => Scale::Quick,
        ScaleArg::Full => Scale::Full,
    };
    let env = iolab_bench::env::Environment::capture(&dir);
    let machine = Machine::of(&dir);
    let on_created = |p: &Path| {
        if let Some(id) = iolab::file::FileIdent::of_path(p) {
            cleanup::register_created(p, id);
        }
    };
    let ctx = Ctx {
        scale,
        dir: dir.clone(),
        stop,
        mem_bytes: env.memory_bytes,
        cores: env.cores as u32,
        free_bytes: iolab::file::free_space(&dir).unwrap_or(u64::MAX),
        on_created: &on_created,
        ranks: ranks.world(),
    };
    let command = std::env::args()
        .map(|s| shlex::try_quote(&s).map(|c| c.into_owned()).unwrap_or(s))
        .collect::<Vec<_>>()
        .join(" ");
    for (e, target) in exps.into_iter().zip(targets) {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let mut out = (crate::export::jsonl::FORMAT.make)(target);
        let text = run_one(a, e, &mut *out, &ctx, &machine, &command)?;
        crate::export::stdout(&text)?;
    }
    if stop.load(Ordering::Relaxed) {
        eprintln!("interrupted: run the same command again to resume");
        return Ok(130);
    }
    if machine_loaded() {
        eprintln!(
            "note: the machine was busy (load average above the core count): numbers are noisy"
        );
    }
    Ok(0)
}

/// Checks `--dir` (made later, if missing, only once nothing else is
/// wrong), then makes `--out`.
fn prepare_dirs(a: &RunArgs) -> Result<()> {
    if let Some(d) = &a.dir {
        crate::work_dir::check("--dir", d)?;
    }
    make_out_dir(&a.out)
}

/// `--out`: made if missing (a directory, never a file).
fn make_out_dir(out: &Path) -> Result<()> {
    match std::fs::metadata(out) {
        Ok(m) if !m.is_dir() => {
            return Err(super::usage(format!(
                "--out {}: not a directory; name a directory for records and figures",
                out.display()
            )))
        }
        Ok(_) => {}
        Err(_) => std::fs::create_dir_all(out)
            .map_err(|e| super::usage(format!("--out {}: cannot create it: {e}", out.display())))?,
    }
    Ok(())
}

/// `--dir`, or a temporary data folder here (removed when the returned
/// guard drops).
fn data_dir(a: &RunArgs) -> Result<(PathBuf, Option<tempfile::TempDir>)> {
    let mut temp = None;
    let dir = match &a.dir {
        Some(d) => {
            crate::work_dir::ensure("--dir", d)?;
            d.clone()
        }
        None => {
            let t = tempfile::Builder::new()
                .prefix(".iolab-lab-")
                .tempdir_in(".")
                .context("create a temporary data folder here (or give --dir)")?;
            let p = t.path().to_path_buf();
            // Removed on every way out, a forced one included.
            if let Some(id) = iolab::file::FileIdent::of_path(&p) {
                crate::cleanup::register_created(&p, id);
            }
            temp = Some(t);
            p
        }
    };
    Ok((dir, temp))
}

/// Runs one experiment (resuming from its records unless `--fresh`),
/// writes its figures and returns the text to print.
fn run_one(
    a: &RunArgs,
    e: &dyn lab::Experiment,
    out: &mut dyn crate::export::Exporter,
    ctx: &Ctx,
    machine: &Machine,
    command: &str,
) -> Result<String> {
    let mut text = String::new();
    let path = a.out.join(format!("{}.jsonl", e.name()));
    let previous = if a.fresh {
        Vec::new()
    } else {
        resume::load(&path).with_context(|| format!("read {}", path.display()))?
    };
    let t0 = std::time::Instant::now();
    let mut bar = crate::lab_progress::Bar::default();
    let mut sink = |r: &LabRecord| -> iolab_bench::Result<()> {
        out.record(r)
            .map_err(|e| iolab_bench::BenchError::Usage(format!("{e:#}")))
    };
    let recs = lab::run(e, ctx, machine, command, &previous, &mut bar, &mut sink)
        .with_context(|| format!("experiment {}", e.name()))?;
    bar.finish();
    let secs = t0.elapsed().as_secs_f64();
    let an = e.analyse(&recs);
    for f in &an.figures {
        let p = a.out.join(format!("{}.svg", f.name));
        write_regenerated("--out", &p, &marked_svg(&f.svg), FIGURE_MARK, a.overwrite)?;
    }
    text.push_str(&format!(
        "== {} (studies {}): {} configuration(s), {:.1} s, scale {} ==\n",
        e.name(),
        e.study(),
        recs.len(),
        secs,
        ctx.scale.name()
    ));
    text.push_str(&an.table);
    for f in &an.findings {
        text.push_str(&format!("finding: {}\n", f.line()));
    }
    text.push_str(&format!(
        "records: {}; figures: {}\n\n",
        path.display(),
        an.figures
            .iter()
            .map(|f| a.out.join(format!("{}.svg", f.name)).display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    ));
    Ok(text)
}

/// Whether the 1-minute load average exceeds the number of cores.
fn machine_loaded() -> bool {
    let load = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| {
            s.split_whitespace()
                .next()
                .and_then(|v| v.parse::<f64>().ok())
        })
        .unwrap_or(0.0);
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1) as f64;
    load > cores
}
