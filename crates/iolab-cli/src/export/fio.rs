//! fio's own output formats (`--output-format=normal,json,json+,terse`),
//! one entry each: fio's name for it and how it renders the jobs' results
//! (the renderers are fio's layouts, in `iolab_fio::{text, json}`). What
//! they render goes to stdout or `--output FILE` through the one writer.

use iolab_fio::json::{self, JobResult};
use iolab_fio::text;

/// One of fio's output formats.
pub struct FioFormat {
    /// fio's name for it (`--output-format=NAME`).
    pub name: &'static str,
    render: fn(&[JobResult], u64) -> anyhow::Result<String>,
}

impl std::fmt::Debug for FioFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

impl PartialEq for FioFormat {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

/// fio's formats, one line each, in fio's order.
pub const FIO_FORMATS: &[FioFormat] = &[
    FioFormat {
        name: "normal",
        render: normal,
    },
    FioFormat {
        name: "json",
        render: |r, t| document(r, t, false),
    },
    FioFormat {
        name: "json+",
        render: |r, t| document(r, t, true),
    },
    FioFormat {
        name: "terse",
        render: terse,
    },
];

/// The format fio calls `name`.
pub fn by_name(name: &str) -> Option<&'static FioFormat> {
    FIO_FORMATS.iter().find(|f| f.name == name)
}

/// Every format asked for, in order, rendered one after the other (fio
/// prints them so); `started` is the run's start in ms since the epoch.
pub fn render(
    formats: &[&'static FioFormat],
    results: &[JobResult],
    started: u64,
) -> anyhow::Result<String> {
    let mut out = String::new();
    for f in formats {
        out.push_str(&(f.render)(results, started)?);
    }
    Ok(out)
}

/// Each group's aggregate bandwidths (read, write, trim), for each job.
fn aggs_of(results: &[JobResult]) -> Vec<[f64; 3]> {
    results
        .iter()
        .map(|r| {
            let g: Vec<&JobResult> = results
                .iter()
                .filter(|x| x.job.groupid == r.job.groupid)
                .collect();
            json::Dir::ALL.map(|d| json::group_agg(&g, d))
        })
        .collect()
}

/// fio's header, each job's block, each group's summary, the disk stats.
fn normal(results: &[JobResult], started: u64) -> anyhow::Result<String> {
    let pid = std::process::id();
    let jobs: Vec<&iolab_fio::map::FioJob> = results.iter().map(|r| r.job).collect();
    let mut out = text::header(&jobs);
    for (r, aggs) in results.iter().zip(aggs_of(results)) {
        out.push_str(&text::job_text(r, pid, started / 1000, aggs));
    }
    let mut groups: Vec<u32> = results.iter().map(|r| r.job.groupid).collect();
    groups.dedup();
    for g in groups {
        let members: Vec<&JobResult> = results.iter().filter(|r| r.job.groupid == g).collect();
        out.push_str(&text::group_text(g, &members));
    }
    if results.iter().any(|r| r.job.report.disk_util) {
        out.push_str(&text::disk_text(results));
    }
    Ok(out)
}

/// One JSON document (`json+` adds the latency bins).
fn document(results: &[JobResult], started: u64, plus: bool) -> anyhow::Result<String> {
    let d = json::document(results, started, plus);
    Ok(serde_json::to_string_pretty(&d)? + "\n")
}

/// One `;`-separated line per job (with the disks' fields, as fio's).
fn terse(results: &[JobResult], _started: u64) -> anyhow::Result<String> {
    let disks = if results.iter().any(|r| r.job.report.disk_util) {
        json::disk_util(results)
    } else {
        Vec::new()
    };
    Ok(results
        .iter()
        .zip(aggs_of(results))
        .map(|(r, a)| text::terse(r, &disks, a) + "\n")
        .collect())
}
