//! io_uring options really take effect: registered files and fixed buffers
//! change the opcodes the engine issues, and the data is still right.

use iolab::buf::BufId;
use iolab::engine::{
    self, EngineConfig, EngineFile, EngineKind, EngineOpts, FileId, Op, OpKind, UringOpts,
};
use iolab::file::{create_pattern_file, open, OpenSpec};
use iolab::pattern::Pattern;
use std::sync::atomic::AtomicBool;

fn engine_with(opts: UringOpts, path: &std::path::Path, qd: u32) -> Box<dyn engine::Engine> {
    try_engine(opts, path, qd).unwrap()
}

fn try_engine(
    opts: UringOpts,
    path: &std::path::Path,
    qd: u32,
) -> iolab::error::Result<Box<dyn engine::Engine>> {
    let cfg = EngineConfig {
        files: vec![EngineFile {
            path: path.to_path_buf(),
            file: open(path, OpenSpec::default()).unwrap(),
            len: 1 << 20,
        }],
        qd,
        max_len: 4096,
        mem_align: 4096,
        direct: false,
        opts: EngineOpts {
            uring: opts,
            ..Default::default()
        },
    };
    engine::build(EngineKind::Uring, cfg)
}

/// A 1 MiB file of pattern `seed` in `dir`.
fn pattern_file(dir: &std::path::Path, seed: u64) -> (std::path::PathBuf, Pattern) {
    let p = dir.join("f");
    let pat = Pattern::new(seed);
    create_pattern_file(
        &p,
        1 << 20,
        pat,
        false,
        &AtomicBool::new(false),
        &mut |_| {},
    )
    .unwrap();
    (p, pat)
}

#[test]
fn fixed_buffers_and_registered_files_are_used_and_read_right() {
    let d = tempfile::tempdir().unwrap();
    let (p, pat) = pattern_file(d.path(), 3);
    for (fixed_bufs, reg_files) in [(false, false), (true, false), (false, true), (true, true)] {
        let mut e = engine_with(
            UringOpts {
                fixed_bufs,
                reg_files,
                ..Default::default()
            },
            &p,
            8,
        );
        let ops: Vec<Op> = (0..8u32)
            .map(|i| Op {
                tag: i as u64,
                kind: OpKind::Read,
                file: FileId(0),
                offset: (i as u64 * 37 % 256) * 4096,
                len: 4096,
                buf: BufId(i),
            })
            .collect();
        assert_eq!(e.submit(&ops).unwrap(), 8);
        let mut done = Vec::new();
        while done.len() < 8 {
            e.reap(1, &mut done).unwrap();
        }
        for d in &done {
            assert_eq!(d.res, Ok(4096));
            let op = ops[d.tag as usize];
            assert!(pat.verify(&e.buf(op.buf)[..4096], op.offset).is_ok());
        }
        if fixed_bufs {
            // The kernel copies into registered buffers page by page.
            assert_eq!(e.pool().backing().slot_offset, 0, "slots start on a page");
        }
        let s = e.stats();
        assert_eq!(s.fixed_buf_ops, if fixed_bufs { 8 } else { 0 }, "{s:?}");
        assert_eq!(s.fixed_file_ops, if reg_files { 8 } else { 0 }, "{s:?}");
        assert!(s.enter_calls >= 1);
    }
}

/// An SQPOLL ring over `p` waiting as `wait` asks; None (SKIPPED, or a
/// failure under CI=true) where the kernel refuses SQPOLL.
fn sqpoll_engine(
    test: &str,
    p: &std::path::Path,
    qd: u32,
    wait: iolab::engine::SqpollWait,
) -> Option<Box<dyn engine::Engine>> {
    let opts = UringOpts {
        sqpoll: true,
        sqpoll_wait: wait,
        ..Default::default()
    };
    match try_engine(opts, p, qd) {
        Ok(e) => Some(e),
        Err(err) => {
            assert!(std::env::var("CI").as_deref() != Ok("true"), "{err}");
            eprintln!("SKIPPED: {test}: {err}");
            None
        }
    }
}

#[test]
fn sqpoll_always_registers_the_files() {
    let d = tempfile::tempdir().unwrap();
    let (p, pat) = pattern_file(d.path(), 4);
    let wait = iolab::engine::SqpollWait::default();
    let Some(mut e) = sqpoll_engine("sqpoll_always_registers_the_files", &p, 4, wait) else {
        return;
    };
    let ops: Vec<Op> = (0..4u32)
        .map(|i| Op {
            tag: i as u64,
            kind: OpKind::Read,
            file: FileId(0),
            offset: i as u64 * 8192,
            len: 4096,
            buf: BufId(i),
        })
        .collect();
    let mut done = Vec::new();
    e.submit_and_reap(&ops, 4, &mut done).unwrap();
    while done.len() < 4 {
        e.reap(1, &mut done).unwrap();
    }
    for d in &done {
        assert_eq!(d.res, Ok(4096));
        let op = ops[d.tag as usize];
        assert!(pat.verify(&e.buf(op.buf)[..4096], op.offset).is_ok());
    }
    assert_eq!(e.stats().fixed_file_ops, 4, "{:?}", e.stats());
}

#[test]
fn sqpoll_waits_spin_or_sleep_as_asked_and_read_right() {
    use iolab::engine::SqpollWait;
    let d = tempfile::tempdir().unwrap();
    let (p, pat) = pattern_file(d.path(), 5);
    for mode in [SqpollWait::Spin, SqpollWait::Sleep] {
        let test = "sqpoll_waits_spin_or_sleep_as_asked_and_read_right";
        let Some(mut e) = sqpoll_engine(test, &p, 1, mode) else {
            return;
        };
        // One op at a time: each reap finds its op still in flight (the SQ
        // thread has yet to pick it up) and must wait for it.
        for i in 0..16u64 {
            let op = Op {
                tag: i,
                kind: OpKind::Read,
                file: FileId(0),
                offset: (i * 13 % 256) * 4096,
                len: 4096,
                buf: BufId(0),
            };
            let mut done = Vec::new();
            e.submit_and_reap(&[op], 1, &mut done).unwrap();
            assert_eq!(done.len(), 1);
            assert_eq!(done[0].res, Ok(4096));
            assert!(pat.verify(&e.buf(BufId(0))[..4096], op.offset).is_ok());
        }
        // Spinning was tried (met, or given up when a loaded machine left
        // the SQ thread no CPU), or never.
        let s = e.stats();
        match mode {
            SqpollWait::Spin => assert!(s.spin_waits + s.starved_spins >= 1, "{s:?}"),
            _ => assert_eq!(s.spin_waits + s.starved_spins, 0, "{s:?}"),
        }
    }
}

#[test]
fn the_ring_descriptor_is_registered_for_the_thread_that_drives_it() {
    let d = tempfile::tempdir().unwrap();
    let (p, pat) = pattern_file(d.path(), 5);
    let cfg = EngineConfig {
        files: vec![EngineFile {
            path: p.clone(),
            file: open(&p, OpenSpec::default()).unwrap(),
            len: 1 << 20,
        }],
        qd: 4,
        max_len: 4096,
        mem_align: 4096,
        direct: false,
        opts: EngineOpts::default(),
    };
    let mut e = iolab::engine::uring::Uring::new(cfg).unwrap();
    iolab::require!(
        e.ring_registered(),
        "this kernel cannot register a ring descriptor (5.18+)"
    );
    let op = Op {
        tag: 7,
        kind: OpKind::Read,
        file: FileId(0),
        offset: 12288,
        len: 4096,
        buf: BufId(2),
    };
    let mut done = Vec::new();
    engine::Engine::submit_and_reap(&mut e, &[op], 1, &mut done).unwrap();
    assert_eq!((done[0].tag, done[0].res), (7, Ok(4096)));
    pat.verify(&engine::Engine::buf(&e, BufId(2))[..4096], 12288)
        .unwrap();
    // The registration is this thread's: another one would not use it.
    std::thread::scope(|s| {
        s.spawn(|| assert!(!e.ring_registered()));
    });
}

#[test]
fn nops_name_the_file_and_buffer_and_complete_with_the_length() {
    let d = tempfile::tempdir().unwrap();
    let (p, _) = pattern_file(d.path(), 6);
    for (fixed_bufs, reg_files) in [(false, false), (true, true)] {
        let opts = UringOpts {
            nop: true,
            fixed_bufs,
            reg_files,
            ..Default::default()
        };
        let e = try_engine(opts, &p, 8);
        let why = e.as_ref().err().map(|e| e.to_string()).unwrap_or_default();
        iolab::require!(e.is_ok(), "{why}");
        let mut e = e.unwrap();
        assert!(!e.caps().fills_buffer, "a NOP moves no bytes");
        e.buf_mut(BufId(3)).fill(0xa5);
        let ops: Vec<Op> = (0..8u32)
            .map(|i| Op {
                tag: 100 + i as u64,
                kind: if i % 2 == 0 {
                    OpKind::Read
                } else {
                    OpKind::Write
                },
                file: FileId(0),
                offset: i as u64 * 4096,
                len: 512 * (i + 1),
                buf: BufId(i),
            })
            .collect();
        let mut done = Vec::new();
        assert_eq!(e.submit_and_reap(&ops, 8, &mut done).unwrap().0, 8);
        done.sort_by_key(|d| d.tag);
        for (d, op) in done.iter().zip(&ops) {
            assert_eq!((d.tag, d.res), (op.tag, Ok(op.len)), "{fixed_bufs}");
        }
        assert!(
            e.buf(BufId(3)).iter().all(|b| *b == 0xa5),
            "buffer untouched"
        );
        assert_eq!(e.stats().fixed_buf_ops, if fixed_bufs { 8 } else { 0 });
    }
}
