//! fio's bw/lat/iops log files (`write_bw_log`, `write_lat_log`,
//! `write_iops_log` with `log_avg_msec`): one line per averaging period,
//! `time (ms), value, direction (0 read, 1 write), block size, offset`, as
//! fio writes averaged logs (block size and offset 0). Values: bw in KiB/s,
//! latency in ns (the period's mean), IOPS. File names follow fio:
//! `PREFIX_bw.1.log`, `PREFIX_lat.1.log` (and `_clat` for synchronous
//! engines, whose clat is the same time), `PREFIX_iops.1.log`.
//!
//! iolab measures a job's threads together, so a job with `numjobs` writes
//! one log (`.1`) for all of them. Only the contents are made here; the
//! command writes them through its one output writer.

use super::json::{share, sync_engine, JobResult};
use iolab_bench::spec::OpMix;
use std::fmt::Write;

/// One log file: its name (relative, as fio names it) and contents.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogFile {
    /// File name.
    pub name: String,
    /// Contents.
    pub text: String,
}

fn directions(op: OpMix) -> Vec<(bool, u8)> {
    match op {
        OpMix::Read => vec![(true, 0)],
        OpMix::Write => vec![(false, 1)],
        OpMix::Rw { .. } => vec![(true, 0), (false, 1)],
    }
}

/// The log files one job asks for.
pub fn logs(r: &JobResult) -> Vec<LogFile> {
    let job = r.job;
    let run = r.run;
    let dirs = directions(job.spec.op);
    let series = |value: &dyn Fn(&iolab_bench::record::IntervalSample, f64) -> f64| -> String {
        let mut s = String::new();
        for iv in &run.intervals {
            for &(read, d) in &dirs {
                let sh = share(run, read);
                let _ = writeln!(
                    s,
                    "{}, {}, {d}, 0, 0",
                    iv.t_ms,
                    value(iv, sh).round() as u64
                );
            }
        }
        s
    };
    let mut out = Vec::new();
    if let Some(p) = &job.logs.bw {
        out.push(LogFile {
            name: format!("{p}_bw.1.log"),
            text: series(&|iv, sh| iv.mib_per_s * 1024.0 * sh),
        });
    }
    if let Some(p) = &job.logs.iops {
        out.push(LogFile {
            name: format!("{p}_iops.1.log"),
            text: series(&|iv, sh| iv.iops * sh),
        });
    }
    if let Some(p) = &job.logs.lat {
        let text = series(&|iv, _| iv.mean_ns);
        if sync_engine(job) {
            out.push(LogFile {
                name: format!("{p}_clat.1.log"),
                text: text.clone(),
            });
        }
        out.push(LogFile {
            name: format!("{p}_lat.1.log"),
            text,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::tests::{job, run_with};

    #[test]
    fn logs_are_in_fio_s_format_and_names() {
        let j = job("[r]\nfilename=/x\nsize=1m\nwrite_bw_log=r\nwrite_lat_log\nwrite_iops_log=io\nlog_avg_msec=500\n");
        let run = run_with(&[1000], 1024, 0);
        let l = logs(&JobResult {
            job: &j,
            run: &run,
            waker: None,
        });
        let names: Vec<&str> = l.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(
            names,
            ["r_bw.1.log", "io_iops.1.log", "r_clat.1.log", "r_lat.1.log"]
        );
        assert_eq!(l[0].text, "500, 1024, 0, 0, 0\n1000, 3072, 0, 0, 0\n");
        assert_eq!(l[1].text, "500, 256, 0, 0, 0\n1000, 768, 0, 0, 0\n");
        assert_eq!(l[3].text, "500, 1000, 0, 0, 0\n1000, 3000, 0, 0, 0\n");
        // A mixed job logs each direction's share.
        let j = job("[m]\nfilename=/x\nsize=1m\nrw=randrw\nwrite_bw_log=m\nlog_avg_msec=500\n");
        let run = run_with(&[1000], 300, 100);
        let l = logs(&JobResult {
            job: &j,
            run: &run,
            waker: None,
        });
        assert_eq!(l[0].text.lines().next(), Some("500, 768, 0, 0, 0"));
        assert_eq!(l[0].text.lines().nth(1), Some("500, 256, 1, 0, 0"));
    }
}
