//! When a worker may issue its next I/O, beyond a free slot: fio's
//! `thinktime` family, `rate`/`rate_iops` (with `rate_process`),
//! `iodepth_low`, `flow` and `latency_target`. The runner enforces them in
//! `runner/gate.rs`; a spec without any costs the hot loop nothing.

use serde::{Deserialize, Serialize};

/// Everything that holds an I/O back.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Pacing {
    /// fio's `thinktime`: after some I/Os, wait for all in flight, then
    /// pause.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub think: Option<Think>,
    /// fio's `rate` / `rate_iops`, per worker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<Rate>,
    /// fio's `iodepth_low`: once the queue is full, issue again only when
    /// this few I/Os are left in flight.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub depth_low: Option<u32>,
    /// fio's `flow`: jobs sharing an id keep their I/O counts in the ratio
    /// of their weights.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow: Option<Flow>,
    /// fio's `latency_target`: the depth is searched for the largest one
    /// that keeps the latency under a target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lat_target: Option<LatTarget>,
}

impl Pacing {
    /// Whether nothing holds I/O back.
    pub fn is_none(&self) -> bool {
        *self == Pacing::default()
    }
}

/// fio's `thinktime`, `thinktime_spin`, `thinktime_blocks`,
/// `thinktime_blocks_type` and `thinktime_iotime`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Think {
    /// The pause, ns (its first `spin_ns` spent spinning).
    pub ns: u64,
    /// Of the pause, ns spent spinning on the CPU.
    pub spin_ns: u64,
    /// I/Os between pauses (at least 1).
    pub blocks: u32,
    /// Count completed I/Os rather than issued ones.
    pub on_complete: bool,
    /// Pause after this much time of I/O instead (0: by count only).
    pub iotime_ns: u64,
}

/// A rate limit of one worker.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rate {
    /// Bytes per second (`rate`) or I/Os per second (`rate_iops`).
    pub per_sec: u64,
    /// `per_sec` counts bytes.
    pub bytes: bool,
    /// Exponentially distributed gaps (fio's `rate_process=poisson`).
    pub poisson: bool,
    /// Wait for every I/O in flight before sleeping for the rate, as fio's
    /// default `io_submit_mode=inline` does (`offload` does not).
    pub quiesce: bool,
    /// `rate_ignore_thinktime`: the time thought is not made up for.
    pub ignore_think: bool,
}

/// fio's `flow`: a shared counter per `id`; a worker of weight `w` adds
/// `w` per I/O and waits while the counter leans its way by more than
/// `watermark`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Flow {
    /// fio's `flow_id`.
    pub id: u64,
    /// fio's `flow`, its weight (the sign says which side).
    pub weight: i64,
    /// fio's `flow_sleep`, ns (0: yield).
    pub sleep_ns: u64,
    /// fio's `flow_watermark`.
    pub watermark: u64,
}

/// fio's `latency_target`, `latency_window`, `latency_percentile` and
/// `latency_run`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct LatTarget {
    /// Target latency, ns.
    pub target_ns: u64,
    /// Window over which it is checked, ns.
    pub window_ns: u64,
    /// Share of I/Os (%) that must meet the target.
    pub percentile: f64,
    /// Keep searching for the whole run (`latency_run`) rather than stop
    /// at the first depth found.
    pub run: bool,
}
