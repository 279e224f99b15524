//! `--waker`: on each CPU a run may use, a process that sleeps a fixed period
//! in a loop. On some virtual machines (this project's test VM is one) the
//! way back from a completed I/O to the thread waiting for it costs
//! microseconds more when the CPU ran no other task for a while; fio's
//! supervisor process wakes every 10 ms and so keeps the CPUs it lands on
//! in the cheaper state. `--vs fio` runs both tools next to the same wakers
//! so that this is not an advantage only fio has, and iolab's runs also
//! beside a stand-in for fio's supervisor (one unpinned process waking every
//! 10 ms), so that each tool's job has the same neighbour of its own;
//! `iolab fio` runs its jobs beside that stand-in.
//!
//! The wakers are processes, not threads: a second thread in the measuring
//! process would make every small system call dearer (the kernel counts
//! file references once a process has two threads).

use crate::parse;
use anyhow::{Context, Result};
use iolab_bench::env::WakerInfo;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// The period `--vs fio` uses unless `--waker` says otherwise: fio's own
/// supervisor's.
pub const VS_FIO_EVERY: Duration = Duration::from_millis(10);

/// The hidden subcommand name one waker process runs as.
pub const SUBCOMMAND: &str = "__waker";

/// Arguments of the hidden `iolab __waker` (one process per CPU).
#[derive(clap::Args, Debug)]
pub struct WakerArgs {
    /// The CPU to stay on; without it, wherever the scheduler puts it (as
    /// fio's supervisor runs).
    #[arg(long)]
    pub cpu: Option<usize>,
    /// How long to sleep between wake-ups.
    #[arg(long, value_parser = parse::duration)]
    pub every: Duration,
}

/// One waker: pinned to its CPU, it sleeps and wakes until told to stop or
/// until the process that started it is gone (its parent changes).
pub fn run(a: &WakerArgs, stop: &AtomicBool) -> Result<i32> {
    let parent = std::os::unix::process::parent_id();
    if let Some(cpu) = a.cpu {
        iolab::primitives::pin_to_cpu(cpu).with_context(|| format!("waker: pin to CPU {cpu}"))?;
    }
    while !stop.load(Ordering::Relaxed) && std::os::unix::process::parent_id() == parent {
        std::thread::sleep(a.every);
    }
    Ok(0)
}

/// `--waker DURATION|off` as given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WakerArg {
    /// No wakers, even with `--vs fio`.
    Off,
    /// Wakers with this period.
    Every(Duration),
}

/// Parses `--waker`: `off`, or a period from 100 µs to 10 s.
pub fn parse_arg(s: &str) -> Result<WakerArg, String> {
    if s.trim() == "off" {
        return Ok(WakerArg::Off);
    }
    let d = parse::duration(s).map_err(|e| format!("{e}, or off"))?;
    if d < Duration::from_micros(100) || d > Duration::from_secs(10) {
        return Err(format!(
            "'{s}': a waker's period is from 100us to 10s (fio's supervisor: 10ms), or off"
        ));
    }
    Ok(WakerArg::Every(d))
}

/// The pinned wakers' period: what `--waker` says, else 10 ms with `--vs
/// fio` and none without.
pub fn period(arg: Option<WakerArg>, vs_fio: bool) -> Option<Duration> {
    match arg {
        Some(WakerArg::Every(d)) => Some(d),
        Some(WakerArg::Off) => None,
        None => vs_fio.then_some(VS_FIO_EVERY),
    }
}

/// Running wakers; dropping them ends them (killed and reaped).
pub struct Wakers {
    children: Vec<Child>,
    /// What ran, for the record.
    pub info: WakerInfo,
}

impl Wakers {
    /// The wakers a `bench` invocation asks for (see [`period`]) on the
    /// CPUs of [`cpus_for`], or none.
    pub fn for_run(
        arg: Option<WakerArg>,
        vs_fio: bool,
        pin: Option<&iolab_bench::pin::CpuPin>,
    ) -> Result<Option<Wakers>> {
        match period(arg, vs_fio) {
            Some(every) => Ok(Some(Wakers::start(every, &cpus_for(pin)?)?)),
            None => Ok(None),
        }
    }

    /// No wakers yet (see [`Wakers::add_stand_in`]).
    pub fn none() -> Wakers {
        Wakers {
            children: Vec::new(),
            info: WakerInfo {
                every_us: 0,
                cpus: Vec::new(),
                fio_supervisor_stand_in: false,
            },
        }
    }

    /// Starts one waker on each of `cpus`, running this executable's hidden
    /// subcommand.
    pub fn start(every: Duration, cpus: &[usize]) -> Result<Wakers> {
        let mut w = Wakers::none();
        w.info.every_us = every.as_micros() as u64;
        w.info.cpus = cpus.to_vec();
        for &cpu in cpus {
            w.children.push(spawn(Some(cpu), every)?);
        }
        Ok(w)
    }

    /// Only the stand-in for fio's supervisor (see [`Wakers::add_stand_in`]).
    pub fn stand_in() -> Result<Wakers> {
        let mut w = Wakers::none();
        w.add_stand_in()?;
        Ok(w)
    }

    /// Adds one waker that is not pinned and wakes every 10 ms: what fio's
    /// supervisor process is beside fio's job (it sleeps 10 ms between
    /// looks at its jobs, wherever the scheduler puts it). iolab's job gets
    /// it so that both tools' jobs have the same neighbour of their own.
    pub fn add_stand_in(&mut self) -> Result<()> {
        self.children.push(spawn(None, VS_FIO_EVERY)?);
        self.info.fio_supervisor_stand_in = true;
        Ok(())
    }
}

/// One waker process: this executable's hidden subcommand, pinned to `cpu`
/// or not.
fn spawn(cpu: Option<usize>, every: Duration) -> Result<Child> {
    let exe = std::env::current_exe().context("--waker: find iolab's own executable")?;
    let mut cmd = Command::new(&exe);
    cmd.arg(SUBCOMMAND)
        .args(["--every", &format!("{}us", every.as_micros())])
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    if let Some(cpu) = cpu {
        cmd.args(["--cpu", &cpu.to_string()]);
    }
    let which = cpu.map_or("fio's supervisor's stand-in".to_string(), |c| {
        format!("CPU {c}")
    });
    cmd.spawn()
        .with_context(|| format!("--waker: start the waker for {which}"))
}

impl Drop for Wakers {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The CPUs wakers go on: those of `--cpus`, else every CPU this process
/// may use (fio's job and iolab's workers may land on any of them).
pub fn cpus_for(pin: Option<&iolab_bench::pin::CpuPin>) -> Result<Vec<usize>> {
    cpus_for_all(&[pin])
}

/// The CPUs wakers go on for several runs at once (`iolab fio`'s jobs): the
/// union of their pins, or every CPU this process may use when any of them
/// is not pinned.
pub fn cpus_for_all(pins: &[Option<&iolab_bench::pin::CpuPin>]) -> Result<Vec<usize>> {
    if pins.iter().any(Option::is_none) {
        return iolab::primitives::allowed_cpus().context("--waker: read this process's CPUs");
    }
    let mut cpus: Vec<usize> = pins
        .iter()
        .flatten()
        .flat_map(|p| p.cpus.iter().map(|&c| c as usize))
        .collect();
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_periods_and_off() {
        assert_eq!(parse_arg("off"), Ok(WakerArg::Off));
        assert_eq!(
            parse_arg("10ms"),
            Ok(WakerArg::Every(Duration::from_millis(10)))
        );
        let e = parse_arg("1us").unwrap_err();
        assert!(e.contains("100us to 10s"), "{e}");
        let e = parse_arg("soon").unwrap_err();
        assert!(e.contains("not a duration") && e.contains("or off"), "{e}");
    }

    #[test]
    fn vs_fio_defaults_to_fios_period_and_off_wins() {
        assert_eq!(period(None, true), Some(VS_FIO_EVERY));
        assert_eq!(period(None, false), None);
        assert_eq!(period(Some(WakerArg::Off), true), None);
        let d = Duration::from_millis(1);
        assert_eq!(period(Some(WakerArg::Every(d)), false), Some(d));
    }

    #[test]
    fn several_runs_take_the_union_of_their_pins_or_every_cpu() {
        let pin = |cpus: Vec<u32>| iolab_bench::pin::CpuPin {
            cpus,
            split: false,
            first: 0,
        };
        let (a, b) = (pin(vec![1, 3]), pin(vec![0, 1]));
        assert_eq!(cpus_for_all(&[Some(&a), Some(&b)]).unwrap(), vec![0, 1, 3]);
        let all = iolab::primitives::allowed_cpus().unwrap();
        assert_eq!(cpus_for_all(&[Some(&a), None]).unwrap(), all);
        assert_eq!(cpus_for(None).unwrap(), all);
    }
}
