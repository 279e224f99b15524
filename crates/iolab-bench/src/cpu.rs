//! Whose CPU a run used: the submitting threads (the runner's workers, each
//! measured with RUSAGE_THREAD, the quantity fio reports per job), the
//! process's other threads (engine helpers: the thread pool, glibc's POSIX
//! AIO threads; and the coordinating main thread), and the io_uring kernel
//! threads serving the workers' rings (iou-sqp, iou-wrk). Process-wide
//! RUSAGE_SELF alone mixes the three, so "iolab 111 %, fio 98 %" would
//! compare unlike things.

use crate::metrics::CpuSplit;
use iolab::usage::{IoThreadsCpu, Usage};

/// One worker's CPU meter, started on the worker's own thread.
#[derive(Clone, Copy, Debug)]
pub struct WorkerCpu {
    thread0: Usage,
    io0: IoThreadsCpu,
    /// Whether the worker's engine has io_uring kernel threads to look for
    /// (finding them reads every thread's `comm`: with hundreds of workers
    /// that scan, done by each, cost seconds, so other engines skip it).
    io: bool,
}

/// What one worker's meter read over the measured phase.
#[derive(Clone, Copy, Debug, Default)]
pub struct WorkerCpuOut {
    /// The worker thread itself.
    pub submit: Usage,
    /// Its rings' kernel threads, ns.
    pub kernel_ns: u64,
}

impl WorkerCpu {
    /// Starts measuring the calling (worker) thread and, when `io_uring`,
    /// its rings' kernel threads.
    pub fn start(io_uring: bool) -> Self {
        WorkerCpu {
            thread0: Usage::thread_now(),
            io0: if io_uring {
                IoThreadsCpu::now()
            } else {
                IoThreadsCpu::default()
            },
            io: io_uring,
        }
    }

    /// Starts again (the measured phase begins after the ramp).
    pub fn restart(&mut self) {
        *self = Self::start(self.io);
    }

    /// Reads the meter; call on the worker thread before its engine (and
    /// so its kernel threads) goes away.
    pub fn finish(&self) -> WorkerCpuOut {
        let io = if self.io {
            IoThreadsCpu::now()
        } else {
            IoThreadsCpu::default()
        };
        WorkerCpuOut {
            submit: Usage::thread_now().since(&self.thread0),
            kernel_ns: io.total_ns().saturating_sub(self.io0.total_ns()),
        }
    }
}

/// The split of `process` (RUSAGE_SELF over the run) given each worker's
/// meter, as percentages of one core over `wall_ns`. Helper threads get
/// what remains of the process's CPU after the workers and the kernel
/// threads, so threads that exited during the run are still counted.
pub fn split(workers: &[WorkerCpuOut], process: &Usage, wall_ns: u64) -> CpuSplit {
    let w = wall_ns.max(1) as f64;
    let pct = |ns: u64| ns as f64 * 100.0 / w;
    let (su, ss) = workers.iter().fold((0u64, 0u64), |(u, s), o| {
        (u + o.submit.user_ns, s + o.submit.sys_ns)
    });
    let kernel: u64 = workers.iter().map(|o| o.kernel_ns).sum();
    let total = process.user_ns + process.sys_ns;
    CpuSplit {
        submit_user_pct: pct(su),
        submit_sys_pct: pct(ss),
        helpers_pct: pct(total.saturating_sub(su + ss + kernel)),
        kernel_pct: pct(kernel),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helpers_are_what_remains() {
        let u = |user_ns, sys_ns| Usage {
            user_ns,
            sys_ns,
            ..Default::default()
        };
        let workers = [
            WorkerCpuOut {
                submit: u(100, 200),
                kernel_ns: 500,
            },
            WorkerCpuOut {
                submit: u(100, 0),
                kernel_ns: 0,
            },
        ];
        let s = split(&workers, &u(600, 700), 1000);
        assert_eq!(
            (
                s.submit_user_pct,
                s.submit_sys_pct,
                s.helpers_pct,
                s.kernel_pct
            ),
            (20.0, 20.0, 40.0, 50.0)
        );
        assert_eq!(s.submit_pct(), 40.0);
    }
}
