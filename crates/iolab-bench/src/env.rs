//! The environment a measurement ran in: enough to tell two machines apart
//! and to reproduce a run (kernel, CPU, memory, file system, device, queue).

use iolab::file::BlockDevice;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Facts about the machine and the storage under the measured path.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    /// `uname -r`.
    pub kernel: String,
    /// CPU model name.
    pub cpu_model: String,
    /// Online CPUs.
    pub cores: usize,
    /// Physical memory, bytes.
    pub memory_bytes: u64,
    /// Host name.
    pub hostname: String,
    /// File system type under the path (ext4, xfs, tmpfs, ...).
    pub fs_type: Option<String>,
    /// Block device name (vda, nvme0n1).
    pub device: Option<String>,
    /// Device model or vendor as sysfs reports it.
    pub device_model: Option<String>,
    /// Active I/O scheduler.
    pub scheduler: Option<String>,
    /// Queue limits: logical/physical block size, max request, depth, rotational.
    pub queue: QueueLimits,
    /// iolab version.
    pub iolab_version: String,
    /// The kernel's clock source (`tsc`, `kvm-clock`, `hpet`...): what
    /// every time stamp of the run was read from.
    #[serde(default)]
    pub clocksource: Option<String>,
    /// The hypervisor the machine runs under: what `systemd-detect-virt`
    /// names (`kvm`, `vmware`...; `--vm`, so a container is not one), `"unknown"` when only the CPU's
    /// `hypervisor` flag says so, `"none"` on bare metal.
    #[serde(default)]
    pub hypervisor: Option<String>,
    /// Whether `/proc/cpuinfo` carries the `hypervisor` flag.
    #[serde(default)]
    pub hypervisor_flag: bool,
    /// CPU frequency governor of CPU 0, where cpufreq exists.
    #[serde(default)]
    pub cpu_governor: Option<String>,
    /// fio's version (`fio-3.33`), when the run was compared with fio.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fio_version: Option<String>,
    /// The waker processes that ran next to the measurement (`--waker`),
    /// when there were any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waker: Option<WakerInfo>,
}

/// Processes that slept a fixed period in a loop beside the measurement: on
/// some virtual machines the way back from a completed I/O to the waiting
/// thread is cheaper when the CPU ran another task recently, and fio's
/// supervisor process wakes every 10 ms beside fio's job.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WakerInfo {
    /// The pinned wakers' period, microseconds (0 when there were none).
    pub every_us: u64,
    /// The CPUs, one pinned waker each (empty: none).
    pub cpus: Vec<usize>,
    /// Beside iolab's runs only, one more process waking every 10 ms,
    /// not pinned: a stand-in for fio's supervisor, which runs beside
    /// fio's job wherever the scheduler puts it.
    #[serde(default)]
    pub fio_supervisor_stand_in: bool,
}

impl WakerInfo {
    /// In words: "every 10 ms on CPU 0,1; for iolab's runs also one, not
    /// pinned, every 10 ms: a stand-in for fio's supervisor".
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if !self.cpus.is_empty() {
            let cpus: Vec<String> = self.cpus.iter().map(usize::to_string).collect();
            let every = if self.every_us.is_multiple_of(1000) {
                format!("{} ms", self.every_us / 1000)
            } else {
                format!("{} µs", self.every_us)
            };
            parts.push(format!("every {every} on CPU {}", cpus.join(",")));
        }
        if self.fio_supervisor_stand_in {
            parts.push(
                if parts.is_empty() {
                    "one process, not pinned, waking every 10 ms: a stand-in for fio's supervisor"
                } else {
                    "for iolab's runs also one, not pinned, every 10 ms: a stand-in for fio's supervisor"
                }
                .to_string(),
            );
        }
        parts.join("; ")
    }
}

/// The block queue's limits from sysfs.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueLimits {
    /// Logical block size, bytes.
    pub logical_block_bytes: Option<u64>,
    /// Physical block size, bytes.
    pub physical_block_bytes: Option<u64>,
    /// Largest request the block layer builds, KiB.
    pub max_sectors_kb: Option<u64>,
    /// Requests the scheduler queues per hardware queue.
    pub nr_requests: Option<u64>,
    /// Whether the device says it is rotational.
    pub rotational: Option<bool>,
    /// Read-ahead, KiB.
    pub read_ahead_kb: Option<u64>,
    /// Most segments (separate memory pieces) one request may carry.
    #[serde(default)]
    pub max_segments: Option<u64>,
}

fn read_trim(p: impl AsRef<Path>) -> Option<String> {
    std::fs::read_to_string(p)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

impl Environment {
    /// Captures the environment for I/O under `path` (a file or directory).
    pub fn capture(path: &Path) -> Self {
        // A bare file name's parent is "": the current directory.
        let path = if path.as_os_str().is_empty() {
            Path::new(".")
        } else {
            path
        };
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let dev = iolab::file::block_device_of(path);
        let (device, device_model, scheduler, queue) = match &dev {
            Some(d) => (
                Some(d.name.clone()),
                device_model(d),
                scheduler(d),
                queue_limits(d),
            ),
            None => (None, None, None, QueueLimits::default()),
        };
        Environment {
            kernel: read_trim("/proc/sys/kernel/osrelease").unwrap_or_default(),
            cpu_model: cpu_model(&cpuinfo),
            cores: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            memory_bytes: memory_bytes(),
            hostname: read_trim("/proc/sys/kernel/hostname").unwrap_or_default(),
            fs_type: iolab::file::fs_type(path).map(str::to_string),
            device,
            device_model,
            scheduler,
            queue,
            iolab_version: env!("CARGO_PKG_VERSION").to_string(),
            clocksource: read_trim(
                "/sys/devices/system/clocksource/clocksource0/current_clocksource",
            ),
            hypervisor: hypervisor(has_flag(&cpuinfo, "hypervisor")),
            hypervisor_flag: has_flag(&cpuinfo, "hypervisor"),
            cpu_governor: read_trim("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
            fio_version: None,
            waker: None,
        }
    }
}

/// The first CPU's `model name` in `/proc/cpuinfo`, or "unknown".
fn cpu_model(cpuinfo: &str) -> String {
    cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split(':').nth(1))
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|| "unknown".into())
}

/// `MemTotal` from `/proc/meminfo` in bytes (0 when unreadable).
fn memory_bytes() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse::<u64>().ok())
        })
        .unwrap_or(0)
        * 1024
}

/// The device's model, else its vendor, else the name of its driver.
fn device_model(d: &BlockDevice) -> Option<String> {
    read_trim(d.sysfs.join("device/model"))
        .or_else(|| read_trim(d.sysfs.join("device/vendor")).map(|v| format!("vendor {v}")))
        .or_else(|| {
            std::fs::read_link(d.sysfs.join("device/driver"))
                .ok()
                .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        })
}

/// The active I/O scheduler: the bracketed one of the queue's list (the
/// whole list if none is).
fn scheduler(d: &BlockDevice) -> Option<String> {
    d.queue_attr("scheduler").map(|s| {
        s.split_whitespace()
            .find(|w| w.starts_with('['))
            .map(|w| w.trim_matches(['[', ']']).to_string())
            .unwrap_or(s)
    })
}

/// The queue's limits from sysfs.
fn queue_limits(d: &BlockDevice) -> QueueLimits {
    QueueLimits {
        logical_block_bytes: d.queue_num("logical_block_size"),
        physical_block_bytes: d.queue_num("physical_block_size"),
        max_sectors_kb: d.queue_num("max_sectors_kb"),
        nr_requests: d.queue_num("nr_requests"),
        rotational: d.queue_num("rotational").map(|v| v != 0),
        read_ahead_kb: d.queue_num("read_ahead_kb"),
        max_segments: d.queue_num("max_segments"),
    }
}

/// Whether the first CPU's `flags` line in `/proc/cpuinfo` holds `flag`.
fn has_flag(cpuinfo: &str, flag: &str) -> bool {
    cpuinfo
        .lines()
        .find(|l| l.starts_with("flags"))
        .and_then(|l| l.split(':').nth(1))
        .is_some_and(|f| f.split_whitespace().any(|w| w == flag))
}

/// `systemd-detect-virt --vm`'s answer where it is installed (`none` on
/// bare metal; containers are not hypervisors), else what the CPU flag says.
fn hypervisor(flag: bool) -> Option<String> {
    let detected = std::process::Command::new("systemd-detect-virt")
        .arg("--vm")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|s| !s.is_empty());
    match (detected, flag) {
        (Some(d), _) => Some(d),
        (None, true) => Some("unknown".into()),
        (None, false) => None,
    }
}

/// fio's version (`fio --version`), None when fio does not run.
pub fn fio_version() -> Option<String> {
    std::process::Command::new("fio")
        .arg("--version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captures_this_machine() {
        let e = Environment::capture(Path::new("."));
        assert!(!e.kernel.is_empty());
        assert!(e.cores >= 1);
        assert!(e.memory_bytes > 1 << 20);
        assert!(e.fs_type.is_some());
        // Every Linux with sysfs names its clock source.
        assert!(
            e.clocksource.as_deref().is_some_and(|c| !c.is_empty()),
            "{e:?}"
        );
        // The CPU flag and the recorded hypervisor agree.
        if e.hypervisor_flag {
            assert!(
                e.hypervisor.as_deref().is_some_and(|h| h != "none"),
                "{e:?}"
            );
        }
        if std::path::Path::new("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor").exists() {
            assert!(e.cpu_governor.is_some());
        }
    }

    #[test]
    fn an_empty_parent_is_the_current_directory() {
        let e = Environment::capture(Path::new(""));
        assert_eq!(e.fs_type, Environment::capture(Path::new(".")).fs_type);
        assert!(e.fs_type.is_some());
    }

    #[test]
    fn reads_the_cpu_flags_line() {
        let c = "processor : 0\nflags\t\t: fpu vme hypervisor lahf_lm\n";
        assert!(has_flag(c, "hypervisor"));
        assert!(!has_flag(c, "hyper"));
        assert!(!has_flag("flags : fpu\n", "hypervisor"));
    }

    #[test]
    fn names_the_queue_segments_of_a_block_device() {
        let e = Environment::capture(Path::new("."));
        if e.device.is_some() && e.queue.max_sectors_kb.is_some() {
            assert!(e.queue.max_segments.is_some_and(|n| n >= 1), "{e:?}");
        } else {
            eprintln!(
                "SKIPPED: names_the_queue_segments_of_a_block_device: no block device under ."
            );
        }
    }

    #[test]
    fn wakers_in_words_name_the_pinned_ones_and_the_stand_in() {
        let mut w = WakerInfo {
            every_us: 10_000,
            cpus: vec![0, 1],
            fio_supervisor_stand_in: false,
        };
        assert_eq!(w.describe(), "every 10 ms on CPU 0,1");
        w.fio_supervisor_stand_in = true;
        assert!(
            w.describe()
                .starts_with("every 10 ms on CPU 0,1; for iolab's runs also one, not pinned"),
            "{}",
            w.describe()
        );
        w.cpus.clear();
        w.every_us = 500;
        assert!(w.describe().starts_with("one process, not pinned"));
        w.cpus.push(1);
        assert!(w.describe().starts_with("every 500 µs on CPU 1;"));
    }
}
