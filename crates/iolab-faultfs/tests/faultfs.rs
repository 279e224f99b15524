//! The fault file system itself: each fault does what it says, seen through
//! plain syscalls, before iolab's tests rely on it.

use iolab::pattern::Pattern;
use iolab_faultfs::{mount_or_skip, FaultFile, Faults};
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::time::Duration;

#[test]
fn serves_the_pattern_and_its_seed() {
    let m = mount_or_skip!(
        "serves_the_pattern_and_its_seed",
        vec![FaultFile::new("ok", 1 << 20, 7)]
    );
    let p = m.path("ok");
    let bytes = std::fs::read(&p).unwrap();
    assert_eq!(bytes.len(), 1 << 20);
    assert_eq!(Pattern::new(7).verify(&bytes, 0), Ok(()));
    assert_eq!(iolab::file::iolab_seed(&p), Some(7));
    assert!(std::fs::metadata(&p).unwrap().is_file());
}

#[test]
fn eio_short_shrink_and_eacces() {
    let eio = Faults {
        eio: Some(64 * 1024..68 * 1024),
        direct_io: true,
        ..Faults::default()
    };
    let short = Faults {
        short_read: Some(1000),
        direct_io: true,
        ..Faults::default()
    };
    let shrink = Faults {
        shrink_after: Some((8192, 4096)),
        direct_io: true,
        ..Faults::default()
    };
    let denied = Faults {
        eacces: true,
        ..Faults::default()
    };
    let m = mount_or_skip!(
        "eio_short_shrink_and_eacces",
        vec![
            FaultFile::new("eio", 1 << 20, 1).with(eio),
            FaultFile::new("short", 1 << 20, 2).with(short),
            FaultFile::new("shrink", 1 << 20, 3).with(shrink),
            FaultFile::new("denied", 4096, 4).with(denied),
        ]
    );
    let f = std::fs::File::open(m.path("eio")).unwrap();
    let mut b = vec![0u8; 4096];
    f.read_exact_at(&mut b, 0).unwrap();
    let e = f.read_at(&mut b, 64 * 1024).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EIO));
    assert_eq!(
        m.stats()
            .first_eio_offset
            .load(std::sync::atomic::Ordering::Relaxed),
        64 * 1024
    );
    f.read_exact_at(&mut b, 68 * 1024).unwrap();

    let f = std::fs::File::open(m.path("short")).unwrap();
    assert_eq!(f.read_at(&mut b, 0).unwrap(), 1000);

    let mut f = std::fs::File::open(m.path("shrink")).unwrap();
    let mut all = Vec::new();
    f.read_to_end(&mut all).unwrap();
    assert!(all.len() < 1 << 20, "read {} bytes", all.len());
    assert_eq!(std::fs::metadata(m.path("shrink")).unwrap().len(), 4096);

    let e = std::fs::File::open(m.path("denied")).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EACCES));
}

#[test]
fn enospc_after_n_bytes_and_stalls_end() {
    let m = mount_or_skip!(
        "enospc_after_n_bytes_and_stalls_end",
        vec![FaultFile::new("slow", 8192, 5).with(Faults {
            enospc_after: Some(10_000),
            stall: Some((0..4096, Duration::from_millis(300))),
            direct_io: true,
            ..Faults::default()
        })]
    );
    let p = m.path("new");
    let e = std::fs::write(&p, vec![1u8; 20_000]).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::ENOSPC));
    std::fs::remove_file(&p).unwrap();
    let t = std::time::Instant::now();
    let f = std::fs::File::open(m.path("slow")).unwrap();
    let mut b = vec![0u8; 4096];
    f.read_exact_at(&mut b, 0).unwrap();
    assert!(t.elapsed() >= Duration::from_millis(300));
    assert_eq!(Pattern::new(5).verify(&b, 0), Ok(()));
}
