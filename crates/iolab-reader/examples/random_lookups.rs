//! Random lookups in a large file through one shared `Reader` (Auto picks
//! the technique per request), from several threads, then a batch with
//! `read_many`.
//!
//! `cargo run --release --example random_lookups -- FILE`

use iolab_reader::{Options, ReadReq, Reader};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .ok_or("usage: random_lookups FILE")?;
    let r = Reader::open(&path, Options::default())?;
    let len = r.len()?;
    if len < 4096 {
        return Err("the file is smaller than one 4 KiB record".into());
    }
    let records = len / 4096;
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let r = &r;
            s.spawn(move || {
                let mut buf = [0u8; 4096];
                let mut x = t + 1;
                for _ in 0..1000 {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                    let rec = (x >> 16) % records;
                    r.read_exact_at(rec * 4096, &mut buf).expect("read");
                }
            });
        }
    });
    let mut bufs = vec![[0u8; 4096]; 64];
    let mut reqs: Vec<ReadReq<'_>> = bufs
        .iter_mut()
        .enumerate()
        .map(|(i, b)| ReadReq::new((i as u64 * 7919 % records) * 4096, b))
        .collect();
    r.read_many(&mut reqs);
    let ok = reqs
        .iter()
        .filter(|q| matches!(q.result, Some(Ok(4096))))
        .count();
    println!("4000 lookups from 4 threads, then a batch of 64: {ok} complete");
    Ok(())
}
