//! The workers' counts, merged into one run's metrics.

use super::threads::Collected;
use crate::metrics::{new_histogram, CpuUsage, LatencySummary};
use crate::record::RunMetrics;
use std::time::Instant;

/// Sums the workers' counts; the measured window runs from the earliest
/// worker's start of measurement to the latest completion.
pub(super) fn metrics(mut c: Collected, resident_before: f64, errors: Vec<String>) -> RunMetrics {
    let mut hist = new_histogram();
    let (mut ops, mut reads, mut writes, mut bytes, mut failed) = (0, 0, 0, 0, 0);
    let sqpoll_ns = c
        .outs
        .iter()
        .filter_map(|o| o.sqpoll_ns)
        .reduce(|a, b| a + b);
    // Every worker's syncs in one histogram (fsync=N / fdatasync=N runs).
    let syncs = c.outs.iter().filter_map(|o| o.syncs.as_ref()).fold(
        None,
        |acc: Option<hdrhistogram::Histogram<u64>>, h| {
            let mut acc = acc.unwrap_or_else(new_histogram);
            let _ = acc.add(h);
            Some(acc)
        },
    );
    let mut start: Option<Instant> = None;
    let mut end: Option<Instant> = None;
    for o in &c.outs {
        let _ = hist.add(&o.hist);
        ops += o.ops;
        reads += o.reads;
        writes += o.writes;
        bytes += o.bytes;
        failed += o.errors;
        start = Some(start.map_or(o.measure_start, |s| s.min(o.measure_start)));
        end = Some(end.map_or(o.end, |e| e.max(o.end)));
    }
    let duration_ns = match (start, end) {
        (Some(s), Some(e)) => e.saturating_duration_since(s).as_nanos() as u64,
        _ => 0,
    };
    let secs = duration_ns.max(1) as f64 / 1e9;
    RunMetrics {
        duration_ns,
        bytes,
        ops,
        read_ops: reads,
        write_ops: writes,
        errors: failed,
        first_errors: errors,
        mib_per_s: bytes as f64 / secs / (1 << 20) as f64,
        iops: ops as f64 / secs,
        latency: LatencySummary::of(&hist),
        latency_hist: Some(hist),
        cpu: CpuUsage {
            split: crate::cpu::split(
                &c.outs.iter().map(|o| o.cpu).collect::<Vec<_>>(),
                &c.usage,
                duration_ns,
            ),
            spin_waits: sqpoll_ns.map(|_| c.outs.iter().map(|o| o.spin_waits).sum()),
            ..CpuUsage::from_usage(&c.usage, duration_ns, ops, sqpoll_ns)
        },
        resident_before,
        intervals: c.merger.finish(),
        interrupted: false,
        mem: c.outs.iter().map(|o| o.mem).reduce(|a, b| a.merge(&b)),
        device: None,
        lat_split: c
            .outs
            .iter()
            .filter_map(|o| o.split.as_ref())
            .fold(None, |acc, s| {
                let mut acc =
                    acc.unwrap_or_else(|| crate::metrics::LatSplit::new(s.parts.is_some()));
                acc.add(s);
                Some(acc)
            }),
        window: start.zip(end),
        sync_latency: syncs.as_ref().map(LatencySummary::of),
        sync_hist: syncs,
        read_bytes: c.outs.iter().map(|o| o.read_bytes).sum(),
        trim_ops: c
            .outs
            .iter()
            .filter_map(|o| o.trims.as_ref())
            .map(|t| t.1)
            .sum(),
        trim_bytes: c
            .outs
            .iter()
            .filter_map(|o| o.trims.as_ref())
            .map(|t| t.2)
            .sum(),
        trim_hist: c
            .outs
            .iter()
            .filter_map(|o| o.trims.as_ref())
            .fold(None, |acc, t| {
                let mut acc = acc.unwrap_or_else(new_histogram);
                let _ = acc.add(&t.0);
                Some(acc)
            }),
        depths: c
            .outs
            .iter()
            .fold(Default::default(), |mut acc: crate::depths::Depths, o| {
                acc.add(&o.depths);
                acc
            }),
        latency_depth: c.outs.iter().find_map(|o| o.latency_depth),
        oplog: merged_oplog(&mut c.outs),
        ..RunMetrics::default()
    }
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
