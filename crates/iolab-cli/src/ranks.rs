//! `mpirun -n N iolab bench ...`: one measurement across N ranks, IOR's way.
//! Every rank checks that all run the same thing, prepares its file (or
//! rank 0 the shared one), sets and checks its cache state, then the ranks
//! meet at barriers around the I/O phase; rank 0 merges the reports and is
//! the only one that prints or writes. A rank that fails names itself and
//! ends every rank (MPI_Abort) instead of leaving them in a barrier.

use crate::bench_args::BenchArgs;
use crate::export::{Exportable, Exporters};
use crate::session::Session;
use anyhow::{Context, Result};
use iolab_bench::rank_place::{Layout, RankPlace};
use iolab_bench::record::{RunMetrics, SCHEMA_VERSION};
use iolab_bench::spec::WorkloadSpec;
use iolab_bench::BenchError;
use iolab_mpi::run::{self, RankRun};
use iolab_mpi::{Aggregate, RankReport, StonewallPoint, World};
use serde::Serialize;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

/// What rank 0 writes: the merged run and every rank's detail.
#[derive(Serialize)]
struct RanksRecord<'a> {
    schema_version: u32,
    label: String,
    spec: &'a WorkloadSpec,
    mpi_library: String,
    ranks: u32,
    hosts: &'a [(String, u32)],
    aggregate: &'a Aggregate,
    per_rank: Vec<RankDetail<'a>>,
    latency_definition: &'static str,
}

#[derive(Serialize)]
struct RankDetail<'a> {
    rank: u32,
    host: &'a str,
    start_ns: i64,
    end_ns: i64,
    resident_before: f64,
    resident_after: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    stonewall: Option<StonewallPoint>,
    metrics: &'a RunMetrics,
}

/// What `iolab bench` decides before measuring: the valid configurations
/// and, unless it only prints, the checked output files.
pub type Planner<'a> =
    &'a dyn Fn(&BenchArgs) -> Result<(Vec<WorkloadSpec>, Option<crate::export::flags::Targets>)>;

/// Runs `a` as one rank of a multi-rank run when started by an MPI
/// launcher; `Ok(None)` when this is a plain single process.
/// `plan` is how `iolab bench` plans a run (passed in by `bench`, which
/// this file does not import).
pub fn maybe_run(a: &BenchArgs, stop: &AtomicBool, plan: Planner) -> Result<Option<i32>> {
    let world = match World::join() {
        Ok(Some(w)) => w,
        Ok(None) => {
            if a.ranks.any() {
                return Err(crate::error::usage(
                    "--layout, --region, --segments, --deadline, --wearout, --reorder and --fsync-on-close are for runs under mpirun (e.g. mpirun -n 4 iolab bench --layout segmented ...)",
                ));
            }
            return Ok(None);
        }
        Err(e) => return Err(crate::error::usage(e.to_string())),
    };
    if let Some(code) = disagreement(&world) {
        return Ok(Some(code));
    }
    let (spec, targets) = match planned(a, &world, plan) {
        Ok(p) => p,
        Err(code) => return Ok(Some(code)),
    };
    match run_rank(a, &world, &spec, stop) {
        Ok(report) => {
            if let Some(reports) = run::gather(&world, &report)? {
                report_root(a, &world, &spec, &reports, targets)?;
            }
            Ok(Some(0))
        }
        Err(e) => world.fail(&crate::error::one_line(&e), 1),
    }
}

/// Every rank must measure the same thing with the same binary: refused
/// before any I/O, by rank 0 alone. Some(exit code) when they disagree.
fn disagreement(world: &World) -> Option<i32> {
    let mut facts = vec![
        (
            "iolab version".to_string(),
            env!("CARGO_PKG_VERSION").to_string(),
        ),
        (
            "binary size".to_string(),
            std::env::current_exe()
                .and_then(std::fs::metadata)
                .map(|m| m.len().to_string())
                .unwrap_or_default(),
        ),
    ];
    for (i, arg) in std::env::args().enumerate().skip(1) {
        facts.push((format!("argument {i}"), arg));
    }
    let e = world.agree(&facts).err()?;
    if world.is_root() {
        eprintln!("error: {e}");
    }
    // Nobody leaves before rank 0 has said it: the launcher ends every
    // rank as soon as one exits with an error.
    world.barrier();
    Some(2)
}

/// This rank's plan ([`plan_rank`]), or the exit code once bad input has
/// been said: each rank finds the same problem and rank 0 says it once; a
/// problem only some ranks have (their own file) they say themselves.
fn planned(
    a: &BenchArgs,
    world: &World,
    plan: Planner,
) -> std::result::Result<(WorkloadSpec, Option<crate::export::flags::Targets>), i32> {
    let planned = plan_rank(a, world, plan);
    let root_failed = world.broadcast_i64(i64::from(planned.is_err())) != 0;
    let any_failed = world.all_max_u64(u64::from(planned.is_err())) != 0;
    match planned {
        Ok(p) if !any_failed => Ok(p),
        Ok(_) => {
            world.barrier();
            Err(2)
        }
        Err(e) => {
            // Said once (by rank 0, or by the ranks whose own input alone
            // was bad), before anyone exits: the launcher ends every rank
            // as soon as one exits with an error.
            if world.is_root() {
                eprintln!("error: {}", crate::error::one_line(&e));
            } else if !root_failed {
                world.say(&crate::error::one_line(&e));
            }
            world.barrier();
            Err(crate::error::exit_code(&e))
        }
    }
}

/// The file a rank opens with per-rank files (`{rank}` in `--file` made
/// the rank it works on); None keeps `--file` (shared layouts).
fn rank_file(
    file: Option<&std::path::Path>,
    layout: Layout,
    target: u32,
    ranks: u32,
) -> Result<Option<PathBuf>> {
    match (file, layout) {
        (Some(f), Layout::PerRank) => {
            let s = f.to_string_lossy();
            if !s.contains("{rank}") && ranks > 1 {
                return Err(crate::error::usage(format!(
                    "--file {s}: with --layout per-rank each rank needs its own file: put {{rank}} in the name (e.g. --file 'data.{{rank}}')"
                )));
            }
            Ok(Some(PathBuf::from(
                s.replace("{rank}", &target.to_string()),
            )))
        }
        (None, l) if l.shared() => Err(crate::error::usage(format!(
            "--layout {l}: name the shared file with --file (every rank must open the same one)"
        ))),
        _ => Ok(None),
    }
}

/// `--wearout` needs a deadline, and one stream of ops per rank.
fn check_wearout(a: &BenchArgs, spec: &WorkloadSpec) -> Result<()> {
    if a.ranks.wearout && a.ranks.deadline.is_none() {
        return Err(crate::error::usage(
            "--wearout evens the ranks out after a deadline: give --deadline too (e.g. --deadline 30s --wearout, IOR's -D with stoneWallingWearOut)",
        ));
    }
    if a.ranks.wearout && spec.workers() > 1 {
        return Err(crate::error::usage(format!(
            "--wearout counts each rank's ops as one stream: give --threads 1, not {}",
            spec.threads
        )));
    }
    Ok(())
}

/// This rank's spec (its file, its place) and, on rank 0, the checked
/// outputs.
fn plan_rank(
    a: &BenchArgs,
    world: &World,
    plan: Planner,
) -> Result<(WorkloadSpec, Option<crate::export::flags::Targets>)> {
    let (rank, ranks) = (world.rank(), world.size());
    let layout = a.ranks.layout.unwrap_or(Layout::PerRank);
    let mut b = a.clone();
    if !world.is_root() {
        b.out = Default::default();
        b.out.overwrite = a.out.overwrite;
    }
    if a.vs.is_some() {
        return Err(crate::error::usage("--vs is not available under mpirun"));
    }
    let target = if a.ranks.reorder {
        (rank + 1) % ranks
    } else {
        rank
    };
    if let Some(f) = rank_file(a.file.as_deref(), layout, target, ranks)? {
        b.file = Some(f);
    }
    let size = a.size.unwrap_or(1 << 30);
    let region = a.ranks.region.unwrap_or(if layout.shared() {
        size / u64::from(ranks) / a.ranks.segments
    } else {
        size / a.ranks.segments
    });
    let bs = *a.bs.first().unwrap_or(&4096);
    let place = RankPlace {
        rank: target,
        ranks,
        layout,
        region: region / bs * bs,
        segments: a.ranks.segments,
        bs,
        resume_ops: 0,
    };
    place.validate().map_err(crate::error::usage)?;
    b.size = Some(place.file_bytes());
    let (all, targets) = plan(&b)?;
    if all.len() != 1 {
        return Err(crate::error::usage(
            "under mpirun give one configuration (no comma-separated sweeps)",
        ));
    }
    let mut spec = all[0].clone();
    check_wearout(a, &spec)?;
    spec.place = Some(place);
    if let Some(d) = a.ranks.deadline {
        spec.stop.time_ns = Some(d.as_nanos() as u64);
        if spec.stop.ops.is_none() && spec.stop.bytes.is_none() {
            spec.stop.bytes = Some(place.rank_bytes());
        }
    }
    Ok((spec, targets))
}

/// Prepares, runs and checks this rank's part; the report for rank 0.
fn run_rank(
    a: &BenchArgs,
    world: &World,
    spec: &WorkloadSpec,
    stop: &AtomicBool,
) -> Result<RankReport> {
    let ses = Session {
        stop,
        repeat: 1,
        size_given: true,
        overwrite: a.out.overwrite,
        live: false,
        waker: None,
    };
    let r = RankRun {
        world,
        stop,
        wearout: a.ranks.wearout,
        fsync_on_close: a.ranks.fsync_on_close,
    };
    let mut prepare = |s: &WorkloadSpec| {
        crate::session::prepare_files(s, &ses, false)
            .map_err(|e| BenchError::Usage(crate::error::one_line(&e)))
    };
    Ok(run::run_rank(&r, spec, &mut prepare)?)
}

/// Rank 0: merge, print, write.
fn report_root(
    a: &BenchArgs,
    world: &World,
    spec: &WorkloadSpec,
    reports: &[RankReport],
    targets: Option<crate::export::flags::Targets>,
) -> Result<()> {
    let agg = Aggregate::of(reports).context("merge the ranks' results")?;
    let rec = RanksRecord {
        schema_version: SCHEMA_VERSION,
        label: spec.label(),
        spec,
        mpi_library: world.library(),
        ranks: agg.ranks,
        hosts: &agg.hosts,
        aggregate: &agg,
        per_rank: reports
            .iter()
            .map(|r| RankDetail {
                rank: r.rank,
                host: &r.host,
                start_ns: r.start_ns,
                end_ns: r.end_ns,
                resident_before: r.resident_before,
                resident_after: r.resident_after,
                stonewall: r.stonewall,
                metrics: &r.metrics,
            })
            .collect(),
        latency_definition: iolab_bench::record::LATENCY_DEFINITION,
    };
    let out = RanksOut {
        rec: &rec,
        agg: &agg,
        reports,
    };
    if let Some(t) = targets {
        let mut exporters = Exporters::new(t);
        exporters.record(&out)?;
        exporters.finish()?;
    }
    if a.out.json {
        let line = serde_json::to_string(&rec).context("encode the record")?;
        return crate::export::stdout(&format!("{line}\n"));
    }
    crate::export::stdout(&table(spec, &agg, reports, &world.library()))
}

/// A multi-rank run as the file formats write it: the record as JSON, and
/// one CSV row per rank and one for all of them.
struct RanksOut<'a> {
    rec: &'a RanksRecord<'a>,
    agg: &'a Aggregate,
    reports: &'a [RankReport],
}

impl Exportable for RanksOut<'_> {
    fn to_json(&self) -> Result<serde_json::Value> {
        Ok(serde_json::to_value(self.rec)?)
    }

    fn csv_header(&self) -> Vec<String> {
        [
            "rank",
            "host",
            "bytes",
            "ops",
            "mib_per_s",
            "p50_ns",
            "p99_ns",
            "resident_before",
            "resident_after",
        ]
        .map(String::from)
        .to_vec()
    }

    fn csv_rows(&self) -> Vec<Vec<String>> {
        let mut rows: Vec<Vec<String>> = self
            .reports
            .iter()
            .map(|r| {
                let l = &r.metrics.latency;
                vec![
                    r.rank.to_string(),
                    r.host.clone(),
                    r.metrics.bytes.to_string(),
                    r.metrics.ops.to_string(),
                    format!("{:.3}", r.metrics.mib_per_s),
                    l.p50_ns.to_string(),
                    l.p99_ns.to_string(),
                    format!("{:.4}", r.resident_before),
                    format!("{:.4}", r.resident_after),
                ]
            })
            .collect();
        let agg = self.agg;
        rows.push(vec![
            "all".to_string(),
            String::new(),
            agg.bytes.to_string(),
            agg.ops.to_string(),
            format!("{:.3}", agg.mib_per_s),
            agg.latency.p50_ns.to_string(),
            agg.latency.p99_ns.to_string(),
            String::new(),
            format!("{:.4}", agg.max_resident_after),
        ]);
        rows
    }
}

fn table(spec: &WorkloadSpec, agg: &Aggregate, reports: &[RankReport], lib: &str) -> String {
    use std::fmt::Write;
    let mut t = String::new();
    let hosts: Vec<String> = agg.hosts.iter().map(|(h, n)| format!("{h}×{n}")).collect();
    let _ = writeln!(t, "{} ranks on {} ({lib})", agg.ranks, hosts.join(", "));
    let _ = writeln!(t, "{}", spec.label());
    let _ = writeln!(
        t,
        "{:>6} {:>12} {:>10} {:>10} {:>10} {:>9} {:>9}",
        "rank", "host", "MiB/s", "p50 µs", "p99 µs", "res.bef", "res.aft"
    );
    for r in reports {
        let l = &r.metrics.latency;
        let _ = writeln!(
            t,
            "{:>6} {:>12} {:>10.1} {:>10.1} {:>10.1} {:>8.1}% {:>8.1}%",
            r.rank,
            r.host,
            r.metrics.mib_per_s,
            l.p50_ns as f64 / 1e3,
            l.p99_ns as f64 / 1e3,
            r.resident_before * 100.0,
            r.resident_after * 100.0
        );
    }
    let _ = writeln!(
        t,
        "aggregate: {:.1} MiB/s ({} bytes in {:.3} s, latest end − earliest start); per rank min/mean/max {:.1}/{:.1}/{:.1} MiB/s; slowest rank {} on {}",
        agg.mib_per_s,
        agg.bytes,
        agg.wall_ns as f64 / 1e9,
        agg.rank_mib_per_s.min,
        agg.rank_mib_per_s.mean,
        agg.rank_mib_per_s.max,
        agg.slowest.0,
        agg.slowest.1
    );
    if let Some(w) = &agg.stonewall {
        let _ = writeln!(
            t,
            "at the deadline (--wearout): ops per rank min {} max {}; data min {:.1} MiB mean {:.1} MiB; {:.1} MiB/s over {:.3} s; then every rank went on to {} ops",
            w.ops_min,
            w.ops_max,
            w.bytes_min as f64 / 1048576.0,
            w.bytes_mean / 1048576.0,
            w.mib_per_s,
            w.wall_ns as f64 / 1e9,
            w.ops_max
        );
    }
    let _ = writeln!(
        t,
        "latency of all ranks' ops (histograms merged): p50 {:.1} µs, p99 {:.1} µs, p99.9 {:.1} µs; CPU summed {:.0} % of a core",
        agg.latency.p50_ns as f64 / 1e3,
        agg.latency.p99_ns as f64 / 1e3,
        agg.latency.p99_9_ns as f64 / 1e3,
        agg.cpu_pct_sum
    );
    t
}
