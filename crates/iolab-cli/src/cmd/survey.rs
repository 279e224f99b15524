//! The first command to try: a survey of the storage under a directory, in
//! under a minute. Sequential 1 MiB reads, random 4 KiB reads one at a time and 32
//! in flight, cold and warm page cache, with the engines that suit each;
//! then one table and a few lines of advice.

use crate::export::table::{count, ns};
use crate::session::{temp_path, Session};
use crate::sweep::execute;
use anyhow::Result;
use iolab::engine::EngineKind;
use iolab_bench::prepare::human;
use iolab_bench::record::{BenchRecord, LATENCY_DEFINITION};
use iolab_bench::spec::{AccessPattern, CacheMode, StopRule, WorkloadSpec};
use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// Arguments of the survey.
#[derive(clap::Args, Debug, Clone)]
pub struct SurveyArgs {
    /// Directory whose storage to measure (a temporary file is made there and removed).
    #[arg(long, default_value = ".")]
    pub dir: PathBuf,
    /// Size of the temporary file (default: 1 GiB, less if free space is short).
    #[arg(long, value_parser = crate::parse::size)]
    pub size: Option<u64>,
    /// Time per measurement (default 4s).
    #[arg(long, value_parser = crate::parse::duration)]
    pub time: Option<std::time::Duration>,
    /// Print one JSON document on stdout instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// Bad input found before anything is made or measured (exit 2).
pub(crate) fn check(a: &SurveyArgs) -> Result<()> {
    if a.time.is_some_and(|t| t.is_zero()) {
        return Err(super::usage(
            "--time 0s: give a positive time per measurement (e.g. --time 2s)",
        ));
    }
    if a.size == Some(0) {
        return Err(super::usage(
            "--size 0: give a positive file size (e.g. --size 256m)",
        ));
    }
    temp_path(&a.dir)?;
    Ok(())
}

/// Which question a configuration answers.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Group {
    SeqCold,
    SeqWarm,
    Rand1Cold,
    Rand32Cold,
    RandWarm,
}

impl Group {
    fn title(self) -> &'static str {
        match self {
            Group::SeqCold => "sequential 1 MiB, cold",
            Group::SeqWarm => "sequential 1 MiB, warm",
            Group::Rand1Cold => "random 4 KiB depth 1, cold",
            Group::Rand32Cold => "random 4 KiB depth 32, cold",
            Group::RandWarm => "random 4 KiB, warm",
        }
    }
}

struct Plan {
    group: Group,
    engine: EngineKind,
    pattern: AccessPattern,
    bs: u64,
    qd: u32,
    direct: bool,
    cache: CacheMode,
}

fn plans() -> Vec<Plan> {
    use AccessPattern::*;
    use CacheMode::*;
    use EngineKind::*;
    let p = |group, engine, pattern, bs, qd, direct, cache| Plan {
        group,
        engine,
        pattern,
        bs,
        qd,
        direct,
        cache,
    };
    const M: u64 = 1 << 20;
    const K4: u64 = 4096;
    vec![
        p(Group::SeqCold, Pread, Seq, M, 1, false, Cold),
        p(Group::SeqCold, Pread, Seq, M, 1, true, Cold),
        p(Group::SeqCold, Uring, Seq, M, 4, true, Cold),
        p(Group::SeqWarm, Pread, Seq, M, 1, false, Warm),
        p(Group::SeqWarm, Mmap, Seq, M, 1, false, Warm),
        p(Group::Rand1Cold, Pread, Rand, K4, 1, true, Cold),
        p(Group::Rand1Cold, Pread, Rand, K4, 1, false, Cold),
        p(Group::Rand32Cold, Uring, Rand, K4, 32, true, Cold),
        p(Group::RandWarm, Pread, Rand, K4, 1, false, Warm),
        p(Group::RandWarm, Mmap, Rand, K4, 1, false, Warm),
        p(Group::RandWarm, Uring, Rand, K4, 32, false, Warm),
    ]
}

/// What a survey with the default flags costs, for the first-contact usage.
pub struct Cost {
    /// Measurements it makes.
    pub measurements: usize,
    /// Seconds they take at most (each stops at its time, some sooner).
    pub max_secs: u64,
    /// Size of the temporary test file (less where free space is short).
    pub file_bytes: u64,
}

/// The default survey's cost.
pub fn cost() -> Cost {
    let n = plans().len();
    Cost {
        measurements: n,
        max_secs: n as u64 * DEFAULT_TIME_NS / 1_000_000_000,
        file_bytes: DEFAULT_SIZE,
    }
}

/// Time per measurement without --time.
const DEFAULT_TIME_NS: u64 = 4_000_000_000;
/// The test file's size without --size (when free space allows).
const DEFAULT_SIZE: u64 = 1 << 30;

fn survey_size(dir: &Path, asked: Option<u64>) -> Result<u64> {
    let free = iolab::file::free_space(dir)?;
    if let Some(s) = asked {
        if s > free {
            return Err(super::usage(format!(
                "--size {}: {} has only {} free",
                human(s),
                dir.display(),
                human(free)
            )));
        }
        return Ok(s);
    }
    // 1 GiB, but never more than a quarter of the free space.
    let s = DEFAULT_SIZE.min(free / 4) / (1 << 20) * (1 << 20);
    if s < 64 << 20 {
        return Err(super::usage(format!(
            "--dir {}: only {} free; the survey needs at least 256 MiB",
            dir.display(),
            human(free)
        )));
    }
    Ok(s)
}

/// A buffered cold random run reads blocks with replacement: left to run
/// for its time it would read pages it brought in itself. Cap its ops so it
/// touches at most a few percent of the file (one page per op: the runner
/// sets POSIX_FADV_RANDOM), so cold stays cold.
fn stay_cold(mut s: WorkloadSpec) -> WorkloadSpec {
    if let Some(n) = iolab_bench::residency::cold_ops_limit(&s) {
        s.stop.ops = Some(s.stop.ops.map_or(n, |o| o.min(n)));
    }
    s
}

/// The survey's configurations for a `size`-byte `file`, `time_ns` each.
fn survey_specs(plans: &[Plan], file: &Path, size: u64, time: u64) -> Vec<WorkloadSpec> {
    plans
        .iter()
        .map(|p| WorkloadSpec {
            engine: p.engine,
            pattern: p.pattern,
            bs: p.bs,
            qd: p.qd,
            file: file.to_path_buf(),
            file_size: size,
            direct: p.direct,
            cache: p.cache,
            stop: StopRule {
                // A cold sequential run reads the file once: a second pass
                // would come from the page cache. Everything else runs for
                // the time given.
                bytes: (p.pattern == AccessPattern::Seq && p.cache == CacheMode::Cold)
                    .then_some(size),
                ops: None,
                time_ns: Some(time),
            },
            ..WorkloadSpec::default()
        })
        .map(stay_cold)
        .collect()
}

/// Runs the survey.
pub fn run(a: &SurveyArgs, stop: &AtomicBool) -> Result<i32> {
    check(a)?;
    let file = temp_path(&a.dir)?;
    crate::work_dir::ensure("--dir", &a.dir)?;
    let size = survey_size(&a.dir, a.size)?;
    let time = a
        .time
        .map(|t| t.as_nanos() as u64)
        .unwrap_or(DEFAULT_TIME_NS);
    let plans = plans();
    let specs = survey_specs(&plans, &file, size, time);
    eprintln!(
        "iolab survey of {} ({} test file, {} measurements of up to {:.1} s; Ctrl-C stops early)",
        a.dir.display(),
        human(size),
        specs.len(),
        time as f64 / 1e9
    );
    let ses = Session {
        stop,
        repeat: 1,
        size_given: true,
        overwrite: false,
        live: false,
        waker: None,
    };
    let mut exporters = crate::export::Exporters::default();
    if a.json {
        exporters.push(Box::new(crate::export::json::Json::new(
            iolab_bench::record::SCHEMA_VERSION,
        )));
    }
    let (recs, failed) = execute(&specs, &ses, true, &mut exporters, |_| {})?;
    if let Some(e) = failed {
        return Err(e.into());
    }
    if !a.json {
        let groups: Vec<Group> = plans.iter().map(|p| p.group).collect();
        crate::export::stdout(&render(&recs, &groups))?;
    }
    Ok(if stop.load(Ordering::Relaxed) { 130 } else { 0 })
}

fn engine_desc(r: &BenchRecord) -> String {
    let s = &r.spec;
    let mut d = s.engine.to_string();
    if !s.engine.is_sync() {
        let _ = write!(d, " depth {}", s.qd);
    }
    d.push_str(if s.direct { ", O_DIRECT" } else { ", buffered" });
    d
}

// Long on purpose: the survey's text, section by section, as printed.
fn render(recs: &[BenchRecord], groups: &[Group]) -> String {
    let mut o = String::new();
    if let Some(r) = recs.first() {
        let e = &r.env;
        let _ = writeln!(
            o,
            "\nstorage: {} on {} ({}), scheduler {}, kernel {}, {} cores, {} RAM",
            e.fs_type.as_deref().unwrap_or("?"),
            e.device.as_deref().unwrap_or("?"),
            e.device_model.as_deref().unwrap_or("?"),
            e.scheduler.as_deref().unwrap_or("?"),
            e.kernel,
            e.cores,
            human(e.memory_bytes)
        );
    }
    let _ = writeln!(
        o,
        "\n{:<28} {:<26} {:>9} {:>10} {:>10} {:>10} {:>6}",
        "workload", "engine", "MiB/s", "IOPS", "p50", "p99", "cpu%"
    );
    let mut unheld = 0;
    for (r, g) in recs.iter().zip(groups) {
        let Some(m) = r.median_run() else { continue };
        let title = if m.cache_held == Some(false) {
            unheld += 1;
            format!("{} *", g.title())
        } else {
            g.title().to_string()
        };
        let _ = writeln!(
            o,
            "{:<28} {:<26} {:>9.1} {:>10} {:>10} {:>10} {:>6.1}",
            title,
            engine_desc(r),
            m.mib_per_s,
            count(m.iops),
            ns(m.latency.p50_ns as f64),
            ns(m.latency.p99_ns as f64),
            m.cpu.user_pct + m.cpu.sys_pct
        );
    }
    if unheld > 0 {
        let _ = writeln!(
            o,
            "* the page cache did not stay as asked (a cold run ended more than {:.0} % resident, or a warm one lost its pages): shown, but no advice is drawn from it",
            iolab_bench::residency::COLD_MAX_RESIDENT_AFTER * 100.0
        );
    }
    let _ = writeln!(o, "{LATENCY_DEFINITION}.\n\nadvice:");
    let best = |g: Group| {
        recs.iter()
            .zip(groups)
            .filter(|(_, x)| **x == g)
            .filter_map(|(r, _)| r.median_run().map(|m| (r, m)))
            // Advice only from runs whose cache state held to the end.
            .filter(|(_, m)| m.cache_held != Some(false))
            .max_by(|a, b| a.1.mib_per_s.total_cmp(&b.1.mib_per_s))
    };
    // In the table's unit.
    let gbs = |m: f64| format!("{m:.0} MiB/s");
    if let Some((r, m)) = best(Group::SeqCold) {
        let _ = writeln!(
            o,
            "- sequential reads from the device: {}, 1 MiB blocks — {}",
            engine_desc(r),
            gbs(m.mib_per_s)
        );
    }
    if let Some((r, m)) = best(Group::SeqWarm) {
        let _ = writeln!(
            o,
            "- sequential reads of cached data: {} — {} (memory copy speed, not the device)",
            engine_desc(r),
            gbs(m.mib_per_s)
        );
    }
    let r1 = best(Group::Rand1Cold);
    let r32 = best(Group::Rand32Cold);
    if let Some((r, m)) = r1 {
        let _ = writeln!(
            o,
            "- random 4 KiB reads one at a time: {} — {} IOPS, p99 {}: the device's latency floor",
            engine_desc(r),
            count(m.iops),
            ns(m.latency.p99_ns as f64)
        );
    }
    if let (Some((r, m)), Some((_, m1))) = (r32, r1) {
        let _ = writeln!(
            o,
            "- random 4 KiB reads with many in flight: {} — {} IOPS, {:.1}x depth 1: keep requests queued (io_uring, or threads)",
            engine_desc(r),
            count(m.iops),
            m.iops / m1.iops.max(1.0)
        );
    }
    if let Some((r, m)) = best(Group::RandWarm) {
        let _ = writeln!(
            o,
            "- random 4 KiB reads of cached data: {} — {} IOPS, p50 {}",
            engine_desc(r),
            count(m.iops),
            ns(m.latency.p50_ns as f64)
        );
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_bench::env::Environment;
    use iolab_bench::record::RunMetrics;

    #[test]
    fn buffered_cold_random_runs_are_sized_to_stay_cold() {
        let size = 1u64 << 30;
        let specs = survey_specs(&plans(), Path::new("/x"), size, 60_000_000_000);
        let mut capped = 0;
        for s in &specs {
            if s.cache == CacheMode::Cold && !s.direct && s.pattern != AccessPattern::Seq {
                // However fast the device, the run cannot touch more than
                // the cold threshold of the file.
                let ops = s
                    .stop
                    .ops
                    .expect("a cold buffered random run has an op limit");
                assert!(
                    (ops * s.bs) as f64
                        <= iolab_bench::residency::COLD_MAX_RESIDENT_AFTER * size as f64,
                    "{}: {ops} ops",
                    s.label()
                );
                capped += 1;
            }
        }
        assert!(capped >= 1);
    }

    #[test]
    fn no_advice_from_a_run_whose_cache_did_not_hold() {
        let specs = survey_specs(&plans(), Path::new("/x"), 1 << 30, 1_000_000_000);
        let groups: Vec<Group> = plans().iter().map(|p| p.group).collect();
        let recs: Vec<BenchRecord> = specs
            .iter()
            .map(|s| {
                // The buffered runs read from memory after all: faster.
                let m = RunMetrics {
                    iops: if s.direct { 1000.0 } else { 10_000.0 },
                    mib_per_s: 4.0,
                    resident_after: 0.3,
                    cache_held: iolab_bench::residency::held(s, 0.3, 1 << 20),
                    ..Default::default()
                };
                BenchRecord::new(s.clone(), Environment::default(), 0, vec![m])
            })
            .collect();
        let text = render(&recs, &groups);
        // The latency floor comes from the O_DIRECT run, whose cache held,
        // not from the faster buffered run that read from memory.
        assert!(
            text.contains("one at a time: pread, O_DIRECT — 1,000 IOPS"),
            "{text}"
        );
        assert!(text.contains("did not stay as asked"), "{text}");
        assert!(text.contains("random 4 KiB depth 1, cold *"), "{text}");
        // No warm advice: every warm run lost its pages here.
        assert!(!text.contains("of cached data"), "{text}");
    }
}
