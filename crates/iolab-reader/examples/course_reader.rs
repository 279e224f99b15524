//! The course's parallel reader (study 002): 8 threads, each reading
//! 32 KiB blocks with `pread`, thread k taking blocks k, k+8, k+16, ...;
//! prints the XOR of the file's 4-byte words. `scripts/vs-cat.sh` races
//! `iolab cat` against it.
//!
//! `cargo run --release --example course_reader -- FILE [THREADS] [BLOCK]`

use std::os::unix::fs::FileExt;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(path) = args.get(1) else {
        eprintln!("usage: course_reader FILE [THREADS] [BLOCK_BYTES]");
        std::process::exit(2);
    };
    let threads: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(8);
    let block: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(32 << 10);
    let f = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("course_reader: {path}: {e}");
            std::process::exit(2);
        }
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let blocks = len.div_ceil(block as u64);
    let x = std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|k| {
                let f = &f;
                s.spawn(move || {
                    let mut buf = vec![0u8; block];
                    let mut x = 0u32;
                    let mut b = k;
                    while b < blocks {
                        let n = f.read_at(&mut buf, b * block as u64).unwrap_or(0);
                        x ^= iolab_reader::xor::xor32(&buf[..n]);
                        b += threads;
                    }
                    x
                })
            })
            .collect();
        hs.into_iter().fold(0u32, |a, h| a ^ h.join().unwrap_or(0))
    });
    println!("{x:#010x}");
}
