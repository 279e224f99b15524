//! How long a job runs and what holds its I/O back: `io_size`, `loops`,
//! `runtime`, `time_based`, `number_ios`, `ramp_time`, `startdelay`;
//! `rate`, `rate_iops`, `rate_min`, `thinktime`, `iodepth_low`, `flow`,
//! `latency_target`; `exitall`; `cpus_allowed`; `continue_on_error`.

use super::given::Given;
use super::io::{Direction, Queue};
use super::layout::Files;
use crate::value;
use crate::FioJobError;
use iolab_bench::pacing::{Flow, LatTarget, Pacing, Rate, Think};
use iolab_bench::pin::CpuPin;
use iolab_bench::spec::{OpMix, StopRule};

/// When a job stops, its ramp and its start delay.
pub(super) struct HowLong {
    pub stop: StopRule,
    pub ramp_ns: u64,
    pub startdelay_ns: u64,
}

/// `io_size`, `loops`, `runtime`, `time_based`, `number_ios`, `ramp_time`
/// and `startdelay`.
pub(super) fn how_long(
    g: &Given,
    f: &Files,
    notes: &mut Vec<String>,
) -> Result<HowLong, FioJobError> {
    let io_size = match g.parse("io_size", value::size)? {
        None => None,
        Some(value::Size::Bytes(b)) => Some(b),
        Some(value::Size::Percent(p)) => {
            Some((f.region as f64 * f.count() as f64 * p / 100.0) as u64)
        }
    };
    let loops = g.int("loops")?.unwrap_or(1).max(1);
    let secs = |v: &str| value::time_ns(v, 1_000_000_000);
    let runtime = g.parse("runtime", secs)?.filter(|t| *t > 0);
    let mut time_based = g.flag("time_based", false)?;
    if time_based && runtime.is_none() {
        notes.push(
            "time_based without runtime: fio runs until its I/O is done, so does iolab".into(),
        );
        time_based = false;
    }
    let per_job = io_size
        .unwrap_or(f.region * f.count())
        .saturating_mul(loops);
    let stop = StopRule {
        bytes: if time_based { None } else { Some(per_job) },
        ops: g.int("number_ios")?,
        time_ns: runtime,
    };
    Ok(HowLong {
        stop,
        ramp_ns: g.parse("ramp_time", secs)?.unwrap_or(0),
        startdelay_ns: g.parse("startdelay", secs)?.unwrap_or(0),
    })
}

/// One rate option (`rate`, `rate_iops`, `rate_min`, `rate_iops_min`):
/// one value for every direction, or `R,W[,T]`; the value of the
/// direction(s) the job does (a mixed job's reads and writes are paced
/// together, so they must agree).
fn one_rate(g: &Given, k: &str, op: OpMix) -> Result<Option<u64>, FioJobError> {
    let Some((v, _)) = g.val(k) else {
        return Ok(None);
    };
    let parts: Vec<Option<u64>> = v
        .split(',')
        .map(|p| {
            let p = p.trim();
            if p.is_empty() {
                Ok(None)
            } else {
                value::bytes(p).map(Some)
            }
        })
        .collect::<Result<_, _>>()
        .map_err(|e| g.refuse(k, &e))?;
    let r = parts.first().copied().flatten();
    let w = if parts.len() > 1 { parts[1] } else { r };
    Ok(match op {
        OpMix::Read => r,
        OpMix::Write => w,
        OpMix::Rw { .. } => {
            match (r, w) {
                (Some(a), Some(b)) if a != b => return Err(g.refuse(
                    k,
                    "iolab paces a mixed job's reads and writes together: give one rate for both",
                )),
                (Some(a), Some(_)) => Some(a * 2),
                (a, b) => a.or(b),
            }
        }
    }
    .filter(|r| *r > 0))
}

/// `rate` or `rate_iops` with `rate_process`, `io_submit_mode` and
/// `rate_ignore_thinktime`.
fn rate(
    g: &Given,
    dir: &Direction,
    queue: &Queue,
    notes: &mut Vec<String>,
) -> Result<Option<Rate>, FioJobError> {
    let bytes = one_rate(g, "rate", dir.op)?;
    let iops = one_rate(g, "rate_iops", dir.op)?;
    let (per_sec, is_bytes) = match (bytes, iops) {
        (Some(_), Some(_)) => return Err(g.refuse("rate", "give rate or rate_iops, not both")),
        (Some(b), None) => (b, true),
        (None, Some(i)) => (i, false),
        (None, None) => return Ok(None),
    };
    let poisson = match g.val("rate_process") {
        None => false,
        Some((v, _)) => match v.trim() {
            "linear" => false,
            "poisson" => true,
            _ => return Err(g.refuse("rate_process", "one of linear, poisson")),
        },
    };
    let unit = if is_bytes { "bytes" } else { "I/Os" };
    notes.push(format!(
        "paced: {per_sec} {unit}/s, each I/O issued when the {unit} so far are due{}{}",
        if poisson {
            " (exponential gaps, rate_process=poisson)"
        } else {
            ""
        },
        if queue.offload {
            ""
        } else {
            "; before sleeping, the I/O in flight completes (fio's inline submission)"
        }
    ));
    Ok(Some(Rate {
        per_sec,
        bytes: is_bytes,
        poisson,
        quiesce: !queue.offload,
        ignore_think: g.flag("rate_ignore_thinktime", false)?,
    }))
}

/// `thinktime` (microseconds by default) with `thinktime_spin`,
/// `thinktime_blocks`, `thinktime_blocks_type` and `thinktime_iotime`.
fn think(g: &Given, notes: &mut Vec<String>) -> Result<Option<Think>, FioJobError> {
    let us = |v: &str| value::time_ns(v, 1_000);
    let Some(ns) = g.parse("thinktime", us)?.filter(|t| *t > 0) else {
        return Ok(None);
    };
    let spin_ns = g.parse("thinktime_spin", us)?.unwrap_or(0).min(ns);
    let blocks = g
        .int("thinktime_blocks")?
        .unwrap_or(1)
        .clamp(1, u32::MAX as u64) as u32;
    let on_complete = match g.val("thinktime_blocks_type") {
        None => false,
        Some((v, _)) => match v.trim() {
            "issue" => false,
            "complete" => true,
            _ => return Err(g.refuse("thinktime_blocks_type", "one of issue, complete")),
        },
    };
    let iotime_ns = g
        .parse("thinktime_iotime", |v| value::time_ns(v, 1_000_000_000))?
        .unwrap_or(0);
    notes.push(format!(
        "thinktime: after every {blocks} I/O(s) the job waits for the I/O in flight, then pauses {} us, as fio does",
        ns / 1000
    ));
    Ok(Some(Think {
        ns,
        spin_ns,
        blocks,
        on_complete,
        iotime_ns,
    }))
}

/// `flow`, `flow_id`, `flow_sleep` and `flow_watermark`.
fn flow(g: &Given, notes: &mut Vec<String>) -> Result<Option<Flow>, FioJobError> {
    let Some((v, _)) = g.val("flow") else {
        return Ok(None);
    };
    let weight: i64 = v
        .trim()
        .parse()
        .map_err(|_| g.refuse("flow", "a weight, a whole number"))?;
    if weight == 0 {
        return Ok(None);
    }
    let id = g.int("flow_id")?.unwrap_or(0);
    notes.push(format!(
        "flow={weight}: the jobs of flow_id {id} keep their I/O counts in the ratio of their weights"
    ));
    Ok(Some(Flow {
        id,
        weight,
        sleep_ns: g
            .parse("flow_sleep", |v| value::time_ns(v, 1_000))?
            .unwrap_or(0),
        watermark: g.int("flow_watermark")?.unwrap_or(1024),
    }))
}

/// `latency_target` with `latency_window`, `latency_percentile`,
/// `latency_run`.
fn lat_target(
    g: &Given,
    queue: &Queue,
    notes: &mut Vec<String>,
) -> Result<Option<LatTarget>, FioJobError> {
    let us = |v: &str| value::time_ns(v, 1_000);
    let Some(target_ns) = g.parse("latency_target", us)?.filter(|t| *t > 0) else {
        return Ok(None);
    };
    let window_ns = g
        .parse("latency_window", us)?
        .filter(|w| *w > 0)
        .ok_or_else(|| {
            g.refuse(
                "latency_target",
                "needs latency_window= (how long each depth is tried)",
            )
        })?;
    let percentile = match g.val("latency_percentile") {
        None => 100.0,
        Some((v, _)) => v
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|p| (0.0..=100.0).contains(p))
            .ok_or_else(|| g.refuse("latency_percentile", "a percentage, 0 to 100"))?,
    };
    notes.push(format!(
        "latency_target: the depth is searched, up to {}, for the deepest queue whose {percentile}% of I/Os complete within {} us over each {} us window",
        queue.qd,
        target_ns / 1000,
        window_ns / 1000
    ));
    Ok(Some(LatTarget {
        target_ns,
        window_ns,
        percentile,
        run: g.flag("latency_run", false)?,
    }))
}

/// Everything that holds I/O back.
pub(super) fn pacing(
    g: &Given,
    dir: &Direction,
    queue: &Queue,
    notes: &mut Vec<String>,
) -> Result<Pacing, FioJobError> {
    Ok(Pacing {
        think: think(g, notes)?,
        rate: rate(g, dir, queue, notes)?,
        depth_low: queue.low,
        flow: flow(g, notes)?,
        lat_target: lat_target(g, queue, notes)?,
    })
}

/// `rate_min` / `rate_iops_min` over `rate_cycle`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateMin {
    /// Bytes (or I/Os) per second.
    pub per_sec: u64,
    /// `per_sec` counts bytes.
    pub bytes: bool,
    /// The window each is checked over, ms (`rate_cycle`, 1000).
    pub cycle_ms: u64,
}

/// `rate_min` or `rate_iops_min`: fio fails the job when its rate over
/// a `rate_cycle` falls below.
pub(super) fn rate_min(g: &Given, dir: &Direction) -> Result<Option<RateMin>, FioJobError> {
    let bytes = one_rate(g, "rate_min", dir.op)?;
    let iops = one_rate(g, "rate_iops_min", dir.op)?;
    let (per_sec, is_bytes) = match (bytes, iops) {
        (Some(b), _) => (b, true),
        (None, Some(i)) => (i, false),
        (None, None) => return Ok(None),
    };
    let cycle_ms = g.int("rate_cycle")?.unwrap_or(1000).max(1);
    Ok(Some(RateMin {
        per_sec,
        bytes: is_bytes,
        cycle_ms,
    }))
}

/// Which jobs end when one ends (`exitall`, `exit_what`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitWhat {
    /// The jobs of its group (fio's `exit_what=group`, the default).
    Group,
    /// The jobs up to the next stonewall (`stonewall`).
    Stonewall,
    /// Every job, those not started too (`all`).
    All,
}

/// `exitall` with `exit_what`.
pub(super) fn exit_what(g: &Given) -> Result<Option<ExitWhat>, FioJobError> {
    if !g.flag("exitall", false)? {
        return Ok(None);
    }
    Ok(Some(match g.val("exit_what").map(|(v, _)| v.trim()) {
        None | Some("group") => ExitWhat::Group,
        Some("stonewall") => ExitWhat::Stonewall,
        Some("all") => ExitWhat::All,
        Some(_) => return Err(g.refuse("exit_what", "one of group, stonewall, all")),
    }))
}

/// `cpus_allowed` (or `cpumask`) and `cpus_allowed_policy`: the CPUs the
/// job runs on (fio ignores the policy without a list, as this does).
pub(super) fn cpus(g: &Given, notes: &mut Vec<String>) -> Result<Option<CpuPin>, FioJobError> {
    let split = match g.val("cpus_allowed_policy") {
        None => false,
        Some((v, _)) => match v.trim() {
            "shared" => false,
            "split" => true,
            _ => return Err(g.refuse("cpus_allowed_policy", "one of shared, split")),
        },
    };
    let list = match g.parse("cpus_allowed", CpuPin::parse_list)? {
        Some(l) => Some(l),
        None => g.parse("cpumask", |v| {
            let v = v.trim();
            let m = match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
                Some(h) => u64::from_str_radix(h, 16),
                None => v.parse::<u64>(),
            }
            .map_err(|_| format!("'{v}': a CPU mask is a number (0x3: CPUs 0 and 1)"))?;
            Ok((0..64).filter(|c| m & (1 << c) != 0).collect::<Vec<u32>>())
        })?,
    };
    let Some(cpus) = list else {
        return Ok(None);
    };
    let pin = CpuPin {
        cpus,
        split,
        first: 0,
    };
    let k = if g.get("cpus_allowed").is_some() {
        "cpus_allowed"
    } else {
        "cpumask"
    };
    pin.check_here().map_err(|e| g.refuse(k, &e))?;
    if split {
        notes.push("cpus_allowed_policy=split: each job one CPU of the list in turn".into());
    }
    Ok(Some(pin))
}

/// `continue_on_error`: iolab counts failed I/Os and goes on, for any
/// kind of error.
pub(super) fn continue_on_error(g: &Given) -> Result<bool, FioJobError> {
    Ok(match g.val("continue_on_error") {
        None => false,
        Some((v, loc)) => match v.trim() {
            "0" | "none" | "false" => false,
            "" | "1" | "true" | "read" | "write" | "io" | "all" | "verify" => true,
            _ => {
                return Err(loc.err(format!(
                    "continue_on_error={v}: one of none, read, write, io, verify, all"
                )))
            }
        },
    })
}
