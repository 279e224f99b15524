//! Jobs that run at the same time, and fio's `group_reporting`.
//!
//! fio starts every job of a file at once, except that a job with
//! `stonewall` (or `wait_for_previous`) waits for all jobs before it to
//! end; `stonewall` also starts a new reporting group. So the jobs between
//! two stonewalls are one group that runs concurrently. With
//! `group_reporting`, a group's jobs are reported as one job: fio's first
//! job's name, the sums of their I/O, latency histograms merged.

use super::map::FioJob;
use hdrhistogram::Histogram;
use iolab_bench::metrics::{LatSplit, LatencySummary};
use iolab_bench::record::RunMetrics;
use iolab_bench::spec::OpMix;

/// One job's runs: its I/O, and the read-back of `verify`.
#[derive(Clone, Debug, Default)]
pub struct Run {
    /// The job's own run.
    pub run: RunMetrics,
    /// The verification pass (reported as reads).
    pub verify: Option<RunMetrics>,
}

/// The jobs split into batches that run at the same time: a new batch at
/// each `stonewall`. Indices into `jobs`.
pub fn batches(jobs: &[FioJob]) -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> = Vec::new();
    for (i, j) in jobs.iter().enumerate() {
        match out.last_mut() {
            Some(b) if !j.stonewall => b.push(i),
            _ => out.push(vec![i]),
        }
    }
    out
}

/// A run's latency per direction, from its split or (a one-direction job)
/// its whole histogram; `timed`: with slat and clat (empty if it has none).
fn split_of(job: &FioJob, run: &RunMetrics, timed: bool) -> Option<LatSplit> {
    let mut s = LatSplit::new(timed);
    if let Some(x) = &run.lat_split {
        for (a, b) in s.lat.iter_mut().zip(&x.lat) {
            let _ = a.add(b);
        }
        if let (Some(p), Some(q)) = (s.parts.as_mut(), x.parts.as_ref()) {
            for (a, b) in p.iter_mut().flatten().zip(q.iter().flatten()) {
                let _ = a.add(b);
            }
        }
        return Some(s);
    }
    let h = run.latency_hist.as_ref()?;
    let d = match job.spec.op {
        OpMix::Write => 1,
        _ => 0,
    };
    s.lat[d] = h.clone();
    Some(s)
}

/// Several histograms in one (None when none has any).
fn sum_hists<'a>(hs: impl Iterator<Item = Option<&'a Histogram<u64>>>) -> Option<Histogram<u64>> {
    hs.flatten().fold(None, |acc, h| {
        let mut acc = acc.unwrap_or_else(iolab_bench::metrics::new_histogram);
        let _ = acc.add(h);
        Some(acc)
    })
}

/// Adds what [`merge_runs`] does not sum itself of run `r` to `m`:
/// interval samples by position, the largest CPU (the windows overlap),
/// errors, bytes read, trims and depths.
fn add_run(m: &mut RunMetrics, r: &RunMetrics) {
    for (a, b) in m.intervals.iter_mut().zip(&r.intervals) {
        a.mib_per_s += b.mib_per_s;
        a.iops += b.iops;
    }
    let c = &r.cpu;
    let mc = &mut m.cpu;
    mc.user_pct = mc.user_pct.max(c.user_pct);
    mc.sys_pct = mc.sys_pct.max(c.sys_pct);
    mc.vol_csw = mc.vol_csw.max(c.vol_csw);
    mc.invol_csw = mc.invol_csw.max(c.invol_csw);
    mc.minor_faults = mc.minor_faults.max(c.minor_faults);
    mc.major_faults = mc.major_faults.max(c.major_faults);
    m.first_errors.extend(r.first_errors.iter().cloned());
    m.interrupted |= r.interrupted;
    m.read_bytes += r.read_bytes;
    m.trim_ops += r.trim_ops;
    m.trim_bytes += r.trim_bytes;
    m.depths.add(&r.depths);
}

/// Runs of jobs that ran at the same time, as one: I/O summed over the
/// longest of their times, histograms merged per direction, interval
/// samples summed by position. CPU is measured for the whole process over
/// each job's window, and those windows overlap: the largest is kept.
pub fn merge_runs(members: &[(&FioJob, &RunMetrics)]) -> RunMetrics {
    let (_, first) = members[0];
    let mut m = first.clone();
    let duration_ns = members
        .iter()
        .map(|(_, r)| r.duration_ns)
        .max()
        .unwrap_or(0);
    let mut hist = iolab_bench::metrics::new_histogram();
    let mut split: Option<LatSplit> = None;
    let timed = members
        .iter()
        .all(|(_, r)| r.lat_split.as_ref().is_some_and(|s| s.parts.is_some()));
    let (mut bytes, mut ops, mut reads, mut writes, mut errors) = (0, 0, 0, 0, 0);
    for (i, (j, r)) in members.iter().enumerate() {
        bytes += r.bytes;
        ops += r.ops;
        reads += r.read_ops;
        writes += r.write_ops;
        errors += r.errors;
        if let Some(h) = &r.latency_hist {
            let _ = hist.add(h);
        }
        if let Some(s) = split_of(j, r, timed) {
            match split.as_mut() {
                None => split = Some(s),
                Some(acc) => acc.add(&s),
            }
        }
        if i > 0 {
            add_run(&mut m, r);
        }
    }
    m.trim_hist = sum_hists(members.iter().map(|(_, r)| r.trim_hist.as_ref()));
    m.sync_hist = sum_hists(members.iter().map(|(_, r)| r.sync_hist.as_ref()));
    let secs = duration_ns.max(1) as f64 / 1e9;
    m.duration_ns = duration_ns;
    (m.bytes, m.ops, m.read_ops, m.write_ops, m.errors) = (bytes, ops, reads, writes, errors);
    m.mib_per_s = bytes as f64 / secs / (1 << 20) as f64;
    m.iops = ops as f64 / secs;
    m.cpu.cpu_ns_per_op = if ops > 0 {
        (m.cpu.user_pct + m.cpu.sys_pct) / 100.0 * duration_ns as f64 / ops as f64
    } else {
        0.0
    };
    m.latency = LatencySummary::of(&hist);
    m.latency_hist = Some(hist);
    m.lat_split = split;
    m
}

/// With `group_reporting`, each group of more than one job becomes one
/// result (the first job's name and options, `numjobs` summed, reads and
/// writes both reported if its jobs do both); other jobs are kept as they are.
pub fn report_groups(results: Vec<(FioJob, Run)>) -> Vec<(FioJob, Run)> {
    let mut out: Vec<(FioJob, Run)> = Vec::new();
    let mut i = 0;
    while i < results.len() {
        let g = results[i].0.groupid;
        let end = results[i..]
            .iter()
            .position(|(j, _)| j.groupid != g)
            .map_or(results.len(), |n| i + n);
        let members = &results[i..end];
        if members.len() > 1 && members.iter().any(|(j, _)| j.group_reporting) {
            out.push(merge_group(members));
        } else {
            out.extend(members.iter().cloned());
        }
        i = end;
    }
    out
}

/// One group's jobs as one.
fn merge_group(members: &[(FioJob, Run)]) -> (FioJob, Run) {
    let refs: Vec<(&FioJob, &RunMetrics)> = members.iter().map(|(j, r)| (j, &r.run)).collect();
    let run = merge_runs(&refs);
    let verified: Vec<(&FioJob, &RunMetrics)> = members
        .iter()
        .filter_map(|(j, r)| r.verify.as_ref().map(|v| (j, v)))
        .collect();
    let verify = (!verified.is_empty()).then(|| merge_runs(&verified));
    let mut job = members[0].0.clone();
    job.numjobs = members.iter().map(|(j, _)| j.numjobs).sum();
    job.group_reporting = true;
    if members.iter().any(|(j, _)| j.spec.op != job.spec.op) {
        let pct = (run.read_ops * 100).checked_div(run.ops).unwrap_or(50);
        job.spec.op = OpMix::Rw {
            read_pct: pct as u8,
        };
    }
    let mut names: Vec<&str> = members.iter().map(|(j, _)| j.name.as_str()).collect();
    names.dedup();
    job.notes.push(format!(
        "group_reporting: {} job(s) ({}) ran at the same time, reported as one",
        members.len(),
        names.join(", ")
    ));
    (job, Run { run, verify })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::map::map_all;
    use crate::parse::Reader;
    use std::path::Path;

    fn jobs(text: &str) -> Vec<FioJob> {
        let mut r = Reader::new();
        r.read_text(text, Path::new("j.fio"), 0).unwrap();
        map_all(&r.finish(), false).unwrap()
    }

    #[test]
    fn stonewalls_cut_batches() {
        let j = jobs("[a]\nfilename=/x\nsize=1m\n[b]\nfilename=/x\nsize=1m\n[c]\nfilename=/x\nsize=1m\nstonewall\n[d]\nfilename=/x\nsize=1m\n");
        assert_eq!(batches(&j), vec![vec![0, 1], vec![2, 3]]);
        assert_eq!(
            j.iter().map(|j| j.groupid).collect::<Vec<_>>(),
            vec![0, 0, 1, 1]
        );
    }

    #[test]
    fn group_reporting_merges_a_reader_and_a_writer() {
        let j = jobs("[global]\nfilename=/x\nsize=1m\ngroup_reporting\n[r]\nrw=read\n[w]\nrw=write\n[s]\nstonewall\n");
        let mk = |lat: u64, reads: u64, writes: u64, ms: u64| {
            let mut h = iolab_bench::metrics::new_histogram();
            h.record_n(lat, reads + writes).unwrap();
            RunMetrics {
                duration_ns: ms * 1_000_000,
                ops: reads + writes,
                read_ops: reads,
                write_ops: writes,
                bytes: (reads + writes) * 4096,
                read_bytes: reads * 4096,
                latency_hist: Some(h),
                ..RunMetrics::default()
            }
        };
        let res: Vec<(FioJob, Run)> = vec![
            (j[0].clone(), mk(1000, 100, 0, 50)),
            (j[1].clone(), mk(5000, 0, 30, 80)),
            (j[2].clone(), mk(7, 10, 0, 1)),
        ]
        .into_iter()
        .map(|(j, run)| (j, Run { run, verify: None }))
        .collect();
        let out = report_groups(res);
        assert_eq!(out.len(), 2);
        let (job, run) = &out[0];
        let run = &run.run;
        assert_eq!(run.read_bytes, 100 * 4096);
        assert_eq!((job.name.as_str(), job.numjobs), ("r", 2));
        assert!(matches!(job.spec.op, OpMix::Rw { read_pct: 76 }));
        assert_eq!(
            (run.read_ops, run.write_ops, run.duration_ns),
            (100, 30, 80_000_000)
        );
        let s = run.lat_split.as_ref().unwrap();
        assert_eq!((s.lat[0].len(), s.lat[1].len()), (100, 30));
        assert_eq!((s.lat[0].max(), s.lat[1].min()), (1000, 5000));
        assert_eq!(out[1].0.name, "s");
    }
}
