//! Engine-level tests: every engine reads a pattern file through the same
//! small driver (sequential, random and shuffled offsets; several depths and
//! block sizes; buffered and O_DIRECT), completions are matched by tag in
//! whatever order they come back, and every buffer is verified. Writes are
//! checked by reading back.

use iolab::buf::BufId;
use iolab::engine::{
    self, Done, EngineConfig, EngineFile, EngineKind, EngineOpts, FileId, Op, OpKind,
};
use iolab::file::{self, OpenSpec};
use iolab::pattern::Pattern;
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::AtomicBool;

const FILE_LEN: u64 = 2 << 20;
const SEED: u64 = 0x5eed_1234;

#[derive(Clone, Copy, Debug)]
enum Order {
    Seq,
    Random,
    Shuffled,
}

/// A small deterministic generator (xorshift64*).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// The engines with completion machinery of their own (io_uring aside).
const ASYNC: [EngineKind; 3] = [
    EngineKind::Libaio,
    EngineKind::Posixaio,
    EngineKind::Threadpool,
];

/// A read of `len` bytes at `offset` of file 0 into buffer `buf`.
fn read_op(tag: u64, offset: u64, len: u32, buf: u32) -> Op {
    Op {
        tag,
        kind: OpKind::Read,
        file: FileId(0),
        offset,
        len,
        buf: BufId(buf),
    }
}

fn offsets(order: Order, len: u64, bs: u64, seed: u64) -> Vec<u64> {
    let n = len / bs;
    let mut rng = Rng(seed | 1);
    match order {
        Order::Seq => (0..n).map(|i| i * bs).collect(),
        Order::Random => (0..n).map(|_| (rng.next() % n) * bs).collect(),
        Order::Shuffled => {
            let mut v: Vec<u64> = (0..n).map(|i| i * bs).collect();
            for i in (1..v.len()).rev() {
                let j = (rng.next() % (i as u64 + 1)) as usize;
                v.swap(i, j);
            }
            v
        }
    }
}

fn make_file(dir: &Path, name: &str, seed: u64) -> std::path::PathBuf {
    let p = dir.join(name);
    file::create_pattern_file(
        &p,
        FILE_LEN,
        Pattern::new(seed),
        false,
        &AtomicBool::new(false),
        &mut |_| {},
    )
    .expect("create pattern file");
    p
}

/// Opens `path` for an engine; `None` when O_DIRECT is refused here (tmpfs).
fn config(
    path: &Path,
    qd: u32,
    bs: usize,
    direct: bool,
    write: bool,
    opts: EngineOpts,
) -> Option<EngineConfig> {
    let f = match file::open(path, OpenSpec { direct, write }) {
        Ok(f) => f,
        Err(iolab::Error::Unsupported { .. }) if direct => {
            iolab::testing::unmet(&format!(
                "O_DIRECT refused for {}; the direct variant is not run",
                path.display()
            ));
            return None;
        }
        Err(e) => panic!("open: {e}"),
    };
    let mem_align = file::dio_alignment(path).expect("dio alignment").mem;
    Some(EngineConfig {
        files: vec![EngineFile {
            path: path.to_path_buf(),
            file: f,
            len: FILE_LEN,
        }],
        qd,
        max_len: bs,
        mem_align,
        direct,
        opts,
    })
}

/// Statistics of one driven run.
struct RunStats {
    ops: usize,
    out_of_order: usize,
    max_inflight: usize,
}

// Long on purpose: the reference driver's one loop (submit, reap, check
// each completion), whose state every step of the loop shares.
/// Drives `eng` over `offs` keeping at most `qd` ops in flight. For reads
/// every buffer is verified against `pat`; for writes each buffer is filled
/// from `pat` before submission.
fn drive(
    eng: &mut dyn engine::Engine,
    kind: OpKind,
    offs: &[u64],
    bs: u32,
    qd: u32,
    pat: Pattern,
) -> RunStats {
    let mut free: Vec<u32> = (0..qd).rev().collect();
    let mut inflight: HashMap<u64, (u64, BufId)> = HashMap::new();
    let mut next = 0usize;
    let mut next_tag = 0u64;
    let mut expect_tag = 0u64; // the tag an in-order engine would return next
    let mut st = RunStats {
        ops: 0,
        out_of_order: 0,
        max_inflight: 0,
    };
    let mut done: Vec<Done> = Vec::new();
    while next < offs.len() || !inflight.is_empty() {
        let mut batch = Vec::new();
        while next < offs.len() && !free.is_empty() {
            let b = BufId(free.pop().unwrap());
            let off = offs[next];
            if kind == OpKind::Write {
                pat.fill(&mut eng.buf_mut(b)[..bs as usize], off);
            }
            batch.push(Op {
                tag: next_tag,
                kind,
                file: FileId(0),
                offset: off,
                len: bs,
                buf: b,
            });
            next_tag += 1;
            next += 1;
        }
        if !batch.is_empty() {
            let n = eng.submit(&batch).expect("submit");
            assert!(n <= batch.len());
            for op in &batch[..n] {
                inflight.insert(op.tag, (op.offset, op.buf));
            }
            // Not accepted: give the slots back and offer the ops again.
            for op in batch[n..].iter().rev() {
                free.push(op.buf.0);
                next -= 1;
                next_tag -= 1;
            }
            assert!(inflight.len() <= qd as usize, "more than qd ops in flight");
            st.max_inflight = st.max_inflight.max(inflight.len());
        }
        if inflight.is_empty() {
            continue;
        }
        done.clear();
        let before = inflight.len();
        let got = eng.reap(1, &mut done).expect("reap");
        assert!(got >= 1, "reap(1) returned nothing with ops in flight");
        assert_eq!(got, done.len());
        assert!(got <= before, "more completions than ops in flight");
        for d in &done {
            let (off, b) = inflight
                .remove(&d.tag)
                .expect("completion for an unknown or repeated tag");
            if d.tag != expect_tag {
                st.out_of_order += 1;
            }
            expect_tag = d.tag + 1;
            let n = d
                .res
                .unwrap_or_else(|e| panic!("op at {off} failed: {e:?}"));
            assert_eq!(n, bs, "short transfer at {off}");
            if kind == OpKind::Read {
                if let Err(m) = pat.verify(&eng.buf(b)[..bs as usize], off) {
                    panic!("verify failed at offset {off}: {m:?}");
                }
            }
            free.push(b.0);
            st.ops += 1;
        }
    }
    assert_eq!(st.ops, offs.len());
    st
}

fn read_matrix(kind: EngineKind, depths: &[u32], directs: &[bool]) {
    let dir = tempfile::tempdir().unwrap();
    let path = make_file(dir.path(), "data", SEED);
    let pat = Pattern::new(SEED);
    let mut runs = 0;
    let mut ooo = 0;
    for &direct in directs {
        for &qd in depths {
            for bs in [4096u32, 65536] {
                for order in [Order::Seq, Order::Random, Order::Shuffled] {
                    let Some(cfg) =
                        config(&path, qd, bs as usize, direct, false, EngineOpts::default())
                    else {
                        continue;
                    };
                    let mut eng =
                        engine::build(kind, cfg).unwrap_or_else(|e| panic!("build {kind}: {e}"));
                    let offs = offsets(order, FILE_LEN, bs as u64, qd as u64 * 31 + bs as u64);
                    let st = drive(eng.as_mut(), OpKind::Read, &offs, bs, qd, pat);
                    assert!(st.max_inflight <= qd as usize);
                    ooo += st.out_of_order;
                    runs += 1;
                }
            }
        }
    }
    assert!(runs > 0);
    eprintln!("{kind}: {runs} runs, {ooo} out-of-order completions");
}

fn write_test(kind: EngineKind, qd: u32, direct: bool) {
    let dir = tempfile::tempdir().unwrap();
    let path = make_file(dir.path(), "data", SEED);
    let new = Pattern::new(SEED ^ 0xffff);
    let bs = 16384u32;
    let Some(cfg) = config(&path, qd, bs as usize, direct, true, EngineOpts::default()) else {
        return;
    };
    let mut eng = engine::build(kind, cfg).unwrap();
    let offs = offsets(Order::Shuffled, FILE_LEN, bs as u64, 7);
    drive(eng.as_mut(), OpKind::Write, &offs, bs, qd, new);
    drop(eng);
    // Read back through a plain buffered read and the engine itself.
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(bytes.len() as u64, FILE_LEN);
    new.verify(&bytes, 0).expect("written bytes read back");
    let cfg = config(&path, qd, bs as usize, direct, false, EngineOpts::default()).unwrap();
    let mut eng = engine::build(kind, cfg).unwrap();
    drive(
        eng.as_mut(),
        OpKind::Read,
        &offsets(Order::Seq, FILE_LEN, bs as u64, 1),
        bs,
        qd,
        new,
    );
}

const ASYNC_DEPTHS: [u32; 3] = [1, 8, 64];

#[test]
fn libaio_reads() {
    read_matrix(EngineKind::Libaio, &ASYNC_DEPTHS, &[false, true]);
}

#[test]
fn posixaio_reads() {
    read_matrix(EngineKind::Posixaio, &ASYNC_DEPTHS, &[false, true]);
}

#[test]
fn threadpool_reads() {
    read_matrix(EngineKind::Threadpool, &ASYNC_DEPTHS, &[false, true]);
}

#[test]
fn uring_reads() {
    read_matrix(EngineKind::Uring, &ASYNC_DEPTHS, &[false, true]);
}

#[test]
fn sync_engines_read() {
    for kind in [EngineKind::Pread, EngineKind::Read, EngineKind::Preadv2] {
        read_matrix(kind, &[1], &[false, true]);
    }
    for kind in [EngineKind::Stream, EngineKind::Mmap] {
        read_matrix(kind, &[1], &[false]);
    }
}

#[test]
fn async_engines_write() {
    for kind in [
        EngineKind::Libaio,
        EngineKind::Posixaio,
        EngineKind::Threadpool,
        EngineKind::Uring,
    ] {
        for qd in [1, 16] {
            write_test(kind, qd, false);
            write_test(kind, qd, true);
        }
    }
}

#[test]
fn sync_engines_write() {
    for kind in [EngineKind::Pread, EngineKind::Preadv2] {
        write_test(kind, 1, false);
        write_test(kind, 1, true);
    }
}

#[test]
fn engines_accept_at_most_qd() {
    let dir = tempfile::tempdir().unwrap();
    let path = make_file(dir.path(), "data", SEED);
    let pat = Pattern::new(SEED);
    let qd = 4u32;
    for kind in [
        EngineKind::Libaio,
        EngineKind::Posixaio,
        EngineKind::Threadpool,
        EngineKind::Uring,
    ] {
        let cfg = config(&path, qd, 4096, false, false, EngineOpts::default()).unwrap();
        let mut eng = engine::build(kind, cfg).unwrap();
        // Offer more ops than the depth (distinct buffers for the first qd).
        let ops: Vec<Op> = (0..qd as u64 + 3)
            .map(|i| read_op(i, i * 4096, 4096, (i % qd as u64) as u32))
            .collect();
        let n = eng.submit(&ops).unwrap();
        assert!(n <= qd as usize, "{kind} accepted {n} > qd {qd}");
        assert!(n >= 1, "{kind} accepted nothing");
        let mut done = Vec::new();
        let got = eng.reap(usize::MAX, &mut done).unwrap();
        assert_eq!(got, n, "{kind}: reap(huge) must stop at what is in flight");
        for d in &done {
            let off = d.tag * 4096;
            assert_eq!(d.res, Ok(4096));
            pat.verify(&eng.buf(BufId((d.tag % qd as u64) as u32))[..4096], off)
                .unwrap();
        }
        // Nothing in flight: reap must not block.
        done.clear();
        assert_eq!(eng.reap(1, &mut done).unwrap(), 0);
    }
}

#[test]
fn drop_with_ops_in_flight() {
    let dir = tempfile::tempdir().unwrap();
    let path = make_file(dir.path(), "data", SEED);
    for kind in ASYNC {
        for direct in [false, true] {
            let Some(cfg) = config(&path, 32, 65536, direct, false, EngineOpts::default()) else {
                continue;
            };
            let mut eng = engine::build(kind, cfg).unwrap();
            let ops: Vec<Op> = (0..32u64)
                .map(|i| read_op(i, i * 65536, 65536, i as u32))
                .collect();
            assert!(eng.submit(&ops).unwrap() > 0);
            drop(eng); // must wait for the kernel / helpers, not crash
        }
    }
}

#[test]
fn read_past_eof_is_short_and_errors_are_per_op() {
    let dir = tempfile::tempdir().unwrap();
    let path = make_file(dir.path(), "data", SEED);
    for kind in ASYNC {
        // Read-only file: a write must fail with an errno in Done.res.
        let cfg = config(&path, 2, 8192, false, false, EngineOpts::default()).unwrap();
        let mut eng = engine::build(kind, cfg).unwrap();
        let eof = read_op(1, FILE_LEN - 4096, 8192, 0);
        let n = eng.submit(&[eof]).unwrap();
        assert_eq!(n, 1);
        let mut done = Vec::new();
        eng.reap(1, &mut done).unwrap();
        assert_eq!(done[0].res, Ok(4096), "{kind}: read at EOF is short");
        let w = Op {
            tag: 2,
            kind: OpKind::Write,
            offset: 0,
            buf: BufId(1),
            ..eof
        };
        // Either refused at submit (an Error) or completed with an errno.
        if let Ok(1) = eng.submit(&[w]) {
            done.clear();
            eng.reap(1, &mut done).unwrap();
            assert!(
                done[0].res.is_err(),
                "{kind}: write to a read-only fd must fail"
            );
        }
    }
}

#[test]
fn libaio_buffered_warning() {
    assert!(engine::libaio::buffered_warning(false).is_some());
    assert!(engine::libaio::buffered_warning(true).is_none());
    for k in ["libaio", "posixaio", "threadpool"] {
        let kind: EngineKind = k.parse().unwrap();
        assert_eq!(kind.name(), k);
        assert!(!kind.is_sync() && kind.writes() && kind.supports_direct());
        assert!(EngineKind::ALL.contains(&kind));
    }
}

#[test]
fn bad_ops_are_errors_not_panics() {
    let dir = tempfile::tempdir().unwrap();
    let path = make_file(dir.path(), "data", SEED);
    for kind in ASYNC {
        let cfg = config(&path, 2, 4096, false, false, EngineOpts::default()).unwrap();
        let mut eng = engine::build(kind, cfg).unwrap();
        let good = read_op(0, 0, 4096, 0);
        for bad in [
            Op {
                file: FileId(9),
                ..good
            },
            Op {
                buf: BufId(99),
                ..good
            },
            Op {
                len: 1 << 20,
                ..good
            },
        ] {
            assert!(eng.submit(&[good, bad]).is_err(), "{kind}: bad op accepted");
        }
        // The engine is still usable and nothing leaked.
        assert_eq!(eng.submit(&[good]).unwrap(), 1);
        let mut done = Vec::new();
        assert_eq!(eng.reap(1, &mut done).unwrap(), 1);
        assert_eq!(done[0].res, Ok(4096));
    }
}
