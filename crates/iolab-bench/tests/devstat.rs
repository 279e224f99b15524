//! The device counters on the real disk: 8 MiB read with O_DIRECT moves the
//! device's read-sector counter by at least 8 MiB.

use iolab::buf::AlignedBuf;
use iolab::file::{create_pattern_file, open, OpenSpec};
use iolab::pattern::Pattern;
use iolab_bench::devstat::{device_name_of, Snapshot};
use std::os::unix::fs::FileExt;
use std::sync::atomic::AtomicBool;

use iolab::require;

#[test]
fn o_direct_reads_move_the_sector_counter_by_at_least_their_size() {
    // Next to the build, on the disk this checkout lives on.
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let p = dir.path().join("f");
    let size = 8u64 << 20;
    create_pattern_file(
        &p,
        size,
        Pattern::new(5),
        false,
        &AtomicBool::new(false),
        &mut |_| {},
    )
    .unwrap();
    require!(
        device_name_of(&p).is_some(),
        "the build directory is on no block device"
    );
    let f = match open(
        &p,
        OpenSpec {
            direct: true,
            write: false,
        },
    ) {
        Ok(f) => f,
        Err(e) => {
            require!(false, "O_DIRECT refused here: {e}");
            unreachable!()
        }
    };
    let mut buf = AlignedBuf::new(1 << 20, 4096).unwrap();
    let snap = Snapshot::of_file(&p);
    let mut off = 0;
    while off < size {
        let n = f.read_at(&mut buf, off).unwrap();
        assert_eq!(n, 1 << 20);
        off += n as u64;
    }
    let v = snap.finish();
    assert_eq!(v.note, None);
    let d = &v.devices[0];
    assert!(
        d.read_bytes >= size,
        "{}: {} bytes read by the device for {size} read with O_DIRECT",
        d.device,
        d.read_bytes
    );
    assert!(
        d.read_ios >= 8 && d.rareq_sz_kib > 0.0 && d.interval_ns > 0,
        "{d:?}"
    );
}
