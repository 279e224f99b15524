//! What a job's output shows: latency kinds and percentiles
//! (`disable_*lat`, `gtod_reduce`, `*_percentiles`, `percentile_list`),
//! `disk_util`, `stats`, the sampling period (`bwavgtime`), and the logs
//! (`write_*_log`, `log_avg_msec`, `log_window_value`, `log_offset`,
//! `log_alternate_epoch`, `per_job_logs`).

use super::given::Given;
use crate::parse::RawJob;
use crate::FioJobError;
use iolab::engine::EngineKind;

/// fio's default percentile list.
pub const FIO_PERCENTILES: [f64; 17] = [
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95,
    99.99,
];

/// fio's bandwidth/IOPS sampling period (`bwavgtime`), ms.
pub const FIO_AVG_MSEC: u64 = 500;

/// What a job's output reports.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    /// Submission latency is timed and reported (asynchronous engines,
    /// unless `disable_slat` or `gtod_reduce`).
    pub slat: bool,
    /// Completion latency is reported (unless `disable_clat`, `gtod_reduce`).
    pub clat: bool,
    /// Total latency is reported (unless `disable_lat`, `gtod_reduce`).
    pub lat: bool,
    /// `clat_percentiles` (default 1).
    pub clat_percentiles: bool,
    /// `lat_percentiles` (default 0).
    pub lat_percentiles: bool,
    /// `slat_percentiles` (default 0).
    pub slat_percentiles: bool,
    /// `percentile_list` (fio's default list otherwise).
    pub percentiles: Vec<f64>,
    /// `disk_util` (default 1): the device's counters in the output.
    pub disk_util: bool,
    /// `bwavgtime` or the logs' period: how often bandwidth is sampled, ms.
    pub interval_ms: u64,
    /// The submit call is timed apart (slat).
    pub time_submit: bool,
}

/// The log files a job asks for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Logs {
    /// `write_bw_log` prefix.
    pub bw: Option<String>,
    /// `write_lat_log` prefix.
    pub lat: Option<String>,
    /// `write_iops_log` prefix.
    pub iops: Option<String>,
    /// `log_avg_msec` (0: one line per I/O).
    pub avg_msec: u64,
    /// `log_window_value`: the window's max instead of its mean (1), or
    /// both (2).
    pub window_value: u8,
    /// `log_offset`: the I/O's offset in the fifth column.
    pub offset: bool,
    /// `log_alternate_epoch`: times since the Unix epoch.
    pub epoch: bool,
    /// fio's number in the file names (`PREFIX_bw.N.log`), its thread
    /// number; None with `per_job_logs=0` (`PREFIX_bw.log`).
    pub number: Option<u32>,
}

impl Logs {
    /// Whether any log is asked for.
    pub fn any(&self) -> bool {
        self.bw.is_some() || self.lat.is_some() || self.iops.is_some()
    }

    /// The file name of log `kind` (`bw`, `lat`, `clat`, ...) of `prefix`.
    pub fn name(&self, prefix: &str, kind: &str) -> String {
        match self.number {
            Some(n) => format!("{prefix}_{kind}.{n}.log"),
            None => format!("{prefix}_{kind}.log"),
        }
    }

    /// Every file the logs write, in order.
    pub fn files(&self) -> Vec<String> {
        let mut v = Vec::new();
        if let Some(p) = &self.bw {
            v.push(self.name(p, "bw"));
        }
        if let Some(p) = &self.lat {
            for k in ["lat", "slat", "clat"] {
                v.push(self.name(p, k));
            }
        }
        if let Some(p) = &self.iops {
            v.push(self.name(p, "iops"));
        }
        v
    }
}

/// The logs a job asks for; `thread_number` names the files.
pub(super) fn logs(g: &Given, job: &RawJob, thread_number: u32) -> Result<Logs, FioJobError> {
    let prefix = |k: &str| -> Option<String> {
        g.get(k).map(|o| match o.value.as_deref() {
            Some(v) if !v.is_empty() => v.to_string(),
            _ => job.name.clone(),
        })
    };
    let avg_msec = g.int("log_avg_msec")?.unwrap_or(0);
    let window_value = match g.val("log_window_value").map(|(v, _)| v.trim()) {
        None | Some("0") | Some("avg") | Some("average") => 0,
        Some("1") | Some("max") => 1,
        Some("2") | Some("both") => 2,
        Some(_) => return Err(g.refuse("log_window_value", "one of avg, max, both")),
    };
    Ok(Logs {
        bw: prefix("write_bw_log"),
        lat: prefix("write_lat_log"),
        iops: prefix("write_iops_log"),
        avg_msec,
        window_value,
        offset: g.flag("log_offset", false)?,
        epoch: g.flag("log_alternate_epoch", false)?,
        number: g.flag("per_job_logs", true)?.then_some(thread_number),
    })
}

fn percentiles_of(v: &str) -> Result<Vec<f64>, String> {
    let mut out = Vec::new();
    for p in v.split(':') {
        let x: f64 = p
            .trim()
            .parse()
            .map_err(|_| format!("'{p}': percentiles are numbers separated by ':'"))?;
        if !(0.0..=100.0).contains(&x) {
            return Err(format!("'{p}': a percentile is between 0 and 100"));
        }
        out.push(x);
    }
    Ok(out)
}

/// What the output reports, and whether the submit call is timed.
pub(super) fn report(
    g: &Given,
    engine: EngineKind,
    notes: &mut Vec<String>,
) -> Result<Report, FioJobError> {
    let reduce = g.flag("gtod_reduce", false)?;
    if reduce {
        notes.push("gtod_reduce: fio stops timing I/O to save clock reads; iolab still times it but reports, as fio, no latency".into());
    }
    let on = |k: &str| -> Result<bool, FioJobError> { Ok(!reduce && !g.flag(k, false)?) };
    let slat = on("disable_slat")? && !engine.is_sync();
    let logs_avg = g.int("log_avg_msec")?.filter(|a| *a > 0);
    let any_log = ["write_bw_log", "write_lat_log", "write_iops_log"]
        .iter()
        .any(|k| g.get(k).is_some());
    let bwavg = g
        .int("bwavgtime")?
        .filter(|a| *a > 0)
        .unwrap_or(FIO_AVG_MSEC);
    let interval_ms = match logs_avg {
        Some(a) if any_log => a.max(10),
        _ => bwavg,
    };
    if !engine.is_sync() && slat {
        notes.push("latency: slat = the submit call (a batch's time shared evenly by its I/Os), clat = from its end to the completion, lat = their sum, as fio reports them".into());
    } else if engine.is_sync() {
        notes.push(
            "latency: synchronous engine, clat = lat = the whole call; no slat, as fio".into(),
        );
    }
    Ok(Report {
        slat,
        clat: on("disable_clat")?,
        lat: on("disable_lat")?,
        clat_percentiles: g.flag("clat_percentiles", true)? && !reduce,
        lat_percentiles: g.flag("lat_percentiles", false)? && !reduce,
        slat_percentiles: g.flag("slat_percentiles", false)? && slat,
        percentiles: g
            .parse("percentile_list", percentiles_of)?
            .unwrap_or_else(|| FIO_PERCENTILES.to_vec()),
        disk_util: g.flag("disk_util", true)?,
        interval_ms,
        time_submit: slat,
    })
}
