//! Page faults: minor (first write to anonymous memory from mmap) and major
//! (first read of a page of a file mapping whose pages were evicted), per
//! page, with the kernel's own fault counts (getrusage) as a check.

use super::{io_err, keep, temp_dir, Config, Entry, Result, SysError};
use iolab::primitives as prim;
use iolab::usage::Usage;
use iolab_bench::stats::Stats;
use std::io::Write;

const MIB: usize = 1024 * 1024;

/// A fault measurement's entry: time per page, and the kernel's own count
/// of the faults (`counted`: how many, for how many pages) as a check.
fn fault_entry(name: &str, how: String, per_page: Stats, counted: String) -> Entry {
    let kind = name.trim_start_matches("fault_");
    let mut e = Entry::timed(name, "faults", how, per_page);
    e.notes.push(format!(
        "{kind} faults counted per pass (getrusage): {counted}"
    ));
    e
}

/// Minor page fault: first touch of anonymous memory.
pub fn minor(cfg: &Config<'_>) -> Result<Entry> {
    let len = cfg.scale.pick(8 * MIB, 64 * MIB, 256 * MIB);
    let page = iolab::usage::page_size();
    let pages = len / page;
    let mut faults = Vec::new();
    let stats = cfg.repeat_values(&mut || {
        let mut m = prim::AnonMemory::new(len, true)?;
        let b = m.bytes_mut();
        let u0 = Usage::now();
        let t = prim::monotonic_ns();
        for i in (0..len).step_by(page) {
            b[i] = 1;
        }
        let dt = prim::monotonic_ns() - t;
        faults.push(Usage::now().since(&u0).minor_faults as f64);
        keep(&*b);
        Ok(dt as f64 / pages as f64)
    })?;
    let how = format!(
        "mmap {} MiB anonymous (MADV_NOHUGEPAGE), write one byte per 4 KiB page; time / pages",
        len / MIB
    );
    let counted = format!("{:.0} for {pages} pages", Stats::of(&faults).median);
    Ok(fault_entry("fault_minor", how, stats, counted))
}

/// Major page fault: first touch of each page of an evicted file mapping.
pub fn major(cfg: &Config<'_>) -> Result<Entry> {
    let len = cfg.scale.pick(4 * MIB, 16 * MIB, 64 * MIB);
    let page = iolab::usage::page_size();
    let pages = len / page;
    let dir = temp_dir(cfg)?;
    let path = dir.path().join("faults");
    {
        let mut f = std::fs::File::create(&path).map_err(io_err("create fault file"))?;
        let chunk: Vec<u8> = (0..MIB).map(|i| (i % 251) as u8 + 1).collect();
        for _ in 0..len / MIB {
            f.write_all(&chunk).map_err(io_err("write fault file"))?;
        }
        f.sync_all().map_err(io_err("fsync fault file"))?;
    }
    let mut faults = Vec::new();
    let mut resident = Vec::new();
    let stats = cfg.repeat_values(&mut || {
        iolab::cache::evict(&path)?;
        let r = iolab::cache::residency(&path, len as u64)?;
        resident.push(r.fraction());
        if r.fraction() > 0.05 {
            return Err(SysError::Unsupported(format!(
                "could not evict the file ({:.0}% still cached)",
                r.fraction() * 100.0
            )));
        }
        let f = std::fs::File::open(&path).map_err(io_err("open fault file"))?;
        let m = prim::FileMapping::new_random(&f, len)?;
        let b = m.bytes();
        let u0 = Usage::now();
        let t = prim::monotonic_ns();
        let mut sum = 0u8;
        for i in (0..len).step_by(page) {
            sum = sum.wrapping_add(keep(b[i]));
        }
        let dt = prim::monotonic_ns() - t;
        faults.push(Usage::now().since(&u0).major_faults as f64);
        keep(sum);
        Ok(dt as f64 / pages as f64)
    })?;
    drop(dir);
    let how = format!(
        "{} MiB file written, fsync, POSIX_FADV_DONTNEED (checked with mincore), mmap with MADV_RANDOM (no read-ahead), read one byte per page; time / pages",
        len / MIB
    );
    let counted = format!(
        "{:.0} for {pages} pages; resident before: {:.1}%",
        Stats::of(&faults).median,
        Stats::of(&resident).max * 100.0
    );
    Ok(fault_entry("fault_major", how, stats, counted))
}
