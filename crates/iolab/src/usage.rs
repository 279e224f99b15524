//! Process resource usage and small kernel facts, as safe functions.

use crate::kernel::rusage::{getrusage_self, getrusage_thread};
use serde::{Deserialize, Serialize};

/// Resource usage of the whole process at one moment (all threads).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// User CPU time, ns.
    pub user_ns: u64,
    /// System CPU time, ns.
    pub sys_ns: u64,
    /// Voluntary context switches.
    pub vol_csw: u64,
    /// Involuntary context switches.
    pub invol_csw: u64,
    /// Minor page faults (served without I/O).
    pub minor_faults: u64,
    /// Major page faults (needed I/O).
    pub major_faults: u64,
}

impl Usage {
    /// getrusage(RUSAGE_SELF) now.
    pub fn now() -> Self {
        Self::from_rusage(getrusage_self())
    }

    /// getrusage(RUSAGE_THREAD) now: the calling thread alone, the way fio
    /// measures each job's CPU.
    pub fn thread_now() -> Self {
        Self::from_rusage(getrusage_thread())
    }

    fn from_rusage(ru: libc::rusage) -> Self {
        let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
        Usage {
            user_ns: tv(ru.ru_utime),
            sys_ns: tv(ru.ru_stime),
            vol_csw: ru.ru_nvcsw as u64,
            invol_csw: ru.ru_nivcsw as u64,
            minor_faults: ru.ru_minflt as u64,
            major_faults: ru.ru_majflt as u64,
        }
    }

    /// What was used between `earlier` and `self`.
    pub fn since(&self, earlier: &Usage) -> Usage {
        Usage {
            user_ns: self.user_ns.saturating_sub(earlier.user_ns),
            sys_ns: self.sys_ns.saturating_sub(earlier.sys_ns),
            vol_csw: self.vol_csw.saturating_sub(earlier.vol_csw),
            invol_csw: self.invol_csw.saturating_sub(earlier.invol_csw),
            minor_faults: self.minor_faults.saturating_sub(earlier.minor_faults),
            major_faults: self.major_faults.saturating_sub(earlier.major_faults),
        }
    }
}

/// Tasks runnable on the whole machine right now (`procs_running` of
/// `/proc/stat`, the caller included). None when it cannot be read.
pub fn procs_running() -> Option<usize> {
    let s = std::fs::read_to_string("/proc/stat").ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix("procs_running "))
        .and_then(|v| v.trim().parse().ok())
}

/// CPU time, ns, used so far by the io_uring SQPOLL kernel thread that
/// serves rings created by the calling thread (`iou-sqp-<tid>`), from its
/// `/proc/self/task/*/schedstat`. None when it has none.
pub fn sqpoll_cpu_ns() -> Option<u64> {
    let me = std::fs::read_link("/proc/thread-self").ok()?;
    let tid = me.file_name()?.to_string_lossy().into_owned();
    let want = format!("iou-sqp-{tid}");
    let mut total = None;
    for t in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
        if comm.trim_end() != want {
            continue;
        }
        let ns = std::fs::read_to_string(t.path().join("schedstat"))
            .ok()
            .and_then(|s| {
                s.split_whitespace()
                    .next()
                    .and_then(|v| v.parse::<u64>().ok())
            })
            .unwrap_or(0);
        *total.get_or_insert(0) += ns;
    }
    total
}

/// CPU time, ns, used so far by the io_uring kernel threads that serve the
/// rings the calling thread created: its SQPOLL thread (`iou-sqp-<tid>`)
/// and its io-wq workers (`iou-wrk-<tid>`, which run the requests io_uring
/// cannot complete without blocking, e.g. buffered reads of uncached
/// pages). Read from `/proc/self/task/*/schedstat`; a worker that already
/// exited is no longer listed (its time stays in the process's usage).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IoThreadsCpu {
    /// The SQPOLL thread's CPU, ns (None: no such thread).
    pub sqpoll_ns: Option<u64>,
    /// The io-wq workers' CPU, ns.
    pub wq_ns: u64,
}

impl IoThreadsCpu {
    /// The calling thread's io_uring kernel threads now.
    pub fn now() -> Self {
        let mut out = IoThreadsCpu::default();
        let Some(tid) = std::fs::read_link("/proc/thread-self")
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        else {
            return out;
        };
        let (sqp, wrk) = (format!("iou-sqp-{tid}"), format!("iou-wrk-{tid}"));
        let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
            return out;
        };
        for t in tasks.flatten() {
            let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
            let comm = comm.trim_end();
            if comm != sqp && comm != wrk {
                continue;
            }
            let ns = std::fs::read_to_string(t.path().join("schedstat"))
                .ok()
                .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
                .unwrap_or(0);
            if comm == sqp {
                *out.sqpoll_ns.get_or_insert(0) += ns;
            } else {
                out.wq_ns += ns;
            }
        }
        out
    }

    /// Both kinds together, ns.
    pub fn total_ns(&self) -> u64 {
        self.sqpoll_ns.unwrap_or(0) + self.wq_ns
    }
}

/// The system page size in bytes.
pub fn page_size() -> usize {
    crate::kernel::mman::page_size()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_grows_with_work() {
        let a = Usage::now();
        let mut x = 0u64;
        for i in 0..20_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        let d = Usage::now().since(&a);
        assert!(d.user_ns + d.sys_ns > 0);
    }

    #[test]
    fn thread_usage_counts_only_the_calling_thread() {
        let burn = || {
            let mut x = 0u64;
            for i in 0..30_000_000u64 {
                x = x.wrapping_mul(31).wrapping_add(i);
            }
            std::hint::black_box(x);
        };
        let t0 = Usage::thread_now();
        // Another thread burns CPU; this one only waits for it.
        let other = std::thread::spawn(move || {
            let u = Usage::thread_now();
            burn();
            let d = Usage::thread_now().since(&u);
            d.user_ns + d.sys_ns
        })
        .join()
        .unwrap();
        let mine = Usage::thread_now().since(&t0);
        assert!(other > 0);
        assert!(mine.user_ns + mine.sys_ns < other, "{mine:?} vs {other}");
        assert_eq!(IoThreadsCpu::now(), IoThreadsCpu::default());
    }
}
