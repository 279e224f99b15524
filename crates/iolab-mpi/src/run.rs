//! One rank's part of a multi-rank measurement, IOR's phases: prepare (rank 0
//! makes a shared file first), set the cache state, barrier, measure,
//! (fsync), barrier; the report travels to rank 0. Used by
//! `mpirun iolab bench` and by the lab's `mt-suite` under `mpirun`.
//!
//! Times are the runner's own measured window (first op to last
//! completion) placed on rank 0's clock, not the set-up around it.

use super::aggregate::{encode_histogram, RankReport};
use super::wearout::{combine, StonewallPoint};
use super::world::{realtime_ns, World};
use iolab_bench::error::{BenchError, Result};
use iolab_bench::measure::{self, Cache, Measure, NoHooks};
use iolab_bench::prepare::{self, Prepared};
use iolab_bench::rank_place::{Layout, RankPlace};
use iolab_bench::record::RunMetrics;
use iolab_bench::spec::{StopRule, WorkloadSpec};
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

/// How a rank runs, beyond its spec.
pub struct RankRun<'a> {
    /// The ranks.
    pub world: &'a World,
    /// Ctrl-C.
    pub stop: &'a AtomicBool,
    /// `--wearout`: after the deadline, go on to the busiest rank's ops.
    pub wearout: bool,
    /// `--fsync-on-close`: fsync written files inside the window.
    pub fsync_on_close: bool,
}

/// Runs this rank's part of `spec` (its `place` set); `prepare` makes or
/// checks its files. Every rank must call it with the same spec but for
/// its place and file.
pub fn run_rank(
    r: &RankRun,
    spec: &WorkloadSpec,
    prepare: &mut dyn FnMut(&WorkloadSpec) -> Result<Prepared>,
) -> Result<RankReport> {
    let world = r.world;
    let place = spec
        .place
        .ok_or_else(|| BenchError::Usage("a rank's spec needs its place".into()))?;
    let prep = prepare_files(world, place.layout.shared(), spec, prepare)?;
    prepare::set_cache(spec, &prep, spec.file_size)?;
    // Every rank has evicted (or warmed) before any rank measures.
    world.barrier();
    let resident_before = rank_residency(&prep, &place)?;
    let clock = RankClock::new(world);
    world.barrier();
    let measured = measure(r, spec, &prep, resident_before)?;
    let (mut m, stonewall) = (measured.metrics, measured.stonewall);
    let (win_start, win_end) = m.window.unwrap_or_else(|| {
        let t = Instant::now();
        (t, t)
    });
    let start_ns = clock.at(win_start);
    let mut end_ns = clock.at(win_end);
    if r.fsync_on_close && spec.op.writes() {
        fsync_files(&prep)?;
        end_ns = clock.at(Instant::now());
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

/// Makes or checks this rank's files. A shared file is made once, by rank
/// 0, before the others open it (the ranks meet in between).
fn prepare_files(
    world: &World,
    shared: bool,
    spec: &WorkloadSpec,
    prepare: &mut dyn FnMut(&WorkloadSpec) -> Result<Prepared>,
) -> Result<Prepared> {
    if !shared {
        return prepare(spec);
    }
    let p = if world.is_root() {
        Some(prepare(spec)?)
    } else {
        None
    };
    world.barrier();
    match p {
        Some(p) => Ok(p),
        None => prepare(spec),
    }
}

/// `--fsync-on-close`: fsyncs every file this rank wrote.
fn fsync_files(prep: &Prepared) -> Result<()> {
    for f in &prep.files {
        std::fs::OpenOptions::new()
            .write(true)
            .open(&f.path)
            .and_then(|h| h.sync_all())
            .map_err(|e| iolab::Error::io(format!("fsync {}", f.path.display()), e))?;
    }
    Ok(())
}

/// Sends this rank's report to rank 0: every report there, in rank order;
/// None on the other ranks.
pub fn gather(world: &World, report: &RankReport) -> Result<Option<Vec<RankReport>>> {
    let bytes = serde_json::to_vec(report)
        .map_err(|e| BenchError::Usage(format!("encode rank report: {e}")))?;
    match world.gather_bytes(&bytes) {
        Some(all) => all
            .iter()
            .map(|b| serde_json::from_slice(b))
            .collect::<std::result::Result<Vec<RankReport>, _>>()
            .map(Some)
            .map_err(|e| BenchError::Usage(format!("decode rank reports: {e}"))),
        None => Ok(None),
    }
}

/// Instants of this rank placed on rank 0's wall clock: one reading of
/// both clocks after the offset to rank 0 is measured.
struct RankClock {
    instant: Instant,
    realtime_ns: i64,
}

impl RankClock {
    fn new(world: &World) -> RankClock {
        let offset = world.clock_offset_ns();
        RankClock {
            instant: Instant::now(),
            realtime_ns: realtime_ns() + offset,
        }
    }

    /// `t` in ns on rank 0's clock.
    fn at(&self, t: Instant) -> i64 {
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
    stonewall: Option<(u64, u64, Instant)>,
}

/// The measured phase of one rank: one run, or with `--wearout` the run to
/// the deadline, the ranks' agreement on the most ops any did, and a second
/// run that goes on from where this rank stopped until it has done as many.
fn measure(
    r: &RankRun,
    spec: &WorkloadSpec,
    prep: &Prepared,
    resident_before: f64,
) -> Result<Measured> {
    let meet = || r.world.barrier();
    // `together`: every rank makes this run, so they start it together; the
    // wear-out runs are made only by the ranks behind, each on its own.
    let once = |s: &WorkloadSpec, together: bool| -> Result<RunMetrics> {
        let m = Measure {
            cache: Cache::Given(resident_before),
            before_start: together.then_some(&meet as &dyn Fn()),
            ..Measure::new(r.stop, 1)
        };
        measure::runs(s, prep, &m, &mut NoHooks)?.one()
    };
    let first = once(spec, true)?;
    if !r.wearout {
        return Ok(Measured {
            metrics: first,
            stonewall: None,
        });
    }
    let at = first.window.map_or_else(Instant::now, |w| w.1);
    let point = (first.ops, first.bytes, at);
    let most = r.world.all_max_u64(first.ops);
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
    let second = once(&rest, false)?;
    Ok(Measured {
        metrics: combine(first, second),
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
        let x = iolab::cache::residency_range(path, off, len)?;
        r += x.resident_pages;
        t += x.total_pages;
    }
    Ok(if t == 0 { 1.0 } else { r as f64 / t as f64 })
}
