//! Loading a whole file into memory: `iolab_reader::read_all`.
//!
//! `cargo run --release --example load_file -- FILE`

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args().nth(1).ok_or("usage: load_file FILE")?;
    let t = std::time::Instant::now();
    let v = iolab_reader::read_all(std::path::Path::new(&path))?;
    let s = t.elapsed().as_secs_f64();
    println!(
        "{} bytes in {:.3} s ({:.0} MiB/s)",
        v.len(),
        s,
        v.len() as f64 / s.max(1e-9) / (1 << 20) as f64
    );
    Ok(())
}
