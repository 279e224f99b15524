//! The eight tests of `mt-suite` (study 003) and their sizes: what the
//! thread runs (`mt_suite`) and the rank runs (`mt_ranks`) both measure.

use crate::util::*;
use crate::Ctx;
use iolab_bench::spec::{AccessPattern, CacheMode, OpMix, StopRule, WorkloadSpec};

/// Block size of every test, bytes.
pub(super) const BS: u64 = 512;

/// (op, files, pattern) of each test.
pub(super) const TESTS: [(&str, &str, &str); 8] = [
    ("read", "shared", "seq"),
    ("read", "per-thread", "seq"),
    ("read", "shared", "rand"),
    ("read", "per-thread", "rand"),
    ("write", "shared", "seq"),
    ("write", "per-thread", "seq"),
    ("write", "shared", "rand"),
    ("write", "per-thread", "rand"),
];

/// A test's name in figures and records.
pub(super) fn test_name(op: &str, files: &str, pat: &str) -> String {
    format!("{op} {files} {pat}")
}

/// Sizes and counts of the tests at the context's scale.
pub(super) struct Sizes {
    /// The shared file's bytes.
    pub shared: u64,
    /// Each thread's (or rank's) own file's bytes.
    pub own: u64,
    /// Random ops of one worker's share.
    pub rand_ops: u64,
    /// Repeats of each configuration.
    pub repeats: u32,
}

impl Sizes {
    pub(super) fn of(ctx: &Ctx) -> Sizes {
        let own = size_for(ctx, ctx.pick(MIB / 4, 8 * MIB, 20 * MIB)).max(MIB / 4);
        Sizes {
            shared: size_for(ctx, ctx.pick(MIB, 64 * MIB, 200 * MIB)),
            own: if ctx.scale == crate::Scale::Smoke {
                MIB / 4
            } else {
                own
            },
            rand_ops: ctx.pick(500, 10_000, 10_000),
            repeats: ctx.pick(1, 2, 3),
        }
    }
}

/// One test `(op, files, pattern)` with `t` threads.
pub(super) fn test_spec(ctx: &Ctx, sz: &Sizes, test: (&str, &str, &str), t: u32) -> WorkloadSpec {
    let (op, files, pat) = test;
    let per = files == "per-thread";
    let size = if per { sz.own } else { sz.shared };
    let file = if per {
        ctx.dir.join(format!("iolab-lab-mt-{size}"))
    } else {
        ctx.data_file(size)
    };
    let mut s = spec(&file, size);
    s.bs = BS;
    s.threads = t;
    s.file_per_thread = per;
    (s.op, s.cache) = if op == "read" {
        (OpMix::Read, CacheMode::Warm)
    } else {
        (OpMix::Write, CacheMode::AsIs)
    };
    s.pattern = if pat == "seq" {
        AccessPattern::Seq
    } else {
        AccessPattern::Rand
    };
    if pat == "rand" {
        s.stop = StopRule {
            ops: Some(if per {
                sz.rand_ops * t as u64
            } else {
                sz.rand_ops
            }),
            ..StopRule::default()
        };
    }
    s
}
