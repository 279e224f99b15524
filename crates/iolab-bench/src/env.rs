//! The environment a measurement ran in: enough to tell two machines apart
//! and to reproduce a run (kernel, CPU, memory, file system, device, queue).

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
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu_model = cpuinfo
            .lines()
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split(':').nth(1))
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|| "unknown".into());
        let memory_bytes = std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|m| {
                m.lines()
                    .find(|l| l.starts_with("MemTotal:"))
                    .and_then(|l| l.split_whitespace().nth(1))
                    .and_then(|v| v.parse::<u64>().ok())
            })
            .unwrap_or(0)
            * 1024;
        let dev = iolab::file::block_device_of(path);
        let (device, device_model, scheduler, queue) = match &dev {
            Some(d) => {
                let model = read_trim(d.sysfs.join("device/model"))
                    .or_else(|| {
                        read_trim(d.sysfs.join("device/vendor")).map(|v| format!("vendor {v}"))
                    })
                    .or_else(|| {
                        std::fs::read_link(d.sysfs.join("device/driver"))
                            .ok()
                            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
                    });
                let sched = d.queue_attr("scheduler").map(|s| {
                    s.split_whitespace()
                        .find(|w| w.starts_with('['))
                        .map(|w| w.trim_matches(['[', ']']).to_string())
                        .unwrap_or(s)
                });
                let q = QueueLimits {
                    logical_block_bytes: d.queue_num("logical_block_size"),
                    physical_block_bytes: d.queue_num("physical_block_size"),
                    max_sectors_kb: d.queue_num("max_sectors_kb"),
                    nr_requests: d.queue_num("nr_requests"),
                    rotational: d.queue_num("rotational").map(|v| v != 0),
                    read_ahead_kb: d.queue_num("read_ahead_kb"),
                };
                (Some(d.name.clone()), model, sched, q)
            }
            None => (None, None, None, QueueLimits::default()),
        };
        Environment {
            kernel: read_trim("/proc/sys/kernel/osrelease").unwrap_or_default(),
            cpu_model,
            cores: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            memory_bytes,
            hostname: read_trim("/proc/sys/kernel/hostname").unwrap_or_default(),
            fs_type: iolab::file::fs_type(path).map(str::to_string),
            device,
            device_model,
            scheduler,
            queue,
            iolab_version: env!("CARGO_PKG_VERSION").to_string(),
        }
    }
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
    }
}
