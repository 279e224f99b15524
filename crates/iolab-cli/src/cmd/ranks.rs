//! `mpirun -n N iolab bench ...`: one measurement across N ranks, IOR's way.
//! Every rank checks that all run the same thing, prepares its file (or
//! rank 0 the shared one), sets and checks its cache state, then the ranks
//! meet at barriers around the I/O phase; rank 0 merges the reports and is
//! the only one that prints or writes. A rank that fails names itself and
//! ends every rank (MPI_Abort) instead of leaving them in a barrier.

use super::bench::BenchArgs;
use super::session::Session;
use anyhow::{Context, Result};
use iolab_bench::prepare::{self, Prepared};
use iolab_bench::ranks::{
    encode_histogram, Aggregate, Layout, RankPlace, RankReport, StonewallPoint, World,
};
use iolab_bench::record::{RunMetrics, SCHEMA_VERSION};
use iolab_bench::runner::{run_once, RealEngines, RunControl};
use iolab_bench::spec::{StopRule, WorkloadSpec};
use iolab_bench::BenchError;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// Flags of multi-rank runs (used only under `mpirun`).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct RankArgs {
    /// How ranks share files: per-rank (`--file 'data.{rank}'`), segmented
    /// or strided (one shared file, IOR's layouts).
    #[arg(long, value_parser = |s: &str| s.parse::<Layout>())]
    pub layout: Option<Layout>,
    /// Bytes of one rank's region per segment (IOR's -b; not --bs, the
    /// transfer size). Default: --size (per-rank) or --size / ranks (shared).
    #[arg(long, value_parser = crate::parse::size)]
    pub region: Option<u64>,
    /// Segments (IOR's -s).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    pub segments: u64,
    /// IOR's stonewalling deadline (-D): every rank stops its I/O this long
    /// after the common start (not fio's stonewall).
    #[arg(long, value_parser = crate::parse::duration)]
    pub deadline: Option<Duration>,
    /// After the deadline, every rank goes on until it has done as many ops
    /// as the busiest rank had (IOR's stoneWallingWearOut): both the
    /// figure at the deadline and the whole run's are reported.
    #[arg(long)]
    pub wearout: bool,
    /// Each rank works on the data of the next rank (IOR's -C): a read that
    /// follows a write then reads what another rank wrote.
    #[arg(long)]
    pub reorder: bool,
    /// fsync every written file before the I/O phase ends (fio's end_fsync;
    /// counted in the phase's time, as IOR's -e).
    #[arg(long)]
    pub fsync_on_close: bool,
}

impl RankArgs {
    /// Whether any multi-rank flag was given.
    pub fn any(&self) -> bool {
        self.layout.is_some()
            || self.region.is_some()
            || self.segments != 1
            || self.deadline.is_some()
            || self.wearout
            || self.reorder
            || self.fsync_on_close
    }
}

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

/// Runs `a` as one rank of a multi-rank run when started by an MPI
/// launcher; `Ok(None)` when this is a plain single process.
pub fn maybe_run(a: &BenchArgs, stop: &AtomicBool) -> Result<Option<i32>> {
    let world = match World::join() {
        Ok(Some(w)) => w,
        Ok(None) => {
            if a.ranks.any() {
                return Err(super::usage(
                    "--layout, --region, --segments, --deadline, --wearout, --reorder and --fsync-on-close are for runs under mpirun (e.g. mpirun -n 4 iolab bench --layout segmented ...)",
                ));
            }
            return Ok(None);
        }
        Err(e) => return Err(super::usage(e.to_string())),
    };
    let rank = world.rank();
    let host = world.host();
    // Every rank must measure the same thing with the same binary: refused
    // before any I/O, by rank 0 alone.
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
    if let Err(e) = world.agree(&facts) {
        if world.is_root() {
            eprintln!("error: {e}");
        }
        // Nobody leaves before rank 0 has said it: the launcher ends every
        // rank as soon as one exits with an error.
        world.barrier();
        return Ok(Some(2));
    }
    // Bad input: each rank finds the same problem and rank 0 says it once;
    // a problem only some ranks have (their own file) they say themselves.
    let planned = plan_rank(a, &world);
    let root_failed = world.broadcast_i64(i64::from(planned.is_err())) != 0;
    let any_failed = world.all_max_u64(u64::from(planned.is_err())) != 0;
    let (spec, targets) = match planned {
        Ok(p) if !any_failed => p,
        Ok(_) => {
            world.barrier();
            return Ok(Some(2));
        }
        Err(e) => {
            // Said once (by rank 0, or by the ranks whose own input alone
            // was bad), before anyone exits: the launcher ends every rank
            // as soon as one exits with an error.
            if world.is_root() {
                eprintln!("error: {}", crate::one_line(&e));
            } else if !root_failed {
                eprintln!("iolab: rank {rank} on {host}: {}", crate::one_line(&e));
            }
            world.barrier();
            return Ok(Some(crate::exit_code(&e)));
        }
    };
    match run_rank(a, &world, &spec, stop) {
        Ok(report) => {
            let bytes = serde_json::to_vec(&report).context("encode rank report")?;
            if let Some(all) = world.gather_bytes(&bytes) {
                let reports: Vec<RankReport> = all
                    .iter()
                    .map(|b| serde_json::from_slice(b))
                    .collect::<Result<_, _>>()
                    .context("decode rank reports")?;
                report_root(a, &world, &spec, &reports, targets)?;
            }
            Ok(Some(0))
        }
        Err(e) => {
            eprintln!("iolab: rank {rank} on {host}: {}", crate::one_line(&e));
            world.abort(1)
        }
    }
}

/// This rank's spec (its file, its place) and, on rank 0, the checked
/// outputs.
fn plan_rank(
    a: &BenchArgs,
    world: &World,
) -> Result<(WorkloadSpec, Option<crate::output::flags::Targets>)> {
    let (rank, ranks) = (world.rank(), world.size());
    let layout = a.ranks.layout.unwrap_or(Layout::PerRank);
    let mut b = a.clone();
    if !world.is_root() {
        b.out = Default::default();
        b.out.overwrite = a.out.overwrite;
    }
    if a.vs.is_some() {
        return Err(super::usage("--vs is not available under mpirun"));
    }
    let target = if a.ranks.reorder {
        (rank + 1) % ranks
    } else {
        rank
    };
    match (&a.file, layout) {
        (Some(f), Layout::PerRank) => {
            let s = f.to_string_lossy();
            if !s.contains("{rank}") && ranks > 1 {
                return Err(super::usage(format!(
                    "--file {s}: with --layout per-rank each rank needs its own file: put {{rank}} in the name (e.g. --file 'data.{{rank}}')"
                )));
            }
            b.file = Some(PathBuf::from(s.replace("{rank}", &target.to_string())));
        }
        (None, l) if l.shared() => {
            return Err(super::usage(format!(
                "--layout {l}: name the shared file with --file (every rank must open the same one)"
            )));
        }
        _ => {}
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
    place.validate().map_err(super::usage)?;
    b.size = Some(place.file_bytes());
    let planned = super::bench::plan(&b)?;
    let all = planned.specs();
    if all.len() != 1 {
        return Err(super::usage(
            "under mpirun give one configuration (no comma-separated sweeps)",
        ));
    }
    let mut spec = all[0].clone();
    if a.ranks.wearout && a.ranks.deadline.is_none() {
        return Err(super::usage(
            "--wearout evens the ranks out after a deadline: give --deadline too (e.g. --deadline 30s --wearout, IOR's -D with stoneWallingWearOut)",
        ));
    }
    if a.ranks.wearout && spec.workers() > 1 {
        return Err(super::usage(format!(
            "--wearout counts each rank's ops as one stream: give --threads 1, not {}",
            spec.threads
        )));
    }
    spec.place = Some(place);
    if let Some(d) = a.ranks.deadline {
        spec.stop.time_ns = Some(d.as_nanos() as u64);
        if spec.stop.ops.is_none() && spec.stop.bytes.is_none() {
            spec.stop.bytes = Some(place.rank_bytes());
        }
    }
    Ok((spec, planned.into_targets()))
}

/// Prepares, runs and checks this rank's part; the report for rank 0.
fn run_rank(
    a: &BenchArgs,
    world: &World,
    spec: &WorkloadSpec,
    stop: &AtomicBool,
) -> Result<RankReport> {
    let place = spec.place.expect("a rank's spec has its place");
    let ses = Session {
        stop,
        repeat: 1,
        size_given: true,
        overwrite: a.out.overwrite,
        live: false,
    };
    // A shared file is made once, by rank 0, before the others open it.
    let prep = if place.layout.shared() {
        let p = if world.is_root() {
            Some(super::session::prepare_files(spec, &ses, false)?)
        } else {
            None
        };
        world.barrier();
        match p {
            Some(p) => p,
            None => super::session::prepare_files(spec, &ses, false)?,
        }
    } else {
        super::session::prepare_files(spec, &ses, false)?
    };
    let size = spec.file_size;
    prepare::set_cache(spec, &prep, size)?;
    // Every rank has evicted (or warmed) before any rank measures.
    world.barrier();
    let resident_before = rank_residency(&prep, &place)?;
    let clock = RankClock::new(world);
    world.barrier();
    let measured = measure(a, world, spec, &prep, resident_before, stop)?;
    let (mut m, stonewall) = (measured.metrics, measured.stonewall);
    let (win_start, win_end) = m.window.unwrap_or_else(|| {
        let t = std::time::Instant::now();
        (t, t)
    });
    let start_ns = clock.at(win_start);
    let mut end_ns = clock.at(win_end);
    if a.ranks.fsync_on_close && spec.op.writes() {
        for f in &prep.files {
            std::fs::OpenOptions::new()
                .write(true)
                .open(&f.path)
                .and_then(|h| h.sync_all())
                .with_context(|| format!("fsync {}", f.path.display()))?;
        }
        end_ns = clock.at(std::time::Instant::now());
    }
    world.barrier();
    let resident_after = rank_residency(&prep, &place)?;
    let histogram = m
        .latency_hist
        .take()
        .map(|h| encode_histogram(&h))
        .unwrap_or_else(|| encode_histogram(&iolab_bench::metrics::new_histogram()));
    Ok(RankReport {
        rank: world.rank(),
        host: world.host(),
        start_ns,
        end_ns,
        metrics: m,
        resident_before,
        resident_after,
        histogram,
        stonewall: stonewall.map(|(ops, bytes, at)| StonewallPoint {
            ops,
            bytes,
            end_ns: clock.at(at),
        }),
    })
}

/// Instants of this rank placed on rank 0's wall clock: one reading of
/// both clocks after the offset to rank 0 is measured.
struct RankClock {
    instant: std::time::Instant,
    realtime_ns: i64,
}

impl RankClock {
    fn new(world: &World) -> RankClock {
        let offset = world.clock_offset_ns();
        RankClock {
            instant: std::time::Instant::now(),
            realtime_ns: iolab_bench::ranks::world::realtime_ns() + offset,
        }
    }

    /// `t` in ns on rank 0's clock.
    fn at(&self, t: std::time::Instant) -> i64 {
        match t.checked_duration_since(self.instant) {
            Some(d) => self.realtime_ns + d.as_nanos() as i64,
            None => self.realtime_ns - self.instant.duration_since(t).as_nanos() as i64,
        }
    }
}

/// What one rank measured, and with `--wearout` where the deadline stopped
/// it (ops, bytes, when).
struct Measured {
    metrics: RunMetrics,
    stonewall: Option<(u64, u64, std::time::Instant)>,
}

/// The measured phase of one rank: one run, or with `--wearout` the run to
/// the deadline, the ranks' agreement on the most ops any did, and a second
/// run that goes on from where this rank stopped until it has done as many.
/// Timing is the runner's own window (first op to last completion), not
/// the set-up around it.
fn measure(
    a: &BenchArgs,
    world: &World,
    spec: &WorkloadSpec,
    prep: &Prepared,
    resident_before: f64,
    stop: &AtomicBool,
) -> Result<Measured> {
    let ctl = RunControl {
        stop,
        on_interval: None,
    };
    let once = |s: &WorkloadSpec| -> Result<RunMetrics> {
        match run_once(
            s,
            prep,
            s.file_size,
            resident_before,
            RealEngines::shared(),
            &ctl,
        ) {
            Ok(m) => Ok(m),
            Err(BenchError::Partial { error, .. }) => Err((*error).into()),
            Err(e) => Err(e.into()),
        }
    };
    let first = once(spec)?;
    if !a.ranks.wearout {
        return Ok(Measured {
            metrics: first,
            stonewall: None,
        });
    }
    let at = first.window.map_or_else(std::time::Instant::now, |w| w.1);
    let point = (first.ops, first.bytes, at);
    let most = world.all_max_u64(first.ops);
    if most <= first.ops {
        return Ok(Measured {
            metrics: first,
            stonewall: Some(point),
        });
    }
    let mut rest = spec.clone();
    rest.stop = StopRule {
        ops: Some(most - first.ops),
        ..StopRule::default()
    };
    rest.ramp_ns = 0;
    if let Some(p) = rest.place.as_mut() {
        p.resume_ops = first.ops;
    }
    let second = once(&rest)?;
    Ok(Measured {
        metrics: iolab_bench::ranks::combine(first, second),
        stonewall: Some(point),
    })
}

/// Resident fraction of the bytes this rank reads or writes: its own file,
/// its segments of a shared file, or (strided: its transfers interleave
/// with the others' within pages) the whole shared file.
fn rank_residency(prep: &Prepared, place: &RankPlace) -> Result<f64> {
    let path: &Path = &prep.files[0].path;
    let ranges = match place.layout {
        Layout::Segmented => place.ranges(),
        _ => vec![(0, place.file_bytes())],
    };
    let (mut r, mut t) = (0u64, 0u64);
    for (off, len) in ranges {
        let x = iolab::cache::residency_range(path, off, len)
            .with_context(|| format!("mincore {}", path.display()))?;
        r += x.resident_pages;
        t += x.total_pages;
    }
    Ok(if t == 0 { 1.0 } else { r as f64 / t as f64 })
}

/// Rank 0: merge, print, write.
fn report_root(
    a: &BenchArgs,
    world: &World,
    spec: &WorkloadSpec,
    reports: &[RankReport],
    targets: Option<crate::output::flags::Targets>,
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
    let json = serde_json::to_string(&rec).context("encode the record")?;
    if let Some(mut t) = targets {
        if let Some(j) = t.jsonl.as_mut() {
            j.append_jsonl(format!("{json}\n").as_bytes())?;
        }
        if let Some(c) = t.csv.as_mut() {
            c.write_all_atomically(csv_rows(&agg, reports)?.as_bytes())?;
        }
    }
    if a.out.json {
        println!("{json}");
        return Ok(());
    }
    print!("{}", table(spec, &agg, reports, &world.library()));
    Ok(())
}

fn csv_rows(agg: &Aggregate, reports: &[RankReport]) -> Result<String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record([
        "rank",
        "host",
        "bytes",
        "ops",
        "mib_per_s",
        "p50_ns",
        "p99_ns",
        "resident_before",
        "resident_after",
    ])?;
    for r in reports {
        let l = &r.metrics.latency;
        w.write_record([
            r.rank.to_string(),
            r.host.clone(),
            r.metrics.bytes.to_string(),
            r.metrics.ops.to_string(),
            format!("{:.3}", r.metrics.mib_per_s),
            l.p50_ns.to_string(),
            l.p99_ns.to_string(),
            format!("{:.4}", r.resident_before),
            format!("{:.4}", r.resident_after),
        ])?;
    }
    w.write_record([
        "all".to_string(),
        String::new(),
        agg.bytes.to_string(),
        agg.ops.to_string(),
        format!("{:.3}", agg.mib_per_s),
        agg.latency.p50_ns.to_string(),
        agg.latency.p99_ns.to_string(),
        String::new(),
        format!("{:.4}", agg.max_resident_after),
    ])?;
    Ok(String::from_utf8(w.into_inner().context("csv")?)?)
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
