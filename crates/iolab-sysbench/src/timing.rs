//! Timing: the clock's resolution, the cost of reading it (clock_gettime
//! through the vDSO, RDTSCP) and the overhead of a counted loop.

use super::{keep, Config, Entry, Result, SysError};

use iolab::primitives as prim;

/// Smallest non-zero step seen between consecutive CLOCK_MONOTONIC reads.
pub fn clock_res(cfg: &Config<'_>) -> Result<Entry> {
    let reads = cfg.scale.pick(20_000, 200_000, 1_000_000);
    let stats = cfg.repeat_values(&mut || {
        let mut last = prim::monotonic_ns();
        let mut best = u64::MAX;
        for _ in 0..reads {
            let t = prim::monotonic_ns();
            if t > last {
                best = best.min(t - last);
            }
            last = t;
        }
        if best == u64::MAX {
            return Err(SysError::Unsupported("the clock never advanced".into()));
        }
        Ok(best as f64)
    })?;
    let mut e = Entry::timed(
        "clock_res",
        "timing",
        format!("smallest non-zero difference of {reads} back-to-back clock_gettime(CLOCK_MONOTONIC) reads"), stats);
    if let Ok(r) = prim::monotonic_res_ns() {
        e.notes
            .push(format!("clock_getres(CLOCK_MONOTONIC) = {r} ns"));
    }
    Ok(e)
}

/// Cost of one clock_gettime(CLOCK_MONOTONIC) (vDSO, no kernel entry).
pub fn clock_read(cfg: &Config<'_>) -> Result<Entry> {
    let stats = cfg.repeat_per_op(u64::MAX, &mut || {
        keep(prim::monotonic_ns());
        Ok(())
    })?;
    Ok(Entry::timed(
        "clock_read",
        "timing",
        "loop of clock_gettime(CLOCK_MONOTONIC) calls (served by the vDSO), wall time / calls",
        stats,
    ))
}

/// Cost of one RDTSCP, and the TSC rate.
pub fn rdtscp(cfg: &Config<'_>) -> Result<Entry> {
    let avail = prim::has_rdtscp();
    if prim::rdtscp(avail).is_none() {
        return Err(SysError::Unsupported("this CPU has no RDTSCP".into()));
    }
    let stats = cfg.repeat_per_op(u64::MAX, &mut || {
        keep(prim::rdtscp(avail));
        Ok(())
    })?;
    // TSC ticks per ns over a short interval.
    let (t0, c0) = (prim::monotonic_ns(), prim::rdtscp(avail).unwrap_or(0));
    while prim::monotonic_ns() - t0 < 5_000_000 {}
    let (t1, c1) = (prim::monotonic_ns(), prim::rdtscp(avail).unwrap_or(0));
    let ghz = c1.wrapping_sub(c0) as f64 / (t1 - t0) as f64;
    let mut e = Entry::timed(
        "rdtscp",
        "timing",
        "loop of RDTSCP instructions, wall time / reads",
        stats,
    );
    e.notes.push(format!(
        "TSC runs at {ghz:.3} GHz; one read = {:.0} ticks",
        stats.median * ghz
    ));
    Ok(e)
}

/// Overhead of one iteration of a counted loop with an opaque body.
pub fn loop_overhead(cfg: &Config<'_>) -> Result<Entry> {
    let n: u64 = cfg.scale.pick(1_000_000, 20_000_000, 100_000_000);
    let stats = cfg.repeat_values(&mut || {
        let t = prim::monotonic_ns();
        for i in 0..n {
            keep(i);
        }
        Ok((prim::monotonic_ns() - t) as f64 / n as f64)
    })?;
    Ok(Entry::timed(
        "loop",
        "timing",
        format!("{n} iterations of a loop whose body is black_box(i), wall time / iterations"),
        stats,
    ))
}
