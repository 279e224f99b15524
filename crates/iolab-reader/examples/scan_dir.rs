//! Scanning a directory of files: each file read whole on the fastest path
//! (`iolab_reader::read_whole_with`), its XOR printed.
//!
//! `cargo run --release --example scan_dir -- DIR`

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args().nth(1).ok_or("usage: scan_dir DIR")?;
    let plan = iolab_reader::WholePlan::default();
    for e in std::fs::read_dir(&dir)? {
        let p = e?.path();
        if !p.is_file() {
            continue;
        }
        let mut x = 0u32;
        match iolab_reader::read_whole_with(&p, &plan, &mut |_, b| {
            x ^= iolab_reader::xor::xor32(b);
            true
        }) {
            Ok(st) => println!("{x:#010x} {:>12} {}", st.bytes, p.display()),
            Err(e) => eprintln!("{e}"),
        }
    }
    Ok(())
}
