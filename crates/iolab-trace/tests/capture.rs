//! Records a real child process under real strace and checks the trace
//! holds exactly the reads it made, in order, per thread.
//!
//! The child is this test binary itself, run again with
//! `IOLAB_TRACE_CHILD=DIR` so that [`child_process_body`] does its reads:
//! `read`, `lseek`, `pread64`, a duplicated descriptor (`fcntl
//! F_DUPFD_CLOEXEC`, what `File::try_clone` uses) sharing the offset,
//! `readv`, and a second thread reading another file.

use iolab_trace::{capture as record, Trace, TraceOp};
use std::io::{IoSliceMut, Read, Seek, SeekFrom};
use std::os::unix::fs::FileExt;
use std::path::Path;

const ENV: &str = "IOLAB_TRACE_CHILD";

/// The reads the recorded child makes (does nothing unless run as the child).
#[test]
fn child_process_body() {
    let Some(dir) = std::env::var_os(ENV) else {
        return;
    };
    let dir = Path::new(&dir);
    let mut a = std::fs::File::open(dir.join("a.dat")).unwrap();
    let mut buf = vec![0u8; 4096];
    assert_eq!(a.read(&mut buf[..100]).unwrap(), 100); // read 0+100
    a.seek(SeekFrom::Start(1000)).unwrap(); // lseek
    assert_eq!(a.read(&mut buf[..50]).unwrap(), 50); // read 1000+50
    assert_eq!(a.read_at(&mut buf[..200], 5000).unwrap(), 200); // pread64 5000+200
    let mut b = a.try_clone().unwrap(); // fcntl(F_DUPFD_CLOEXEC)
    assert_eq!(b.read(&mut buf[..10]).unwrap(), 10); // read 1050+10, shared offset
    let (x, y) = buf.split_at_mut(20);
    let n = a
        .read_vectored(&mut [IoSliceMut::new(x), IoSliceMut::new(&mut y[..30])])
        .unwrap();
    assert_eq!(n, 50); // readv 1060+50
    b.seek(SeekFrom::Current(100)).unwrap(); // lseek on the duplicate: 1210
    drop(b);
    assert_eq!(a.read(&mut buf[..5]).unwrap(), 5); // read 1210+5
    let d = dir.to_path_buf();
    std::thread::spawn(move || {
        let mut c = std::fs::File::open(d.join("b.dat")).unwrap();
        let mut buf = vec![0u8; 4096];
        c.read_exact(&mut buf).unwrap(); // read 0+4096
        c.read_exact(&mut buf).unwrap(); // read 4096+4096
    })
    .join()
    .unwrap();
}

fn reads_of(t: &Trace, name: &str) -> Vec<(u64, u64, TraceOp, u64)> {
    t.reads
        .iter()
        .filter(|r| t.files[r.file as usize].ends_with(name))
        .map(|r| (r.offset, r.len, r.op, r.thread))
        .collect()
}

#[test]
fn records_exactly_the_reads_of_a_real_child() {
    iolab::require!(
        record::find_strace().is_some(),
        "strace is not installed (scripts/setup.sh installs it)"
    );
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("a.dat"), vec![7u8; 8192]).unwrap();
    std::fs::write(d.path().join("b.dat"), vec![9u8; 8192]).unwrap();
    let log = d.path().join("strace.log");
    let exe = std::env::current_exe().unwrap();
    // The child inherits this variable; no other test of this binary reads it.
    std::env::set_var(ENV, d.path());
    let r = record::record(
        &[
            exe.into_os_string(),
            "--exact".into(),
            "child_process_body".into(),
            "--test-threads=1".into(),
            "--quiet".into(),
        ],
        &log,
    );
    std::env::remove_var(ENV);
    if let Err(e) = &r {
        let e = e.to_string();
        iolab::require!(
            !e.contains("strace wrote nothing"),
            "strace cannot trace here: {e}"
        );
    }
    let r = r.unwrap();
    assert_eq!(r.status, Some(0), "the child failed");
    let t = r.trace;
    let a = reads_of(&t, "/a.dat");
    let ta = a[0].3;
    use TraceOp::*;
    assert_eq!(
        a,
        vec![
            (0, 100, Read, ta),
            (1000, 50, Read, ta),
            (5000, 200, Pread, ta),
            (1050, 10, Read, ta),
            (1060, 50, Readv, ta),
            (1210, 5, Read, ta),
        ]
    );
    let b = reads_of(&t, "/b.dat");
    assert_eq!(b.len(), 2, "{b:?}");
    let tb = b[0].3;
    assert_ne!(tb, ta, "the second thread's reads carry its own thread id");
    assert_eq!(b, vec![(0, 4096, Read, tb), (4096, 4096, Read, tb)]);
    // Paths are the real (absolute) ones, and times increase per thread.
    assert!(t
        .files
        .iter()
        .any(|f| f.starts_with('/') && f.ends_with("/a.dat")));
    let times: Vec<u64> = t
        .reads
        .iter()
        .filter(|r| r.thread == ta)
        .filter_map(|r| r.t_ns)
        .collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]));
}
