//! Every completed read copied on, inside the op: an engine that wraps
//! any other and, before it hands a read's completion back, copies the
//! bytes read to a destination ([`OpCopy`]) and waits for that copy. The
//! benchmark's latency of an op runs from the call that submits it to the
//! return of the call that reaps it, so with this wrapper an op's latency
//! covers the read *and* the copy: `iolab bench --mem cuda:N` measures
//! file → GPU per op, for any engine. With the `cuda` feature,
//! `copy_each_read` wraps an engine with the copier into GPU memory.

use super::error::GpuError;
use iolab::buf::{BufId, BufPool};
use iolab::engine::{Caps, Done, Engine, EngineStats, Op, OpKind};
use std::collections::HashMap;

/// Where each completed read's bytes go.
pub trait OpCopy: Send {
    /// Copies the first `n` bytes of each listed slot of `pool` to the
    /// destination, returning once every copy has ended (the engine may
    /// read into those slots again right after).
    fn copy(&mut self, pool: &BufPool, reads: &[(BufId, usize)]) -> Result<(), GpuError>;

    /// The destination, for messages ("GPU 0").
    fn name(&self) -> String;
}

/// An engine whose every completed read is copied on by `C` before its
/// completion is handed back; writes pass through untouched.
pub struct CopyEach<C: OpCopy> {
    // Declared before `inner`, so dropped first: a copier that registered
    // the inner engine's buffers with a driver releases them before the
    // inner engine frees them.
    copier: C,
    inner: Box<dyn Engine>,
    /// Reads in flight: tag → the slot they read into.
    reads: HashMap<u64, BufId>,
    /// Ops in flight (reads and writes).
    in_flight: usize,
    /// The reads of the completions being handed back (reused).
    batch: Vec<(BufId, usize)>,
}

impl<C: OpCopy> CopyEach<C> {
    /// `inner`, with every completed read copied by `copier`.
    pub fn new(inner: Box<dyn Engine>, copier: C) -> Self {
        CopyEach {
            copier,
            inner,
            reads: HashMap::new(),
            in_flight: 0,
            batch: Vec::new(),
        }
    }

    /// The copier.
    pub fn copier(&self) -> &C {
        &self.copier
    }

    /// Notes the reads among the first `accepted` of `ops` as in flight.
    fn started(&mut self, ops: &[Op], accepted: usize) {
        self.in_flight += accepted;
        for op in &ops[..accepted.min(ops.len())] {
            if op.kind == OpKind::Read {
                self.reads.insert(op.tag, op.buf);
            }
        }
    }

    /// Copies the bytes of the successful reads among `done` and waits for
    /// the copies. A failed copy is an error of the whole run (it names the
    /// destination); the engine's count of ops in flight stays right, so
    /// the caller can still wait for the rest.
    fn copy_out(&mut self, done: &[Done]) -> iolab::Result<()> {
        self.in_flight = self.in_flight.saturating_sub(done.len());
        self.batch.clear();
        for d in done {
            if let (Some(buf), Ok(n)) = (self.reads.remove(&d.tag), d.res) {
                if n > 0 {
                    self.batch.push((buf, n as usize));
                }
            }
        }
        if self.batch.is_empty() {
            return Ok(());
        }
        self.copier
            .copy(self.inner.pool(), &self.batch)
            .map_err(|e| {
                iolab::Error::io(
                    format!("copying a read to {}", self.copier.name()),
                    std::io::Error::other(e.to_string()),
                )
            })
    }
}

impl<C: OpCopy> Engine for CopyEach<C> {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn caps(&self) -> Caps {
        self.inner.caps()
    }

    fn submit(&mut self, ops: &[Op]) -> iolab::Result<usize> {
        let n = self.inner.submit(ops)?;
        self.started(ops, n);
        Ok(n)
    }

    fn reap(&mut self, min: usize, out: &mut Vec<Done>) -> iolab::Result<usize> {
        let start = out.len();
        // Never wait for more than are in flight (a caller that lost count
        // after a failed copy would wait forever).
        let n = self.inner.reap(min.min(self.in_flight), out)?;
        self.copy_out(&out[start..])?;
        Ok(n)
    }

    fn submit_and_reap(
        &mut self,
        ops: &[Op],
        min: usize,
        out: &mut Vec<Done>,
    ) -> iolab::Result<(usize, usize)> {
        let start = out.len();
        let min = min.min(self.in_flight + ops.len());
        // The completions may include ops of this very batch: note the
        // whole batch first, then forget what the engine did not take.
        self.started(ops, ops.len());
        let r = self.inner.submit_and_reap(ops, min, out);
        let accepted = match &r {
            Ok((n, _)) => *n,
            Err(_) => 0,
        };
        for op in &ops[accepted.min(ops.len())..] {
            self.reads.remove(&op.tag);
        }
        self.in_flight -= ops.len() - accepted.min(ops.len());
        let (n, m) = r?;
        self.copy_out(&out[start..])?;
        Ok((n, m))
    }

    fn pool(&self) -> &BufPool {
        self.inner.pool()
    }

    fn pool_mut(&mut self) -> &mut BufPool {
        self.inner.pool_mut()
    }

    fn stats(&self) -> EngineStats {
        self.inner.stats()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab::engine::{self, EngineConfig, EngineFile, EngineKind, EngineOpts, FileId};
    use std::sync::{Arc, Mutex};

    /// Copies into host memory, one region per slot, keeping every copy
    /// in order; fails on demand.
    struct Recorder {
        log: Arc<Mutex<Vec<Vec<u8>>>>,
        fail: bool,
    }

    impl OpCopy for Recorder {
        fn copy(&mut self, pool: &BufPool, reads: &[(BufId, usize)]) -> Result<(), GpuError> {
            if self.fail {
                return Err(GpuError::Driver {
                    call: "cuMemcpyHtoDAsync",
                    name: "CUDA_ERROR_ILLEGAL_ADDRESS".into(),
                    code: 700,
                });
            }
            let mut log = self.log.lock().unwrap();
            for &(id, n) in reads {
                log.push(pool.slot(id)[..n].to_vec());
            }
            Ok(())
        }
        fn name(&self) -> String {
            "the recorder".into()
        }
    }

    fn engine(kind: EngineKind, path: &std::path::Path, qd: u32) -> Box<dyn Engine> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .unwrap();
        let len = file.metadata().unwrap().len();
        let cfg = EngineConfig {
            files: vec![EngineFile {
                path: path.to_path_buf(),
                file,
                len,
            }],
            qd,
            max_len: 8192,
            mem_align: 4096,
            direct: false,
            opts: EngineOpts::default(),
        };
        engine::build(kind, cfg).unwrap()
    }

    fn op(tag: u64, kind: OpKind, offset: u64) -> Op {
        Op {
            tag,
            kind,
            file: FileId(0),
            offset,
            len: 8192,
            buf: BufId(tag as u32),
        }
    }

    #[test]
    fn each_read_is_copied_before_its_completion_comes_back_and_writes_are_not() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        let v: Vec<u8> = (0..65_536u32).map(|i| (i * 7 % 251) as u8).collect();
        std::fs::write(&p, &v).unwrap();
        for kind in [EngineKind::Pread, EngineKind::Uring] {
            let qd = if kind.is_sync() { 1 } else { 4 };
            let log = Arc::new(Mutex::new(Vec::new()));
            let rec = Recorder {
                log: log.clone(),
                fail: false,
            };
            let mut e = CopyEach::new(engine(kind, &p, qd), rec);
            let mut done = Vec::new();
            let mut want = Vec::new();
            for round in 0..4u64 {
                let ops: Vec<Op> = (0..qd as u64)
                    .map(|t| op(t, OpKind::Read, (round * qd as u64 + t) % 8 * 8192))
                    .collect();
                want.extend(ops.iter().map(|o| o.offset));
                // Submit and reap in one call, as the runner does when the
                // queue is full, and apart.
                if round % 2 == 0 {
                    assert_eq!(e.submit(&ops).unwrap(), ops.len());
                    let mut got = 0;
                    while got < ops.len() {
                        got += e.reap(ops.len() - got, &mut done).unwrap();
                    }
                } else {
                    let (n, mut got) = e.submit_and_reap(&ops, ops.len(), &mut done).unwrap();
                    assert_eq!(n, ops.len());
                    while got < ops.len() {
                        got += e.reap(ops.len() - got, &mut done).unwrap();
                    }
                }
            }
            // A write moves nothing to the destination.
            e.pool_mut().slot_mut(BufId(0))[..8192].copy_from_slice(&v[..8192]);
            e.submit(&[op(0, OpKind::Write, 0)]).unwrap();
            e.reap(1, &mut done).unwrap();
            let log = log.lock().unwrap();
            assert_eq!(log.len(), want.len(), "{kind}: one copy per read");
            // Every copy holds the bytes of one read (completions may come
            // back in any order within a batch).
            let mut got: Vec<&[u8]> = log.iter().map(|b| &b[..]).collect();
            let mut exp: Vec<&[u8]> = want
                .iter()
                .map(|&o| &v[o as usize..o as usize + 8192])
                .collect();
            got.sort();
            exp.sort();
            assert!(got == exp, "{kind}: copied bytes differ from the file");
        }
    }

    #[test]
    fn a_failed_copy_fails_the_reap_naming_the_destination_and_waits_for_no_phantom() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        std::fs::write(&p, vec![1u8; 65_536]).unwrap();
        let rec = Recorder {
            log: Arc::default(),
            fail: true,
        };
        let mut e = CopyEach::new(engine(EngineKind::Uring, &p, 2), rec);
        let mut done = Vec::new();
        e.submit(&[op(0, OpKind::Read, 0), op(1, OpKind::Read, 8192)])
            .unwrap();
        let mut err = None;
        let mut reaped = 0;
        while reaped < 2 && err.is_none() {
            let before = done.len();
            match e.reap(1, &mut done) {
                Ok(n) => reaped += n,
                Err(x) => {
                    reaped += done.len() - before;
                    err = Some(x.to_string());
                }
            }
        }
        let err = err.expect("the copy failed");
        assert!(
            err.starts_with("copying a read to the recorder: CUDA cuMemcpyHtoDAsync failed"),
            "{err}"
        );
        // A caller that counts the lost completions as still in flight
        // asks for more than there are: the wait returns, not hangs.
        let left = 2 - reaped;
        let _ = e.reap(left + 2, &mut done);
    }
}
