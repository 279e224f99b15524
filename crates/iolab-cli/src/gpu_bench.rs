//! `iolab bench --mem cuda[:N]`: file → GPU per op, for any engine. The
//! flag's checks before anything is made, and the
//! engine factory that wraps each worker's engine so every completed read
//! is copied into GPU N before the runner sees its completion
//! (`iolab_reader::gpu::copy_each_read`): an op's latency then covers the
//! read and the copy, and the record says so.

use crate::bench_args::BenchArgs;
use crate::error::usage;
use anyhow::Result;
use iolab::engine::{Engine, EngineConfig};
use iolab_bench::runner::{EngineFactory, RealEngines};
use iolab_bench::spec::WorkloadSpec;
use std::sync::Arc;

/// Refuses `--mem cuda:N` where it cannot be honoured, before anything is
/// made: with a side-by-side fio run or fio job output (fio has no such
/// copy), under mpirun, and where GPU N cannot be opened (no driver, no
/// GPU, no such number), each one line.
pub fn check(a: &BenchArgs) -> Result<()> {
    let Some(n) = a.mem.gpu else {
        return Ok(());
    };
    if a.op != crate::bench_args::OpArg::Read {
        return Err(usage(format!(
            "--mem cuda:{n} copies each read into GPU memory; --op {} writes (use --op read)",
            if a.op == crate::bench_args::OpArg::Write {
                "write"
            } else {
                "rw"
            }
        )));
    }
    let fio = [
        ("--vs", a.vs.is_some()),
        ("--print-fio", a.print_fio.is_some()),
        ("--fio-job", a.fio_job),
    ];
    if let Some((flag, _)) = fio.iter().find(|(_, set)| *set) {
        return Err(usage(format!(
            "--mem cuda:{n} with {flag}: fio has no per-op copy into GPU memory to compare with; drop one of them"
        )));
    }
    if iolab_mpi::launched_rank().is_some() {
        return Err(usage(format!(
            "--mem cuda:{n}: not under mpirun (run one process per GPU without it)"
        )));
    }
    open(n).map_err(|why| usage(format!("--mem cuda:{n}: {why}")))
}

/// Opens GPU `n` once, so a missing driver or GPU is found before the run.
#[cfg(feature = "cuda")]
pub fn open(n: u32) -> std::result::Result<(), String> {
    iolab_reader::gpu::Device::open(n as usize)
        .map(drop)
        .map_err(|e| e.to_string())
}

/// Without the cuda feature no GPU can be opened.
#[cfg(not(feature = "cuda"))]
pub fn open(_: u32) -> std::result::Result<(), String> {
    Err("this iolab was built without the cuda feature (build it with --features cuda)".into())
}

/// The factory that builds `spec`'s engines: the real ones, each wrapped
/// to copy its reads into the GPU when the spec asks for it.
pub fn engines(spec: &WorkloadSpec) -> Arc<dyn EngineFactory> {
    match spec.copy_to_gpu {
        None => RealEngines::shared(),
        Some(n) => Arc::new(Copying::new(move |e| to_gpu(e, n))),
    }
}

/// Wraps `e` so each of its reads is copied into GPU `n`.
#[cfg(feature = "cuda")]
fn to_gpu(e: Box<dyn Engine>, n: u32) -> std::result::Result<Box<dyn Engine>, String> {
    let w = iolab_reader::gpu::copy_each_read(e, n as usize).map_err(|e| e.to_string())?;
    if !w.copier().pinned() {
        warn_pageable(n);
    }
    Ok(Box::new(w))
}

#[cfg(not(feature = "cuda"))]
fn to_gpu(_: Box<dyn Engine>, _: u32) -> std::result::Result<Box<dyn Engine>, String> {
    Err("this iolab was built without the cuda feature".into())
}

/// Says once per process that the driver would not page-lock the buffers.
#[cfg(feature = "cuda")]
fn warn_pageable(n: u32) {
    static SAID: std::sync::Once = std::sync::Once::new();
    SAID.call_once(|| {
        eprintln!("warning: --mem cuda:{n}: the driver would not page-lock the buffers; each copy is staged by the driver (slower)");
    });
}

/// Builds the real engines and wraps each with `wrap`.
struct Copying<W> {
    wrap: W,
}

impl<W> Copying<W>
where
    W: Fn(Box<dyn Engine>) -> std::result::Result<Box<dyn Engine>, String> + Send + Sync,
{
    fn new(wrap: W) -> Self {
        Copying { wrap }
    }
}

impl<W> EngineFactory for Copying<W>
where
    W: Fn(Box<dyn Engine>) -> std::result::Result<Box<dyn Engine>, String> + Send + Sync,
{
    fn build(
        &self,
        spec: &WorkloadSpec,
        _worker: u32,
        cfg: EngineConfig,
    ) -> iolab::Result<Box<dyn Engine>> {
        let e = iolab::engine::build(spec.engine, cfg)?;
        (self.wrap)(e).map_err(|why| iolab::Error::Unsupported {
            feature: format!("--mem cuda:{}", spec.copy_to_gpu.unwrap_or(0)),
            why,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab::buf::{BufId, BufPool};
    use iolab::engine::EngineKind;
    use iolab_bench::measure::{self, Measure, NoHooks};
    use iolab_bench::prepare::Prepared;
    use iolab_bench::spec::{CacheMode, StopRule};
    use iolab_reader::gpu::{CopyEach, GpuError, OpCopy};
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::time::Duration;

    /// A copier that takes its time and counts the bytes it was given.
    struct Slow {
        bytes: Arc<AtomicU64>,
    }

    impl OpCopy for Slow {
        fn copy(&mut self, pool: &BufPool, reads: &[(BufId, usize)]) -> Result<(), GpuError> {
            for &(id, n) in reads {
                // The bytes are the file's (its pattern is never all zero).
                assert!(pool.slot(id)[..n].iter().any(|&b| b != 0));
                self.bytes.fetch_add(n as u64, Ordering::Relaxed);
            }
            std::thread::sleep(Duration::from_millis(3));
            Ok(())
        }
        fn name(&self) -> String {
            "the slow copier".into()
        }
    }

    /// `spec`'s file, made as `iolab bench` makes it.
    fn prepared(spec: &WorkloadSpec, stop: &AtomicBool) -> Prepared {
        iolab_bench::prepare::prepare(
            spec,
            true,
            Default::default(),
            stop,
            &mut |_| {},
            &mut |_, _| {},
        )
        .unwrap()
    }

    #[test]
    fn every_read_is_copied_and_its_latency_covers_the_copy() {
        let d = tempfile::tempdir().unwrap();
        let spec = WorkloadSpec {
            engine: EngineKind::Uring,
            qd: 4,
            bs: 64 << 10,
            file: d.path().join("f"),
            file_size: 4 << 20,
            cache: CacheMode::Warm,
            stop: StopRule {
                ops: Some(32),
                ..StopRule::default()
            },
            copy_to_gpu: Some(0),
            ..WorkloadSpec::default()
        };
        let stop = AtomicBool::new(false);
        let prep = prepared(&spec, &stop);
        let bytes = Arc::new(AtomicU64::new(0));
        let b = bytes.clone();
        let factory = Copying::new(move |e| {
            let slow = Slow { bytes: b.clone() };
            Ok(Box::new(CopyEach::new(e, slow)) as Box<dyn Engine>)
        });
        let m = Measure {
            engines: Arc::new(factory),
            ..Measure::new(&stop, 1)
        };
        let run = measure::runs(&spec, &prep, &m, &mut NoHooks)
            .unwrap()
            .one()
            .unwrap();
        assert_eq!(run.ops, 32);
        assert_eq!(bytes.load(Ordering::Relaxed), 32 * (64 << 10));
        // Each reaped batch waits 3 ms for its copies: no op ends sooner.
        assert!(run.latency.min_ns >= 3_000_000, "{:?}", run.latency);
    }

    #[test]
    fn without_the_copying_factory_a_gpu_spec_is_refused_not_measured_without_its_copy() {
        let d = tempfile::tempdir().unwrap();
        let spec = WorkloadSpec {
            file: d.path().join("f"),
            file_size: 1 << 20,
            copy_to_gpu: Some(0),
            ..WorkloadSpec::default()
        };
        let stop = AtomicBool::new(false);
        let prep = prepared(&spec, &stop);
        let e = measure::runs(&spec, &prep, &Measure::new(&stop, 1), &mut NoHooks).unwrap_err();
        assert!(e.to_string().contains("--mem cuda:0"), "{e}");
    }
}
