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

/// Each job's block, then each group's summary.
fn normal(results: &[JobResult], started: u64) -> anyhow::Result<String> {
    let pid = std::process::id();
    let mut out = String::new();
    for r in results {
        out.push_str(&text::job_text(r, pid, started / 1000));
    }
    let mut groups: Vec<u32> = results.iter().map(|r| r.job.groupid).collect();
    groups.dedup();
    for g in groups {
        let members: Vec<&JobResult> = results.iter().filter(|r| r.job.groupid == g).collect();
        out.push_str(&text::group_text(g, &members));
    }
    Ok(out)
}

/// One JSON document (`json+` adds the latency bins).
fn document(results: &[JobResult], started: u64, plus: bool) -> anyhow::Result<String> {
    let d = json::document(results, started, plus);
    Ok(serde_json::to_string_pretty(&d)? + "\n")
}

/// One `;`-separated line per job.
fn terse(results: &[JobResult], _started: u64) -> anyhow::Result<String> {
    Ok(results.iter().map(|r| text::terse(r) + "\n").collect())
}
