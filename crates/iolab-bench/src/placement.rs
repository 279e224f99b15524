//! Where a run's worker threads go when the user did not say (`--cpus`):
//! next to the device's completion interrupts.
//!
//! A thread that sleeps in the kernel until its I/O completes is woken by
//! the CPU that takes the device's interrupt. When that is another CPU, the
//! wake-up is an inter-processor interrupt, and in a virtual machine it also
//! wakes a second halted vCPU. Here (virtio-blk, one queue, its interrupt on
//! CPU 1) that costs a quarter of the random 4 KiB O_DIRECT reads per
//! second at depth 1 (13–15k on CPU 0 against 17–19k on CPU 1, `taskset`
//! runs alternated). Left to the scheduler, a thread stays on whichever CPU
//! it first slept on, so the same command measured either figure from one
//! invocation to the next. iolab therefore places a run that waits on the
//! device onto the CPUs that take its completion interrupts, when there are
//! such CPUs for every worker and they are not simply all of them
//! (`--placement any` leaves it to the scheduler; the record says which).

use crate::pin::CpuPin;
use crate::spec::{CacheMode, Placement, WorkloadSpec};
use std::path::Path;

/// The completion interrupts of one block device and the CPUs they go to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Completions {
    /// Kernel name of the whole disk, e.g. `vda`.
    pub device: String,
    /// The interrupt numbers that complete its requests.
    pub irqs: Vec<u32>,
    /// The CPUs those interrupts are delivered to, ascending.
    pub cpus: Vec<usize>,
}

/// What [`decide`] chose: the CPUs the workers get and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placed {
    /// One CPU per worker, in turn (`split`).
    pub pin: CpuPin,
    /// One line for the record, e.g. "CPU 1: takes vda's completion
    /// interrupts (irq 36)".
    pub why: String,
}

/// The completion interrupts of the disk holding `path`, read from this
/// machine's /sys and /proc; None when the file is not on a disk
/// (tmpfs, network file systems) or its interrupts cannot be found.
pub fn completions_of(path: &Path) -> Option<Completions> {
    let dev = iolab::file::block_device_of(path)?;
    completions_in(
        &dev.name,
        &dev.sysfs.join("device"),
        Path::new("/proc/interrupts"),
        Path::new("/proc/irq"),
    )
}

/// [`completions_of`] over explicit paths (a fixture tree in tests): the
/// disk's `device` link, `/proc/interrupts` and `/proc/irq`.
///
/// The interrupts are the MSI vectors of the nearest ancestor of the
/// device that has `msi_irqs/` (the PCI function), less the ones that do
/// not complete requests (virtio's `config`, NVMe's admin queue `q0`) and
/// the ones that never fired.
pub fn completions_in(
    device: &str,
    dev_link: &Path,
    interrupts: &Path,
    irq_dir: &Path,
) -> Option<Completions> {
    let mut dir = std::fs::canonicalize(dev_link).ok()?;
    let msi = loop {
        let m = dir.join("msi_irqs");
        if m.is_dir() {
            break m;
        }
        if !dir.pop() {
            return None;
        }
    };
    let table = std::fs::read_to_string(interrupts).ok()?;
    let mut irqs: Vec<u32> = std::fs::read_dir(&msi)
        .ok()?
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .filter(|n| completes_requests(&table, *n))
        .collect();
    irqs.sort_unstable();
    let mut cpus = Vec::new();
    for n in &irqs {
        let d = irq_dir.join(n.to_string());
        let list = std::fs::read_to_string(d.join("effective_affinity_list"))
            .or_else(|_| std::fs::read_to_string(d.join("smp_affinity_list")))
            .ok()?;
        cpus.extend(
            CpuPin::parse_list(list.trim())
                .ok()?
                .into_iter()
                .map(|c| c as usize),
        );
    }
    cpus.sort_unstable();
    cpus.dedup();
    (!cpus.is_empty()).then(|| Completions {
        device: device.to_string(),
        irqs,
        cpus,
    })
}

/// Whether interrupt `n`'s line in /proc/interrupts is one that completes
/// requests: it fired at least once and is not a configuration or admin
/// vector.
fn completes_requests(table: &str, n: u32) -> bool {
    let key = format!("{n}:");
    let Some(line) = table.lines().find(|l| l.trim_start().starts_with(&key)) else {
        return false;
    };
    let fields: Vec<&str> = line.split_whitespace().skip(1).collect();
    let count: u64 = fields
        .iter()
        .take_while(|f| f.bytes().all(|b| b.is_ascii_digit()))
        .filter_map(|f| f.parse::<u64>().ok())
        .sum();
    let name = fields.last().copied().unwrap_or("");
    count > 0 && !name.ends_with("-config") && !name.ends_with("q0")
}

/// Whether a run of `spec` sleeps on its device's completions: O_DIRECT,
/// or a cold cache. SQPOLL is left out: its kernel thread submits, and
/// pinning the waiting thread to the interrupt CPU measured slower.
pub fn waits_on_device(spec: &WorkloadSpec) -> bool {
    (spec.direct || spec.cache == CacheMode::Cold) && !spec.engine_opts.uring.sqpoll
}

/// Deepest queue per worker that is placed: up to here a worker sleeps on
/// (nearly) every completion, so where its wake-up comes from decides its
/// pace. Deeper, completions are mostly waiting when it looks, and sharing
/// the interrupt CPU measured no better (job 13 of examples/fio, depth 16:
/// 0.96-1.08 of unplaced over 4 alternations).
pub const MAX_PLACED_QD: u32 = 4;

/// Whether `spec` leaves placement to iolab and would gain from it: no
/// `--cpus`, not `--placement any`, a run that waits on the device at a
/// depth of at most [`MAX_PLACED_QD`], and not one rank of several (each
/// rank's process would choose the same CPUs on its own, and ranks on one
/// host would queue on them).
fn wanted(spec: &WorkloadSpec) -> bool {
    spec.cpus.is_none()
        && spec.placement == Placement::Irq
        && waits_on_device(spec)
        && spec.qd <= MAX_PLACED_QD
        && spec.place.is_none_or(|p| p.ranks <= 1)
}

/// The placement for `spec` given the device's completions and the CPUs
/// this process may use: None when the user pinned (`--cpus`), asked for
/// `--placement any`, the run does not wait on the device or keeps more
/// than [`MAX_PLACED_QD`] in flight, it is one rank of several (MPI), there
/// are more
/// workers than completion CPUs (they would queue behind one another), or
/// every allowed CPU takes completions already (NVMe: a queue per CPU).
pub fn decide(spec: &WorkloadSpec, c: &Completions, allowed: &[usize]) -> Option<Placed> {
    if !wanted(spec) {
        return None;
    }
    let cpus: Vec<u32> = c
        .cpus
        .iter()
        .filter(|x| allowed.contains(x))
        .map(|&x| x as u32)
        .collect();
    if cpus.is_empty() || cpus.len() >= allowed.len() || spec.workers() as usize > cpus.len() {
        return None;
    }
    let pin = CpuPin {
        cpus,
        split: true,
        first: 0,
    };
    let irqs: Vec<String> = c.irqs.iter().map(u32::to_string).collect();
    let (cpu_word, irq_word) = (
        if pin.cpus.len() == 1 { "CPU" } else { "CPUs" },
        if irqs.len() == 1 { "irq" } else { "irqs" },
    );
    let why = format!(
        "{cpu_word} {}: takes {}'s completion interrupts ({irq_word} {}); --placement any leaves it to the scheduler",
        pin.list(),
        c.device,
        irqs.join(", ")
    );
    Some(Placed { pin, why })
}

/// [`decide`] for `spec` reading `first_file`'s device on this machine.
pub fn place(spec: &WorkloadSpec, first_file: &Path) -> Option<Placed> {
    if !wanted(spec) {
        return None;
    }
    let c = completions_of(first_file)?;
    let allowed = iolab::primitives::allowed_cpus().ok()?;
    decide(spec, &c, &allowed)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &str = "           CPU0       CPU1
 35:          0          1  PCI-MSIX-0000:00:02.0   0-edge      virtio1-config
 36:          0   55783117  PCI-MSIX-0000:00:02.0   1-edge      virtio1-req.0
 37:          0          0  PCI-MSIX-0000:00:03.0   0-edge      virtio2-config
";

    /// A /sys and /proc laid out as on this VM: vda under a PCI function
    /// with MSI vectors 35 (config) and 36 (requests, on CPU 1).
    fn fixture(root: &Path, affinity: &str) -> (std::path::PathBuf, std::path::PathBuf) {
        let pci = root.join("devices/pci0000:00/0000:00:02.0");
        let virtio = pci.join("virtio1");
        std::fs::create_dir_all(&virtio).unwrap();
        for n in [35, 36] {
            std::fs::create_dir_all(pci.join("msi_irqs")).unwrap();
            std::fs::write(pci.join("msi_irqs").join(n.to_string()), "msix").unwrap();
            let d = root.join("irq").join(n.to_string());
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("effective_affinity_list"), format!("{affinity}\n")).unwrap();
        }
        std::fs::write(root.join("interrupts"), TABLE).unwrap();
        let link = root.join("vda-device");
        std::os::unix::fs::symlink(&virtio, &link).unwrap();
        (link, root.join("irq"))
    }

    #[test]
    fn the_request_vector_is_found_and_the_config_vector_left_out() {
        let t = tempfile::tempdir().unwrap();
        let (link, irq) = fixture(t.path(), "1");
        let c = completions_in("vda", &link, &t.path().join("interrupts"), &irq).unwrap();
        assert_eq!(c.irqs, vec![36]);
        assert_eq!(c.cpus, vec![1]);
    }

    #[test]
    fn a_device_without_msi_vectors_has_no_completions() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("devices/platform/thing");
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(t.path().join("interrupts"), TABLE).unwrap();
        assert!(completions_in("x", &d, &t.path().join("interrupts"), t.path()).is_none());
    }

    fn completions(cpus: &[usize]) -> Completions {
        Completions {
            device: "vda".into(),
            irqs: vec![36],
            cpus: cpus.to_vec(),
        }
    }

    #[test]
    fn a_direct_run_goes_to_the_interrupt_cpu_and_says_why() {
        let spec = WorkloadSpec {
            direct: true,
            ..WorkloadSpec::default()
        };
        let p = decide(&spec, &completions(&[1]), &[0, 1]).unwrap();
        assert_eq!(p.pin.of_worker(0), vec![1]);
        assert!(
            p.why
                .starts_with("CPU 1: takes vda's completion interrupts (irq 36)"),
            "{}",
            p.why
        );
    }

    #[test]
    fn placement_is_skipped_where_it_would_not_help_or_was_not_wanted() {
        let direct = WorkloadSpec {
            direct: true,
            ..WorkloadSpec::default()
        };
        let c = completions(&[1]);
        // A warm buffered run never sleeps on the device.
        assert!(decide(&WorkloadSpec::default(), &c, &[0, 1]).is_none());
        // More workers than interrupt CPUs.
        let two = WorkloadSpec {
            threads: 2,
            ..direct.clone()
        };
        assert!(decide(&two, &c, &[0, 1]).is_none());
        // Every CPU takes completions (a queue per CPU).
        assert!(decide(&direct, &completions(&[0, 1]), &[0, 1]).is_none());
        // The interrupt CPU is outside this process's affinity.
        assert!(decide(&direct, &c, &[0]).is_none());
        // The user's choice wins.
        let any = WorkloadSpec {
            placement: Placement::Any,
            ..direct.clone()
        };
        assert!(decide(&any, &c, &[0, 1]).is_none());
        let pinned = WorkloadSpec {
            cpus: Some(CpuPin {
                cpus: vec![0],
                split: false,
                first: 0,
            }),
            ..direct.clone()
        };
        assert!(decide(&pinned, &c, &[0, 1]).is_none());
        let mut sq = direct.clone();
        sq.engine_opts.uring.sqpoll = true;
        assert!(decide(&sq, &c, &[0, 1]).is_none());
        // One MPI rank of two: both would pile onto CPU 1.
        let rank = WorkloadSpec {
            place: Some(crate::rank_place::RankPlace {
                rank: 0,
                ranks: 2,
                layout: crate::rank_place::Layout::default(),
                region: 1 << 20,
                segments: 1,
                bs: 4096,
                resume_ops: 0,
            }),
            ..direct.clone()
        };
        assert!(decide(&rank, &c, &[0, 1]).is_none());
        // Deep queues are left alone.
        let deep = WorkloadSpec {
            qd: MAX_PLACED_QD + 1,
            ..direct.clone()
        };
        assert!(decide(&deep, &c, &[0, 1]).is_none());
        let shallow = WorkloadSpec {
            qd: MAX_PLACED_QD,
            ..direct.clone()
        };
        assert!(decide(&shallow, &c, &[0, 1]).is_some());
        // A cold buffered run waits on the device too.
        let cold = WorkloadSpec {
            cache: CacheMode::Cold,
            ..WorkloadSpec::default()
        };
        assert!(decide(&cold, &c, &[0, 1]).is_some());
    }

    #[test]
    fn this_machine_s_disk_has_completion_cpus() {
        // Real /sys and /proc: the source tree is on a disk, which has at
        // least one CPU taking its completions.
        let f = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
        match completions_of(&f) {
            Some(c) => {
                assert!(!c.cpus.is_empty() && !c.irqs.is_empty(), "{c:?}");
                let n = std::thread::available_parallelism().map_or(1, |n| n.get());
                assert!(c.cpus.iter().all(|&x| x < n.max(64)), "{c:?}");
            }
            None => {
                iolab::testing::unmet("the target directory is not on a disk with MSI interrupts")
            }
        }
    }
}
