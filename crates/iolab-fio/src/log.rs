//! fio's log files: `write_bw_log`, `write_lat_log` (its `_lat`, `_slat`
//! and `_clat` files), `write_iops_log`, and `--bandwidth-log`'s
//! aggregate logs. Each line is `time (ms), value, direction (0 read, 1
//! write, 2 trim), block size, offset`, as fio writes them:
//!
//! - without `log_avg_msec`, one line per I/O (its block size; its offset
//!   with `log_offset=1`, else 0);
//! - with it, one line per window and direction that had I/O, the
//!   window's mean (`log_window_value=max`: its largest), block size 0.
//!
//! Values: bw in KiB/s, latency in ns, IOPS. Names follow fio:
//! `PREFIX_bw.N.log`, N the job's thread number. Only the contents are
//! made here; the command writes them through its one output writer.

use super::json::JobResult;
use iolab_bench::oplog::OpRecord;
use std::fmt::Write;

/// One log file: its name (relative, as fio names it) and contents.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogFile {
    /// File name.
    pub name: String,
    /// Contents.
    pub text: String,
}

/// What a log line carries.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Bw,
    Iops,
    Lat,
    Slat,
    Clat,
}

/// The value of `kind` for one I/O.
fn value(kind: Kind, op: &OpRecord) -> u64 {
    match kind {
        Kind::Lat => op.lat_ns,
        Kind::Slat => op.slat_ns,
        Kind::Clat => op.clat_ns(),
        Kind::Iops => 1,
        // KiB/s at which this I/O moved its bytes.
        Kind::Bw => (op.len as u128 * 1_000_000_000 / op.lat_ns.max(1) as u128 / 1024) as u64,
    }
}

/// One line per I/O.
fn per_io(ops: &[OpRecord], kind: Kind, offsets: bool, t0: u64) -> String {
    let mut s = String::new();
    for op in ops {
        let off = if offsets { op.offset } else { 0 };
        let _ = writeln!(
            s,
            "{}, {}, {}, {}, {off}",
            t0 + op.t_ns / 1_000_000,
            value(kind, op),
            op.dir,
            op.len
        );
    }
    s
}

/// One line per window of `avg_ms` and direction: the mean (or, with
/// `max`, the largest) of latencies; bandwidth and IOPS over the window.
fn averaged(ops: &[OpRecord], kind: Kind, avg_ms: u64, window_value: u8, t0: u64) -> String {
    let mut s = String::new();
    let win = avg_ms.max(1) * 1_000_000;
    let mut i = 0;
    while i < ops.len() {
        let w = ops[i].t_ns / win;
        let end = ops[i..]
            .iter()
            .position(|o| o.t_ns / win != w)
            .map_or(ops.len(), |n| i + n);
        let t = t0 + (w + 1) * avg_ms;
        for dir in 0..3u8 {
            let these: Vec<&OpRecord> = ops[i..end].iter().filter(|o| o.dir == dir).collect();
            if these.is_empty() {
                continue;
            }
            for v in window_values(&these, kind, avg_ms, window_value) {
                let _ = writeln!(s, "{t}, {v}, {dir}, 0, 0");
            }
        }
        i = end;
    }
    s
}

/// A window's value(s) of one direction.
fn window_values(ops: &[&OpRecord], kind: Kind, avg_ms: u64, window_value: u8) -> Vec<u64> {
    match kind {
        Kind::Bw => {
            let bytes: u64 = ops.iter().map(|o| o.len as u64).sum();
            vec![bytes * 1000 / avg_ms.max(1) / 1024]
        }
        Kind::Iops => vec![ops.len() as u64 * 1000 / avg_ms.max(1)],
        _ => {
            let v: Vec<u64> = ops.iter().map(|o| value(kind, o)).collect();
            let mean = v.iter().sum::<u64>() / v.len() as u64;
            let max = v.iter().copied().max().unwrap_or(0);
            match window_value {
                1 => vec![max],
                2 => vec![mean, max],
                _ => vec![mean],
            }
        }
    }
}

/// The log files one job asks for.
pub fn logs(r: &JobResult) -> Vec<LogFile> {
    let l = &r.job.logs;
    let mut ops: Vec<OpRecord> = r.run.oplog.clone().unwrap_or_default();
    if let Some(v) = r.verify {
        // The read-back follows the job's own I/O, on the same clock.
        let base = r.run.duration_ns;
        ops.extend(v.oplog.iter().flatten().map(|o| OpRecord {
            t_ns: o.t_ns + base,
            ..*o
        }));
    }
    let t0 = if l.epoch {
        iolab_bench::record::unix_ms()
    } else {
        0
    };
    let sync = r.job.spec.engine.is_sync();
    let text = |kind: Kind| -> String {
        if kind == Kind::Slat && sync {
            // fio writes the file, empty: a synchronous engine has no slat.
            return String::new();
        }
        if l.avg_msec == 0 {
            per_io(&ops, kind, l.offset, t0)
        } else {
            averaged(&ops, kind, l.avg_msec, l.window_value, t0)
        }
    };
    let mut out = Vec::new();
    let mut add = |prefix: &Option<String>, kind: Kind, name: &str| {
        if let Some(p) = prefix {
            out.push(LogFile {
                name: l.name(p, name),
                text: text(kind),
            });
        }
    };
    add(&l.bw, Kind::Bw, "bw");
    add(&l.lat, Kind::Lat, "lat");
    add(&l.lat, Kind::Slat, "slat");
    add(&l.lat, Kind::Clat, "clat");
    add(&l.iops, Kind::Iops, "iops");
    out
}

/// `--bandwidth-log`: fio's `agg-read_bw.log`, `agg-write_bw.log` and
/// `agg-trim_bw.log`, the bandwidth of all jobs together per sample.
pub fn aggregate(results: &[JobResult]) -> Vec<LogFile> {
    let mut out = Vec::new();
    for (dir, name) in [(0u8, "read"), (1, "write"), (2, "trim")] {
        let mut by_t: std::collections::BTreeMap<u64, f64> = Default::default();
        for r in results {
            let run = r.run;
            let share = match dir {
                0 if run.ops > 0 => run.read_ops as f64 / run.ops as f64,
                1 if run.ops > 0 => run.write_ops as f64 / run.ops as f64,
                _ => 0.0,
            };
            for iv in &run.intervals {
                *by_t.entry(iv.t_ms).or_default() += iv.mib_per_s * 1024.0 * share;
            }
        }
        let mut text = String::new();
        for (t, v) in by_t {
            let _ = writeln!(text, "{t}, {}, {dir}, 0, 0", v.round() as u64);
        }
        out.push(LogFile {
            name: format!("agg-{name}_bw.log"),
            text,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::tests::{job, run_with};

    fn op(t_ms: u64, lat: u64, slat: u64, dir: u8) -> OpRecord {
        OpRecord {
            t_ns: t_ms * 1_000_000,
            lat_ns: lat,
            slat_ns: slat,
            dir,
            len: 4096,
            offset: 8192,
        }
    }

    #[test]
    fn averaged_logs_are_per_direction_and_window() {
        let j = job("[m]\nfilename=/x\nsize=1m\nrw=randrw\nioengine=libaio\niodepth=4\nwrite_lat_log=m\nwrite_bw_log=m\nlog_avg_msec=100\n");
        let mut run = run_with(&[1000], 3, 1);
        run.oplog = Some(vec![
            op(10, 1000, 100, 0),
            op(20, 3000, 100, 0),
            op(30, 224_000, 400, 1),
            op(150, 157_000, 100, 0),
        ]);
        let l = logs(&JobResult {
            job: &j,
            run: &run,
            verify: None,
            waker: None,
        });
        let names: Vec<&str> = l.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(
            names,
            ["m_bw.1.log", "m_lat.1.log", "m_slat.1.log", "m_clat.1.log"]
        );
        // Reads and writes have their own means.
        assert_eq!(
            l[1].text,
            "100, 2000, 0, 0, 0\n100, 224000, 1, 0, 0\n200, 157000, 0, 0, 0\n"
        );
        assert_eq!(l[2].text.lines().nth(1), Some("100, 400, 1, 0, 0"));
        assert_eq!(l[3].text.lines().next(), Some("100, 1900, 0, 0, 0"));
        // 8 KiB read in 100 ms: 80 KiB/s.
        assert_eq!(l[0].text.lines().next(), Some("100, 80, 0, 0, 0"));
    }

    #[test]
    fn without_an_average_every_io_is_a_line() {
        let j = job("[p]\nfilename=/x\nsize=1m\nwrite_lat_log=p\nwrite_iops_log=p\nlog_offset=1\n");
        let mut run = run_with(&[1000], 2, 0);
        run.oplog = Some(vec![op(1, 50_000, 0, 0), op(2, 60_000, 0, 0)]);
        let l = logs(&JobResult {
            job: &j,
            run: &run,
            verify: None,
            waker: None,
        });
        assert_eq!(l[0].name, "p_lat.1.log");
        assert_eq!(
            l[0].text,
            "1, 50000, 0, 4096, 8192\n2, 60000, 0, 4096, 8192\n"
        );
        // psync has no slat: its file is empty, as fio's.
        assert_eq!(
            (l[1].name.as_str(), l[1].text.as_str()),
            ("p_slat.1.log", "")
        );
        assert_eq!(l[3].text.lines().next(), Some("1, 1, 0, 4096, 8192"));
    }
}
