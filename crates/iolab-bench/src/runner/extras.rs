//! What a worker keeps for fio's options beside its hot loop: the gate
//! (pacing), the picker (files and sizes per op), the trimmer, the queue's
//! depth counts and the per-op log. Each is None (or empty) unless the
//! spec asks for it, so a plain run pays nothing.

use super::control::Shared;
use super::gate::Gate;
use super::pick::Picker;
use super::plan::Plan;
use super::trim::Trimmer;
use iolab::engine::Done;

/// A worker's extras.
pub(super) struct Extras {
    /// Paced runs only (fio's rates, thinktime, iodepth_low, flow,
    /// latency target).
    pub gate: Option<Gate>,
    /// Runs over several files or of varying sizes only.
    pub pick: Option<Picker>,
    /// Each slot's length, when sizes vary.
    pub lens: Vec<u32>,
    /// Trimming runs only.
    pub trims: Option<Trimmer>,
    /// How deep the queue was.
    pub depths: crate::depths::Depths,
    /// Every measured I/O, when the spec logs them.
    pub oplog: Option<Vec<crate::oplog::OpRecord>>,
}

impl Extras {
    /// What the worker of `plan` needs; an error (a file that cannot be
    /// opened to trim) fails the run.
    pub fn new(sh: &Shared, plan: &Plan) -> Extras {
        let spec = &sh.spec;
        let paths = plan.files.iter().map(|f| f.path.as_path());
        let trims = Trimmer::of(spec.trim, paths).unwrap_or_else(|e| {
            sh.fail(e);
            None
        });
        let per_file = plan.files.iter().map(|f| f.gen.positions()).collect();
        Extras {
            gate: Gate::of(spec, plan.worker),
            pick: Picker::of(spec, per_file, spec.seed ^ plan.worker as u64),
            lens: if spec.sizes.is_some() {
                vec![spec.bs as u32; spec.qd as usize]
            } else {
                Vec::new()
            },
            trims,
            depths: Default::default(),
            oplog: spec.log_ops.then(Vec::new),
        }
    }

    /// Completions `done` reaped at `t` ns, their ops issued at `started`
    /// (by slot): the depth counts and the gate hear of them.
    #[inline]
    pub fn completed(&mut self, t: u64, done: &[Done], started: &[u64]) {
        self.depths.reaped(done.len());
        if let Some(g) = self.gate.as_mut() {
            g.completed(
                t,
                done.iter()
                    .map(|d| t.saturating_sub(started[d.tag as usize])),
            );
        }
    }
}
