//! The workers' counts, merged into one run's metrics.

use super::threads::Collected;
use crate::metrics::{new_histogram, CpuUsage, LatencySummary};
use crate::record::RunMetrics;
use std::time::Instant;

/// Sums the workers' counts; the measured window runs from the earliest
/// worker's start of measurement to the latest completion.
pub(super) fn metrics(mut c: Collected, resident_before: f64, errors: Vec<String>) -> RunMetrics {
    let t = Totals::of(&c.outs);
    let duration_ns = match t.window {
        Some((s, e)) => e.saturating_duration_since(s).as_nanos() as u64,
        None => 0,
    };
    let secs = duration_ns.max(1) as f64 / 1e9;
    let sqpoll_ns = c
        .outs
        .iter()
        .filter_map(|o| o.sqpoll_ns)
        .reduce(|a, b| a + b);
    // Every worker's syncs in one histogram (fsync=N / fdatasync=N runs).
    let syncs = sum_hists(c.outs.iter().filter_map(|o| o.syncs.as_ref()));
    let trims = || c.outs.iter().filter_map(|o| o.trims.as_ref());
    RunMetrics {
        duration_ns,
        bytes: t.bytes,
        ops: t.ops,
        read_ops: t.reads,
        write_ops: t.writes,
        errors: t.failed,
        first_errors: errors,
        mib_per_s: t.bytes as f64 / secs / (1 << 20) as f64,
        iops: t.ops as f64 / secs,
        latency: LatencySummary::of(&t.hist),
        latency_hist: Some(t.hist),
        cpu: CpuUsage {
            split: crate::cpu::split(
                &c.outs.iter().map(|o| o.cpu).collect::<Vec<_>>(),
                &c.usage,
                duration_ns,
            ),
            spin_waits: sqpoll_ns.map(|_| c.outs.iter().map(|o| o.spin_waits).sum()),
            ..CpuUsage::from_usage(&c.usage, duration_ns, t.ops, sqpoll_ns)
        },
        resident_before,
        intervals: c.merger.finish(),
        interrupted: false,
        mem: c.outs.iter().map(|o| o.mem).reduce(|a, b| a.merge(&b)),
        device: None,
        lat_split: lat_split(&c.outs),
        window: t.window,
        sync_latency: syncs.as_ref().map(LatencySummary::of),
        sync_hist: syncs,
        read_bytes: c.outs.iter().map(|o| o.read_bytes).sum(),
        trim_ops: trims().map(|t| t.1).sum(),
        trim_bytes: trims().map(|t| t.2).sum(),
        trim_hist: sum_hists(trims().map(|t| &t.0)),
        depths: c.outs.iter().fold(Default::default(), |mut acc, o| {
            crate::depths::Depths::add(&mut acc, &o.depths);
            acc
        }),
        latency_depth: c.outs.iter().find_map(|o| o.latency_depth),
        oplog: merged_oplog(&mut c.outs),
        ..RunMetrics::default()
    }
}

/// The workers' counts and latencies summed, and the measured window.
struct Totals {
    hist: hdrhistogram::Histogram<u64>,
    ops: u64,
    reads: u64,
    writes: u64,
    bytes: u64,
    failed: u64,
    window: Option<(Instant, Instant)>,
}

impl Totals {
    fn of(outs: &[super::worker::WorkerOut]) -> Totals {
        let mut t = Totals {
            hist: new_histogram(),
            ops: 0,
            reads: 0,
            writes: 0,
            bytes: 0,
            failed: 0,
            window: None,
        };
        for o in outs {
            let _ = t.hist.add(&o.hist);
            t.ops += o.ops;
            t.reads += o.reads;
            t.writes += o.writes;
            t.bytes += o.bytes;
            t.failed += o.errors;
            t.window = Some(t.window.map_or((o.measure_start, o.end), |(s, e)| {
                (s.min(o.measure_start), e.max(o.end))
            }));
        }
        t
    }
}

/// Histograms summed into one; None when there are none.
fn sum_hists<'a>(
    hs: impl Iterator<Item = &'a hdrhistogram::Histogram<u64>>,
) -> Option<hdrhistogram::Histogram<u64>> {
    hs.fold(None, |acc, h| {
        let mut acc = acc.unwrap_or_else(new_histogram);
        let _ = acc.add(h);
        Some(acc)
    })
}

/// The workers' latency splits (submission, completion) summed.
fn lat_split(outs: &[super::worker::WorkerOut]) -> Option<crate::metrics::LatSplit> {
    outs.iter()
        .filter_map(|o| o.split.as_ref())
        .fold(None, |acc, s| {
            let mut acc = acc.unwrap_or_else(|| crate::metrics::LatSplit::new(s.parts.is_some()));
            acc.add(s);
            Some(acc)
        })
}

/// Every worker's logged I/Os in one list, by completion time.
fn merged_oplog(outs: &mut [super::worker::WorkerOut]) -> Option<Vec<crate::oplog::OpRecord>> {
    let mut all: Option<Vec<crate::oplog::OpRecord>> = None;
    for o in outs.iter_mut() {
        if let Some(l) = o.oplog.take() {
            all.get_or_insert_with(Vec::new).extend(l);
        }
    }
    if let Some(v) = all.as_mut() {
        v.sort_by_key(|r| r.t_ns);
    }
    all
}
