//! Tasks: creating threads and processes, and switching between them.
//!
//! The context-switch measurements pass one byte back and forth over two
//! pipes between two threads (or two processes), either both pinned to one
//! CPU, so each hand-off is a real switch, or pinned to two CPUs, so each is
//! a cross-CPU wake-up. As lmbench does, the cost of the pipe itself is
//! measured within one thread (write a byte to a pipe, read it back) and
//! subtracted: switch = (round trip - 2 x pipe overhead) / 2.

use super::{io_err, keep, Config, Entry, Result, SysError};
use iolab::primitives as prim;
use iolab_bench::stats::Stats;
use std::fs::File;
use std::io::{Read, Write};
use std::path::Path;

/// Thread create + join.
pub fn thread(cfg: &Config<'_>) -> Result<Entry> {
    let stats = cfg.repeat_per_op(cfg.scale.pick(200, 5_000, 20_000), &mut || {
        let h = std::thread::Builder::new()
            .spawn(|| keep(1u64))
            .map_err(io_err("spawn a thread"))?;
        keep(h.join().unwrap_or(0));
        Ok(())
    })?;
    Ok(Entry::timed(
        "thread",
        "tasks",
        "std::thread spawn of an empty closure, then join (clone + exit + futex wake)",
        stats,
    ))
}

/// fork + _exit + waitpid.
pub fn fork(cfg: &Config<'_>) -> Result<Entry> {
    let stats = cfg.repeat_per_op(cfg.scale.pick(50, 1_000, 3_000), &mut || {
        prim::fork_exit_wait()?;
        Ok(())
    })?;
    let mut e = Entry::new(
        "fork",
        "tasks",
        "fork(); the child calls _exit(0) at once; the parent waitpid()s",
    );
    e.time_ns = Some(stats);
    Ok(e)
}

/// posix_spawn of /bin/true + waitpid.
pub fn spawn(cfg: &Config<'_>) -> Result<Entry> {
    let prog = ["/bin/true", "/usr/bin/true"]
        .into_iter()
        .map(Path::new)
        .find(|p| p.exists())
        .ok_or_else(|| SysError::Unsupported("no /bin/true to spawn".into()))?;
    let stats = cfg.repeat_per_op(cfg.scale.pick(20, 300, 1_000), &mut || {
        let s = prim::spawn_wait(prog)?;
        if s != 0 {
            return Err(SysError::Unsupported(format!(
                "{} exited with {s}",
                prog.display()
            )));
        }
        Ok(())
    })?;
    Ok(Entry::timed(
        "spawn",
        "tasks",
        format!(
            "posix_spawn({}) with an empty environment, then waitpid (exec + dynamic loading included)",
            prog.display()
        ), stats))
}

fn one_byte(mut w: &File, mut r: &File) -> Result<()> {
    let mut b = [0u8];
    w.write_all(&[1]).map_err(io_err("write pipe"))?;
    r.read_exact(&mut b).map_err(io_err("read pipe"))?;
    Ok(())
}

/// Ns per write+read of one byte on one pipe, within one thread.
fn pipe_overhead(rounds: u64) -> Result<f64> {
    let (r, w) = prim::pipe()?;
    for _ in 0..rounds / 10 {
        one_byte(&w, &r)?;
    }
    let t = prim::monotonic_ns();
    for _ in 0..rounds {
        one_byte(&w, &r)?;
    }
    Ok((prim::monotonic_ns() - t) as f64 / rounds as f64)
}

struct PingPong {
    switch: Vec<f64>,
    rtt: Vec<f64>,
    hop: Vec<f64>,
}

/// Runs the ping-pong between this side, pinned to `cpus.0`, and an echo
/// thread or process (`procs`) pinned to `cpus.1`.
fn ping_pong(cfg: &Config<'_>, procs: bool, cpus: (usize, usize)) -> Result<PingPong> {
    let rounds: u64 = cfg.scale.pick(300, 5_000, 20_000);
    let warm = rounds / 10;
    let reps = cfg.reps();
    let total = warm + rounds * reps as u64;
    std::thread::scope(|s| {
        // The measuring side runs on its own thread so pinning does not leak.
        let h = s.spawn(|| -> Result<PingPong> {
            prim::pin_to_cpu(cpus.0)?;
            let (to_r, to_w) = prim::pipe()?;
            let (back_r, back_w) = prim::pipe()?;
            let mut child = None;
            let mut echo = None;
            if procs {
                child = Some(prim::EchoProcess::start(
                    &to_r,
                    &back_w,
                    total,
                    Some(cpus.1),
                )?);
            } else {
                let other = cpus.1;
                echo = Some(s.spawn(move || echo_bytes(&to_r, &back_w, total, other)));
            }
            let res = timed_rounds(cfg, &to_w, &back_r, warm, rounds);
            // On error the pipes close and the partner ends with EOF.
            drop((to_w, back_r));
            if let Some(c) = child {
                if res.is_ok() {
                    c.wait()?;
                }
            }
            if let Some(h) = echo {
                let r = h.join().unwrap_or(Ok(()));
                if res.is_ok() {
                    r?;
                }
            }
            res
        });
        h.join()
            .unwrap_or_else(|_| Err(SysError::Unsupported("ping-pong thread panicked".into())))
    })
}

/// The echo thread's side, pinned to `cpu`: reads each byte from `r` and
/// writes it back to `w`, `total` times.
fn echo_bytes(mut r: &File, mut w: &File, total: u64, cpu: usize) -> Result<()> {
    prim::pin_to_cpu(cpu)?;
    let mut b = [0u8];
    for _ in 0..total {
        r.read_exact(&mut b).map_err(io_err("read pipe"))?;
        w.write_all(&b).map_err(io_err("write pipe"))?;
    }
    Ok(())
}

/// The measuring side: `warm` round trips over `w` then `r`, then per
/// repeat `rounds` timed ones and the in-thread pipe overhead.
fn timed_rounds(cfg: &Config<'_>, w: &File, r: &File, warm: u64, rounds: u64) -> Result<PingPong> {
    let mut out = PingPong {
        switch: vec![],
        rtt: vec![],
        hop: vec![],
    };
    for _ in 0..warm {
        one_byte(w, r)?;
    }
    for _ in 0..cfg.reps() {
        cfg.check_stop()?;
        let t = prim::monotonic_ns();
        for _ in 0..rounds {
            one_byte(w, r)?;
        }
        let rtt = (prim::monotonic_ns() - t) as f64 / rounds as f64;
        let hop = pipe_overhead(rounds)?;
        out.rtt.push(rtt);
        out.hop.push(hop);
        out.switch.push((rtt - 2.0 * hop) / 2.0);
    }
    Ok(out)
}

fn ctx(cfg: &Config<'_>, name: &str, procs: bool, two: bool) -> Result<Entry> {
    let allowed = prim::allowed_cpus()?;
    let c0 = allowed[0];
    let c1 = if two {
        *allowed
            .get(1)
            .ok_or_else(|| SysError::Unsupported("only one CPU is available".into()))?
    } else {
        c0
    };
    let pp = ping_pong(cfg, procs, (c0, c1))?;
    let who = if procs { "processes" } else { "threads" };
    let place = if two {
        format!("pinned to CPUs {c0} and {c1} (a cross-CPU wake-up, not a switch on one CPU)")
    } else {
        format!("both pinned to CPU {c0}")
    };
    let mut e = Entry::new(
        name,
        "tasks",
        format!(
            "1-byte pipe ping-pong between two {who}, {place}; (round trip - 2 x in-thread pipe write+read) / 2"
        ),
    );
    e.time_ns = Some(Stats::of(&pp.switch));
    e.notes.push(format!(
        "round trip {:.0} ns, pipe write+read in one thread {:.0} ns (medians)",
        Stats::of(&pp.rtt).median,
        Stats::of(&pp.hop).median
    ));
    Ok(e)
}

/// Context switch between two threads on one CPU.
pub fn ctx_thread_1cpu(cfg: &Config<'_>) -> Result<Entry> {
    ctx(cfg, "ctx_thread_1cpu", false, false)
}
/// Hand-off between two threads on two CPUs.
pub fn ctx_thread_2cpu(cfg: &Config<'_>) -> Result<Entry> {
    ctx(cfg, "ctx_thread_2cpu", false, true)
}
/// Context switch between two processes on one CPU.
pub fn ctx_proc_1cpu(cfg: &Config<'_>) -> Result<Entry> {
    ctx(cfg, "ctx_proc_1cpu", true, false)
}
/// Hand-off between two processes on two CPUs.
pub fn ctx_proc_2cpu(cfg: &Config<'_>) -> Result<Entry> {
    ctx(cfg, "ctx_proc_2cpu", true, true)
}
