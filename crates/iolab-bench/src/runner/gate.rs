//! When a worker may issue its next I/O ([`crate::pacing::Pacing`]), with
//! fio's semantics:
//!
//! - `thinktime`: after `blocks` I/Os (issued, or completed), wait until
//!   nothing is in flight, then pause (spinning for `spin_ns` of it), so
//!   a thinking job runs at depth 1 as fio's does;
//! - rate: the I/O that brings the bytes (or I/Os) issued to `n` goes at
//!   `start + n / rate`, so a stall is made up for (fio's
//!   `rate_next_io_time`); with fio's inline submission, what is in flight
//!   completes before the worker sleeps; Poisson gaps for
//!   `rate_process=poisson`;
//! - `iodepth_low`: once the queue is full, nothing more goes until it has
//!   drained to the low mark;
//! - `flow`: a worker whose share of its flow group's I/O is above its
//!   share of the group's weight waits;
//! - `latency_target`: the depth is searched (doubled on success, bisected
//!   on failure) for the deepest queue that meets the target.
//!
//! A spec without pacing has no gate and pays nothing.

use crate::pacing::{Flow, LatTarget, Pacing, Rate, Think};
use crate::random::Rng;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// One flow group's shared counts (fio's `struct fio_flow`).
#[derive(Default)]
struct FlowGroup {
    ios: AtomicU64,
    weight: AtomicU64,
}

/// The flow groups of this process, by `flow_id`.
fn flow_group(id: u64) -> Arc<FlowGroup> {
    static GROUPS: OnceLock<Mutex<HashMap<u64, Arc<FlowGroup>>>> = OnceLock::new();
    let mut g = GROUPS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    g.entry(id).or_default().clone()
}

/// A worker's place in its flow group.
struct FlowState {
    cfg: Flow,
    group: Arc<FlowGroup>,
    ios: u64,
}

impl Drop for FlowState {
    fn drop(&mut self) {
        // Its weight leaves with it: the others do not wait for a job
        // that has ended.
        self.group
            .weight
            .fetch_sub(self.cfg.weight.unsigned_abs(), Ordering::Relaxed);
    }
}

/// The spec's pacing, with its `rate_iops` (over all workers) and
/// `thinktime_ns` folded into fio's forms.
fn pacing_of(spec: &crate::spec::WorkloadSpec) -> Pacing {
    let mut p: Pacing = spec.pacing.clone();
    if let (None, Some(r)) = (p.rate, spec.rate_iops.filter(|r| *r > 0)) {
        p.rate = Some(Rate {
            per_sec: (r / spec.workers() as u64).max(1),
            bytes: false,
            poisson: false,
            quiesce: false,
            ignore_think: false,
        });
    }
    if let (None, Some(ns)) = (p.think, spec.thinktime_ns.filter(|t| *t > 0)) {
        p.think = Some(Think {
            ns,
            spin_ns: 0,
            blocks: 1,
            on_complete: false,
            iotime_ns: 0,
        });
    }
    p
}

/// The latency target's search (fio's `latency_qd`, `_low`, `_high`).
struct Search {
    cfg: LatTarget,
    max: u32,
    qd: u32,
    low: u32,
    high: u32,
    stable: u32,
    window_start: u64,
    ios: u64,
    failed: u64,
    done: bool,
}

/// What holds a worker's I/O back, and its state.
pub(super) struct Gate {
    think: Option<Think>,
    rate: Option<Rate>,
    low: Option<u32>,
    qd: u32,
    flow: Option<FlowState>,
    search: Option<Search>,
    /// I/Os counted towards the next pause.
    since_think: u64,
    /// A pause is due once nothing is in flight.
    think_due: bool,
    /// The pause ends (and its spinning part ends) at these times, ns.
    think_until: Option<(u64, u64)>,
    last_think: u64,
    /// The rate's schedule starts here (None: at the first I/O).
    rate_start: Option<u64>,
    /// Bytes (or I/Os) issued, and the time the next may go.
    issued: u64,
    next_ns: u64,
    rng: Rng,
    /// The queue filled: drain to `low` before issuing again.
    draining: bool,
    /// Why the last [`Gate::released`] said no: the time it may go (0:
    /// it waits for completions instead).
    held_until: Option<u64>,
}

impl Gate {
    /// The gate of a worker of `spec`, if anything holds its I/O back.
    /// The spec's `rate_iops` (over all workers) and `thinktime_ns` are
    /// folded into fio's forms.
    pub fn of(spec: &crate::spec::WorkloadSpec, worker: u32) -> Option<Gate> {
        let p = pacing_of(spec);
        if p.is_none() {
            return None;
        }
        let flow = p.flow.map(|cfg| {
            let group = flow_group(cfg.id);
            group
                .weight
                .fetch_add(cfg.weight.unsigned_abs(), Ordering::Relaxed);
            FlowState { cfg, group, ios: 0 }
        });
        let search = p.lat_target.map(|cfg| Search {
            cfg,
            max: spec.qd,
            qd: 1,
            low: 1,
            high: spec.qd,
            stable: 0,
            window_start: 0,
            ios: 0,
            failed: 0,
            done: false,
        });
        Some(Gate {
            think: p.think,
            rate: p.rate,
            low: p.depth_low,
            qd: spec.qd,
            flow,
            search,
            since_think: 0,
            think_due: false,
            think_until: None,
            last_think: 0,
            rate_start: None,
            issued: 0,
            next_ns: 0,
            rng: Rng::new(spec.seed ^ 0x9A7E ^ worker as u64),
            draining: false,
            held_until: None,
        })
    }

    /// Whether the next I/O may go at `now` with `inflight` I/Os in
    /// flight (handed over or about to be).
    pub fn released(&mut self, now: u64, inflight: usize) -> bool {
        self.held_until = None;
        self.think_ok(now, inflight)
            && self.depth_ok(inflight)
            && self.rate_ok(now, inflight)
            && self.flow_ok(now)
    }

    /// Whether the worker is held back (and must hand over what it has).
    pub fn held(&self) -> bool {
        self.held_until.is_some()
    }

    /// `thinktime`: a due pause starts once nothing is in flight.
    fn think_ok(&mut self, now: u64, inflight: usize) -> bool {
        let Some(t) = self.think else { return true };
        if let Some((until, _)) = self.think_until {
            if now < until {
                self.held_until = Some(until);
                return false;
            }
            self.think_until = None;
            self.last_think = now;
            if let (Some(r), Some(start)) = (self.rate, self.rate_start.as_mut()) {
                if r.ignore_think {
                    // The time thought is not made up for by the rate.
                    *start += t.ns;
                }
            }
        }
        if t.iotime_ns > 0 && now.saturating_sub(self.last_think) >= t.iotime_ns {
            self.think_due = true;
        }
        if !self.think_due {
            return true;
        }
        if inflight > 0 {
            self.held_until = Some(0);
            return false;
        }
        self.think_due = false;
        self.since_think = 0;
        self.think_until = Some((now + t.ns, now + t.spin_ns));
        self.held_until = Some(now + t.ns);
        false
    }

    /// `iodepth_low` and the latency target's depth.
    fn depth_ok(&mut self, inflight: usize) -> bool {
        if let Some(low) = self.low {
            if self.draining && inflight > low as usize {
                self.held_until = Some(0);
                return false;
            }
            self.draining = false;
        }
        if let Some(s) = &self.search {
            if inflight >= s.qd as usize {
                self.held_until = Some(0);
                return false;
            }
        }
        true
    }

    /// The rate: due when `issued / rate` has passed since the start.
    fn rate_ok(&mut self, now: u64, inflight: usize) -> bool {
        let Some(r) = self.rate else { return true };
        let start = *self.rate_start.get_or_insert(now);
        if now >= start + self.next_ns {
            return true;
        }
        // fio's inline submission waits for what is in flight first.
        self.held_until = Some(if r.quiesce && inflight > 0 {
            0
        } else {
            start + self.next_ns
        });
        false
    }

    /// `flow`: held while this worker is ahead of its weight's share.
    fn flow_ok(&mut self, now: u64) -> bool {
        let Some(f) = &mut self.flow else { return true };
        let total = f.group.ios.load(Ordering::Relaxed).max(1);
        let weight = f.group.weight.load(Ordering::Relaxed).max(1);
        let mine = f.ios as f64 / total as f64;
        let share = f.cfg.weight.unsigned_abs() as f64 / weight as f64;
        if f.ios > 0 && mine > share {
            self.held_until = Some(now + f.cfg.sleep_ns.max(10_000));
            return false;
        }
        f.group.ios.fetch_add(1, Ordering::Relaxed);
        f.ios += 1;
        true
    }

    /// An I/O of `len` bytes was issued; `inflight` are now in flight.
    pub fn issued(&mut self, len: u64, inflight: usize) {
        if let Some(r) = self.rate {
            self.issued += if r.bytes { len } else { 1 };
            self.next_ns = if r.poisson {
                let mean = 1e9 * if r.bytes { len as f64 } else { 1.0 } / r.per_sec as f64;
                let u = (self.rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
                self.next_ns + (-mean * (1.0 - u).ln()) as u64
            } else {
                ((self.issued as u128 * 1_000_000_000) / r.per_sec as u128) as u64
            };
        }
        if let Some(t) = self.think {
            if !t.on_complete {
                self.count_think(1, t.blocks);
            }
        }
        if self.low.is_some() && inflight >= self.qd as usize {
            self.draining = true;
        }
    }

    fn count_think(&mut self, n: u64, blocks: u32) {
        self.since_think += n;
        if self.since_think >= blocks as u64 {
            self.think_due = true;
        }
    }

    /// Completions reaped at `now`, with their latencies.
    pub fn completed(&mut self, now: u64, lats: impl Iterator<Item = u64>) {
        if let Some(t) = self.think {
            if t.on_complete {
                let (n, _) = lats.size_hint();
                self.count_think(n as u64, t.blocks);
                return;
            }
        }
        let Some(s) = &mut self.search else { return };
        if s.window_start == 0 {
            s.window_start = now;
        }
        for l in lats {
            s.ios += 1;
            if l > s.cfg.target_ns {
                s.failed += 1;
            }
        }
        if now.saturating_sub(s.window_start) >= s.cfg.window_ns && s.ios > 0 && !s.done {
            let ok = (s.ios - s.failed) as f64 * 100.0 / s.ios as f64 >= s.cfg.percentile;
            s.step(ok);
            s.window_start = now;
            s.ios = 0;
            s.failed = 0;
        }
    }

    /// Completions the worker must wait for before it can go on (0: none):
    /// everything in flight for a pause or a rate's sleep, down to the low
    /// mark, or one when the depth is at its limit.
    pub fn must_reap(&self, inflight: usize) -> usize {
        match self.held_until {
            Some(0) => {
                if let (Some(low), true) = (self.low, self.draining) {
                    return inflight.saturating_sub(low as usize).max(1).min(inflight);
                }
                if self
                    .search
                    .as_ref()
                    .is_some_and(|s| inflight >= s.qd as usize)
                {
                    return 1.min(inflight);
                }
                inflight
            }
            _ => 0,
        }
    }

    /// Waits towards the next release when nothing else is to be done:
    /// spins through the spinning part of a pause, sleeps otherwise (short
    /// sleeps while I/O is in flight, so completions are reaped promptly).
    pub fn wait(&self, now: u64, inflight: usize) {
        let Some(until) = self.held_until.filter(|u| *u > now) else {
            return;
        };
        if let Some((_, spin_end)) = self.think_until {
            if now < spin_end {
                std::hint::spin_loop();
                return;
            }
        }
        let cap = if inflight > 0 { 200_000 } else { 5_000_000 };
        std::thread::sleep(Duration::from_nanos((until - now).min(cap)));
    }

    /// The depth the latency target settled on, if it searched.
    pub fn depth(&self) -> Option<u32> {
        self.search.as_ref().map(|s| s.qd)
    }
}

impl Search {
    /// One window's verdict: fio's `lat_target_success` and
    /// `__lat_target_failed`.
    fn step(&mut self, ok: bool) {
        if ok {
            let before = self.qd;
            self.low = self.qd;
            if self.qd + 1 == self.high {
                self.stable += 1;
                if self.stable >= 3 {
                    self.high += 1;
                    self.stable = 0;
                }
            }
            self.qd = if self.high != self.max {
                (self.qd + self.high) / 2
            } else {
                self.qd * 2
            }
            .min(self.max);
            if !self.cfg.run && self.qd == before {
                self.done = true;
            }
        } else if self.qd > 1 {
            self.high = self.qd;
            if self.qd == self.low {
                self.low -= 1;
            }
            self.qd = ((self.qd + self.low) / 2).max(1);
            self.stable = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::WorkloadSpec;

    fn gate(p: Pacing, qd: u32) -> Gate {
        let spec = WorkloadSpec {
            pacing: p,
            qd,
            ..WorkloadSpec::default()
        };
        Gate::of(&spec, 0).unwrap()
    }

    #[test]
    fn thinking_waits_for_the_queue_to_drain_then_pauses() {
        let mut g = gate(
            Pacing {
                think: Some(Think {
                    ns: 1_000_000,
                    spin_ns: 0,
                    blocks: 2,
                    on_complete: false,
                    iotime_ns: 0,
                }),
                ..Pacing::default()
            },
            8,
        );
        assert!(g.released(0, 0));
        g.issued(4096, 1);
        assert!(g.released(10, 1));
        g.issued(4096, 2);
        // Two issued: the pause is due, after the two in flight complete.
        assert!(!g.released(20, 2));
        assert_eq!(g.must_reap(2), 2);
        assert!(!g.released(30, 0));
        assert_eq!(g.must_reap(0), 0);
        assert!(!g.released(500_000, 0));
        assert!(g.released(1_000_030, 0));
    }

    #[test]
    fn a_rate_makes_up_for_a_stall_and_quiesces_inline() {
        let mut g = gate(
            Pacing {
                rate: Some(Rate {
                    per_sec: 1000,
                    bytes: false,
                    poisson: false,
                    quiesce: true,
                    ignore_think: false,
                }),
                ..Pacing::default()
            },
            4,
        );
        assert!(g.released(0, 0));
        g.issued(4096, 1);
        // The second is due at 1 ms; before then, the one in flight first.
        assert!(!g.released(500_000, 1));
        assert_eq!(g.must_reap(1), 1);
        assert!(!g.released(500_000, 0));
        // A stall of 5 ms: the next four go at once.
        for i in 0..5 {
            assert!(g.released(5_000_000, 0), "{i}");
            g.issued(4096, 0);
        }
        assert!(!g.released(5_000_000, 0));
    }

    #[test]
    fn iodepth_low_drains_a_full_queue_to_the_mark() {
        let mut g = gate(
            Pacing {
                depth_low: Some(1),
                ..Pacing::default()
            },
            4,
        );
        for n in 0..4 {
            assert!(g.released(0, n));
            g.issued(4096, n + 1);
        }
        assert!(!g.released(0, 3));
        assert_eq!(g.must_reap(3), 2);
        assert!(g.released(0, 1));
    }

    #[test]
    fn the_latency_search_doubles_then_bisects() {
        let mut s = Search {
            cfg: LatTarget {
                target_ns: 100,
                window_ns: 10,
                percentile: 100.0,
                run: false,
            },
            max: 32,
            qd: 1,
            low: 1,
            high: 32,
            stable: 0,
            window_start: 0,
            ios: 0,
            failed: 0,
            done: false,
        };
        for want in [2, 4, 8, 16] {
            s.step(true);
            assert_eq!(s.qd, want);
        }
        s.step(false);
        assert_eq!((s.qd, s.high), (12, 16));
        s.step(true);
        assert_eq!(s.qd, 14);
    }
}
