//! Mounts a fault file system for manual exploration and prints its path;
//! stays mounted for the number of seconds given (default 60).
//! Files: ok (healthy), eio (EIO at 1 MiB..1 MiB+4 KiB), short (reads of at
//! most 1000 bytes), shrink (becomes 64 KiB after 256 KiB read), stall (first
//! 4 KiB stalls 30 s), denied (EACCES); each 4 MiB, direct I/O unless
//! the name ends in "-cached".
use iolab_faultfs::{FaultFile, Faults, Mounted};
use std::time::Duration;

fn main() {
    let secs: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    let size = 4 << 20;
    let mut files = Vec::new();
    for direct in [true, false] {
        let sfx = if direct { "" } else { "-cached" };
        let d = Faults {
            direct_io: direct,
            ..Faults::default()
        };
        files.push(FaultFile::new(&format!("ok{sfx}"), size, 1).with(d.clone()));
        files.push(FaultFile::new(&format!("eio{sfx}"), size, 2).with(Faults {
            eio: Some((1 << 20)..(1 << 20) + 4096),
            ..d.clone()
        }));
        files.push(
            FaultFile::new(&format!("short{sfx}"), size, 3).with(Faults {
                short_read: Some(1000),
                ..d.clone()
            }),
        );
        files.push(
            FaultFile::new(&format!("shrink{sfx}"), size, 4).with(Faults {
                shrink_after: Some((256 << 10, 64 << 10)),
                ..d.clone()
            }),
        );
        files.push(
            FaultFile::new(&format!("stall{sfx}"), size, 5).with(Faults {
                stall: Some((0..4096, Duration::from_secs(30))),
                ..d.clone()
            }),
        );
        files.push(
            FaultFile::new(&format!("denied{sfx}"), size, 6).with(Faults {
                eacces: true,
                ..d.clone()
            }),
        );
    }
    let m = Mounted::mount(files).expect("mount");
    println!("{}", m.dir().display());
    std::thread::sleep(Duration::from_secs(secs));
}
