//! Jobs that run at the same time, and fio's `group_reporting`.
//!
//! fio starts every job of a file at once, except that a job with
//! `stonewall` (or `wait_for_previous`) waits for all jobs before it to
//! end; `stonewall` also starts a new reporting group. So the jobs between
//! two stonewalls are one group that runs concurrently. With
//! `group_reporting`, a group's jobs are reported as one job: fio's first
//! job's name, the sums of their I/O, latency histograms merged.

use super::map::FioJob;
use iolab_bench::metrics::{LatSplit, LatencySummary};
use iolab_bench::record::RunMetrics;
use iolab_bench::spec::OpMix;

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
/// its whole histogram.
fn split_of(job: &FioJob, run: &RunMetrics) -> Option<LatSplit> {
    if let Some(s) = &run.lat_split {
        return Some(s.clone());
    }
    let h = run.latency_hist.as_ref()?;
    let mut s = LatSplit::new(false);
    let d = match job.spec.op {
        OpMix::Write => 1,
        _ => 0,
    };
    s.lat[d] = h.clone();
    Some(s)
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
        if let Some(s) = split_of(j, r) {
            match split.as_mut() {
                None => split = Some(s),
                Some(acc) => acc.add(&s),
            }
        }
        if i > 0 {
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
        }
    }
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
pub fn report_groups(results: Vec<(FioJob, RunMetrics)>) -> Vec<(FioJob, RunMetrics)> {
    let mut out: Vec<(FioJob, RunMetrics)> = Vec::new();
    let mut i = 0;
    while i < results.len() {
        let g = results[i].0.groupid;
        let end = results[i..]
            .iter()
            .position(|(j, _)| j.groupid != g)
            .map_or(results.len(), |n| i + n);
        let members = &results[i..end];
        if members.len() > 1 && members.iter().any(|(j, _)| j.group_reporting) {
            let refs: Vec<(&FioJob, &RunMetrics)> = members.iter().map(|(j, r)| (j, r)).collect();
            let run = merge_runs(&refs);
            let mut job = members[0].0.clone();
            job.numjobs = members.iter().map(|(j, _)| j.numjobs).sum();
            job.group_reporting = true;
            if members.iter().any(|(j, _)| j.spec.op != job.spec.op) {
                let pct = (run.read_ops * 100).checked_div(run.ops).unwrap_or(50);
                job.spec.op = OpMix::Rw {
                    read_pct: pct as u8,
                };
            }
            job.notes.push(format!(
                "group_reporting: jobs {} ran at the same time, reported as one",
                members
                    .iter()
                    .map(|(j, _)| j.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
            out.push((job, run));
        } else {
            out.extend(members.iter().cloned());
        }
        i = end;
    }
    out
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
                latency_hist: Some(h),
                ..RunMetrics::default()
            }
        };
        let res = vec![
            (j[0].clone(), mk(1000, 100, 0, 50)),
            (j[1].clone(), mk(5000, 0, 30, 80)),
            (j[2].clone(), mk(7, 10, 0, 1)),
        ];
        let out = report_groups(res);
        assert_eq!(out.len(), 2);
        let (job, run) = &out[0];
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
