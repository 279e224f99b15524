//! fio's latency breakdown, kept only when asked: per direction for mixed
//! jobs, and slat/clat when the submit call is timed. Runs that need
//! neither have no splitter and pay nothing.

use crate::metrics::LatSplit;
use crate::spec::{OpMix, WorkloadSpec};
use iolab::engine::{Op, OpKind};

/// Per-worker recorder of a [`LatSplit`].
pub(super) struct Splitter {
    /// What was recorded.
    pub hists: LatSplit,
    /// Per slot: end of the submit call that handed its op over, ns, and
    /// the op's slat.
    submitted: Vec<(u64, u64)>,
}

#[inline]
fn dir(kind: OpKind) -> usize {
    (kind != OpKind::Read) as usize
}

impl Splitter {
    /// A splitter if the spec needs one: a mixed job, or `time_submit` on
    /// an asynchronous engine; none with `--lat off` (no latency at all).
    pub fn of(spec: &WorkloadSpec) -> Option<Box<Splitter>> {
        let timed = spec.time_submit && !spec.engine.is_sync();
        let mixed = matches!(spec.op, OpMix::Rw { .. });
        let lat = spec.lat != crate::lat_record::LatRecord::Off;
        (lat && (timed || mixed)).then(|| {
            Box::new(Splitter {
                hists: LatSplit::new(timed),
                submitted: if timed {
                    vec![(0, 0); spec.qd as usize]
                } else {
                    Vec::new()
                },
            })
        })
    }

    /// Whether the submit call is timed.
    pub fn timed(&self) -> bool {
        self.hists.parts.is_some()
    }

    /// `ops` were handed over by a submit call from `t0` to `t1` ns: each
    /// gets an even share of the call as its slat.
    pub fn submitted(&mut self, ops: &[Op], t0: u64, t1: u64) {
        let Some([slat, _]) = self.hists.parts.as_mut() else {
            return;
        };
        let each = t1.saturating_sub(t0) / ops.len().max(1) as u64;
        for op in ops {
            self.submitted[op.tag as usize] = (t1, each);
            slat[dir(op.kind)].saturating_record(each);
        }
    }

    /// The slat of the op in `slot` (0 when the submit call is not timed).
    #[inline]
    pub fn slat_of(&self, slot: usize) -> u64 {
        self.submitted.get(slot).map_or(0, |s| s.1)
    }

    /// The op in `slot` completed at `t` ns, `lat` ns after its submit
    /// call began. When the submit call is timed, lat is fio's: slat + clat
    /// (the op's share of the call, not the whole batch's call).
    #[inline]
    pub fn completed(&mut self, slot: usize, kind: OpKind, t: u64, lat: u64) {
        let d = dir(kind);
        match self.hists.parts.as_mut() {
            None => self.hists.lat[d].saturating_record(lat),
            Some([_, clat]) => {
                let (t1, slat) = self.submitted[slot];
                let c = t.saturating_sub(t1);
                clat[d].saturating_record(c);
                self.hists.lat[d].saturating_record(slat + c);
            }
        }
    }
}
