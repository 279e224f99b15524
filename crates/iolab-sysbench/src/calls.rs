//! Calls: a procedure call with 0 to 7 arguments (never inlined, arguments
//! opaque), and system calls that do little work in the kernel.

use super::{io_err, keep, Config, Entry, Result};
use iolab::primitives as prim;
use std::io::{Read, Write};

#[inline(never)]
fn f0() -> u64 {
    keep(0)
}
#[inline(never)]
fn f1(a: u64) -> u64 {
    keep(a)
}
#[inline(never)]
fn f2(a: u64, b: u64) -> u64 {
    keep(a ^ b)
}
#[inline(never)]
fn f3(a: u64, b: u64, c: u64) -> u64 {
    keep(a ^ b ^ c)
}
#[inline(never)]
fn f4(a: u64, b: u64, c: u64, d: u64) -> u64 {
    keep(a ^ b ^ c ^ d)
}
#[inline(never)]
fn f5(a: u64, b: u64, c: u64, d: u64, e: u64) -> u64 {
    keep(a ^ b ^ c ^ d ^ e)
}
#[inline(never)]
fn f6(a: u64, b: u64, c: u64, d: u64, e: u64, f: u64) -> u64 {
    keep(a ^ b ^ c ^ d ^ e ^ f)
}
#[allow(clippy::too_many_arguments)]
#[inline(never)]
fn f7(a: u64, b: u64, c: u64, d: u64, e: u64, f: u64, g: u64) -> u64 {
    keep(a ^ b ^ c ^ d ^ e ^ f ^ g)
}

fn call(cfg: &Config<'_>, args: usize, f: &mut dyn FnMut()) -> Result<Entry> {
    let stats = cfg.repeat_per_op(u64::MAX, &mut || {
        f();
        Ok(())
    })?;
    let name = format!("call{args}");
    let mut e = Entry::new(
        &name,
        "calls",
        format!(
            "loop calling an #[inline(never)] function of {args} u64 argument(s) passed through black_box; includes the loop overhead (see `loop`)"
        ),
    );
    e.time_ns = Some(stats);
    Ok(e)
}

/// Procedure call, 0 arguments.
pub fn call0(cfg: &Config<'_>) -> Result<Entry> {
    call(cfg, 0, &mut || {
        keep(f0());
    })
}
/// Procedure call, 1 argument.
pub fn call1(cfg: &Config<'_>) -> Result<Entry> {
    call(cfg, 1, &mut || {
        keep(f1(keep(1)));
    })
}
/// Procedure call, 2 arguments.
pub fn call2(cfg: &Config<'_>) -> Result<Entry> {
    call(cfg, 2, &mut || {
        keep(f2(keep(1), keep(2)));
    })
}
/// Procedure call, 3 arguments.
pub fn call3(cfg: &Config<'_>) -> Result<Entry> {
    call(cfg, 3, &mut || {
        keep(f3(keep(1), keep(2), keep(3)));
    })
}
/// Procedure call, 4 arguments.
pub fn call4(cfg: &Config<'_>) -> Result<Entry> {
    call(cfg, 4, &mut || {
        keep(f4(keep(1), keep(2), keep(3), keep(4)));
    })
}
/// Procedure call, 5 arguments.
pub fn call5(cfg: &Config<'_>) -> Result<Entry> {
    call(cfg, 5, &mut || {
        keep(f5(keep(1), keep(2), keep(3), keep(4), keep(5)));
    })
}
/// Procedure call, 6 arguments.
pub fn call6(cfg: &Config<'_>) -> Result<Entry> {
    call(cfg, 6, &mut || {
        keep(f6(keep(1), keep(2), keep(3), keep(4), keep(5), keep(6)));
    })
}
/// Procedure call, 7 arguments.
pub fn call7(cfg: &Config<'_>) -> Result<Entry> {
    call(cfg, 7, &mut || {
        keep(f7(
            keep(1),
            keep(2),
            keep(3),
            keep(4),
            keep(5),
            keep(6),
            keep(7),
        ));
    })
}

fn syscall(
    cfg: &Config<'_>,
    name: &str,
    method: &str,
    f: &mut dyn FnMut() -> Result<()>,
) -> Result<Entry> {
    let stats = cfg.repeat_per_op(u64::MAX, f)?;
    let mut e = Entry::timed(name, "calls", method, stats);
    if matches!(name, "read1" | "write_null" | "lseek") {
        let threads = threads_of_this_process();
        if threads > 1 {
            e.notes.push(format!(
                "this process has {threads} threads; with a shared file table the kernel takes a reference on the file (and, for regular files, the position lock) on each call, which a single-threaded process like lmbench skips"
            ));
        }
    }
    Ok(e)
}

/// Threads of this process, from /proc/self/status (1 when unknown).
fn threads_of_this_process() -> usize {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Threads:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(1)
}

/// getpid through syscall(SYS_getpid).
pub fn getpid(cfg: &Config<'_>) -> Result<Entry> {
    syscall(
        cfg,
        "getpid",
        "loop of syscall(SYS_getpid) (a real kernel entry; no libc caching)",
        &mut || {
            keep(prim::getpid_syscall());
            Ok(())
        },
    )
}

/// getuid through syscall(SYS_getuid).
pub fn getuid(cfg: &Config<'_>) -> Result<Entry> {
    syscall(cfg, "getuid", "loop of syscall(SYS_getuid)", &mut || {
        keep(prim::getuid_syscall());
        Ok(())
    })
}

/// fstat of an open file.
pub fn fstat(cfg: &Config<'_>) -> Result<Entry> {
    let f = std::fs::File::open("/dev/zero").map_err(io_err("open /dev/zero"))?;
    syscall(
        cfg,
        "fstat",
        "loop of fstat on an open /dev/zero",
        &mut || {
            keep(prim::fstat_size(&f)?);
            Ok(())
        },
    )
}

/// lseek of an open file.
pub fn lseek(cfg: &Config<'_>) -> Result<Entry> {
    let f = std::fs::File::open("/dev/zero").map_err(io_err("open /dev/zero"))?;
    syscall(
        cfg,
        "lseek",
        "loop of lseek(fd, 0, SEEK_SET) on an open /dev/zero",
        &mut || {
            keep(prim::lseek_set(&f, 0)?);
            Ok(())
        },
    )
}

/// 1-byte read of /dev/zero.
pub fn read1(cfg: &Config<'_>) -> Result<Entry> {
    let mut f = std::fs::File::open("/dev/zero").map_err(io_err("open /dev/zero"))?;
    let mut b = [0u8; 1];
    syscall(
        cfg,
        "read1",
        "loop of 1-byte read(2) from /dev/zero",
        &mut || {
            keep(f.read(&mut b).map_err(io_err("read /dev/zero"))?);
            Ok(())
        },
    )
}

/// 1-byte write to /dev/null.
pub fn write_null(cfg: &Config<'_>) -> Result<Entry> {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/null")
        .map_err(io_err("open /dev/null"))?;
    syscall(
        cfg,
        "write_null",
        "loop of 1-byte write(2) to /dev/null",
        &mut || {
            keep(f.write(&[1]).map_err(io_err("write /dev/null"))?);
            Ok(())
        },
    )
}
