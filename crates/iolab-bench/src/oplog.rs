//! Every I/O of a run, when fio's logs are asked for: its completion time,
//! latencies, direction, length and offset. fio's per-I/O logs are these
//! lines; its averaged logs (`log_avg_msec`) are their averages per
//! direction. Off unless the spec asks (`log_ops`).

use serde::{Deserialize, Serialize};

/// One completed I/O.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpRecord {
    /// Completion, ns since the measured phase began.
    pub t_ns: u64,
    /// Total latency (lat), ns.
    pub lat_ns: u64,
    /// Submission latency (slat), ns; 0 when the submit call is not timed.
    pub slat_ns: u64,
    /// 0 read, 1 write, 2 trim.
    pub dir: u8,
    /// Bytes.
    pub len: u32,
    /// Offset in its file.
    pub offset: u64,
}

impl OpRecord {
    /// Completion latency (clat): lat without slat.
    pub fn clat_ns(&self) -> u64 {
        self.lat_ns.saturating_sub(self.slat_ns)
    }
}
