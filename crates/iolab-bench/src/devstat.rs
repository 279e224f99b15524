//! The device's own view of a run: the block layer's counters
//! (`/sys/block/DEV/stat`, the numbers behind `/proc/diskstats`) read before
//! and after, turned into iostat's extended figures with iostat's names and
//! definitions: `r/s w/s rrqm/s wrqm/s rareq-sz wareq-sz r_await w_await
//! aqu-sz %util`. fio ends its output with the same counters ("Disk stats").
//!
//! These figures say what the device was asked to do, which is not always
//! what the program asked: the block layer splits a request whose buffer has
//! more segments than the queue takes (`queue/max_segments`) and merges
//! neighbouring ones, so `rareq-sz` shows whether 1 MiB reads arrived whole.
//!
//! The file's device is the one `st_dev` names (a partition, an md or dm
//! device, or a whole disk); the devices under it (a partition's disk, the
//! `slaves/` of md and dm) are reported after it. Counters are device-wide:
//! other programs' I/O on the same device is counted too.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The counters of one `stat` file (Documentation/block/stat.rst).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Reads completed.
    pub rd_ios: u64,
    /// Reads merged.
    pub rd_merges: u64,
    /// 512-byte sectors read.
    pub rd_sectors: u64,
    /// ms spent by reads (sum over requests).
    pub rd_ticks: u64,
    /// Writes completed.
    pub wr_ios: u64,
    /// Writes merged.
    pub wr_merges: u64,
    /// Sectors written.
    pub wr_sectors: u64,
    /// ms spent by writes.
    pub wr_ticks: u64,
    /// ms the device had I/O in flight.
    pub io_ticks: u64,
    /// Weighted ms of I/O (sum of in-flight time over requests).
    pub time_in_queue: u64,
}

impl Counters {
    /// Parses the text of a `stat` file (11 or more fields).
    pub fn parse(text: &str) -> Option<Counters> {
        let f: Vec<u64> = text
            .split_whitespace()
            .map(|w| w.parse().ok())
            .collect::<Option<Vec<_>>>()?;
        if f.len() < 11 {
            return None;
        }
        Some(Counters {
            rd_ios: f[0],
            rd_merges: f[1],
            rd_sectors: f[2],
            rd_ticks: f[3],
            wr_ios: f[4],
            wr_merges: f[5],
            wr_sectors: f[6],
            wr_ticks: f[7],
            io_ticks: f[9],
            time_in_queue: f[10],
        })
    }

    fn since(&self, b: &Counters) -> Counters {
        Counters {
            rd_ios: self.rd_ios.wrapping_sub(b.rd_ios),
            rd_merges: self.rd_merges.wrapping_sub(b.rd_merges),
            rd_sectors: self.rd_sectors.wrapping_sub(b.rd_sectors),
            rd_ticks: self.rd_ticks.wrapping_sub(b.rd_ticks),
            wr_ios: self.wr_ios.wrapping_sub(b.wr_ios),
            wr_merges: self.wr_merges.wrapping_sub(b.wr_merges),
            wr_sectors: self.wr_sectors.wrapping_sub(b.wr_sectors),
            wr_ticks: self.wr_ticks.wrapping_sub(b.wr_ticks),
            io_ticks: self.io_ticks.wrapping_sub(b.io_ticks),
            time_in_queue: self.time_in_queue.wrapping_sub(b.time_in_queue),
        }
    }
}

/// iostat's extended figures for one device over one run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceStats {
    /// Device name (`vda`, `nvme0n1p2`, `dm-0`).
    pub device: String,
    /// Time between the two readings, ns.
    pub interval_ns: u64,
    /// Read requests completed.
    pub read_ios: u64,
    /// Write requests completed.
    pub write_ios: u64,
    /// Bytes read (sectors × 512).
    pub read_bytes: u64,
    /// Bytes written.
    pub write_bytes: u64,
    /// `r/s`: read requests completed per second.
    pub r_s: f64,
    /// `w/s`: write requests completed per second.
    pub w_s: f64,
    /// `rrqm/s`: read requests merged per second.
    pub rrqm_s: f64,
    /// `wrqm/s`: write requests merged per second.
    pub wrqm_s: f64,
    /// `rareq-sz`: average read request size, KiB.
    pub rareq_sz_kib: f64,
    /// `wareq-sz`: average write request size, KiB.
    pub wareq_sz_kib: f64,
    /// `r_await`: average read request time (queue + service), ms.
    pub r_await_ms: f64,
    /// `w_await`: average write request time, ms.
    pub w_await_ms: f64,
    /// `aqu-sz`: average number of requests in flight.
    pub aqu_sz: f64,
    /// `%util`: share of the time the device had requests in flight.
    pub util_pct: f64,
}

impl DeviceStats {
    /// The figures from two readings `dt_ns` apart.
    pub fn between(device: &str, before: &Counters, after: &Counters, dt_ns: u64) -> Self {
        let d = after.since(before);
        let secs = dt_ns.max(1) as f64 / 1e9;
        let ms = dt_ns.max(1) as f64 / 1e6;
        let per = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
        DeviceStats {
            device: device.to_string(),
            interval_ns: dt_ns,
            read_ios: d.rd_ios,
            write_ios: d.wr_ios,
            read_bytes: d.rd_sectors * 512,
            write_bytes: d.wr_sectors * 512,
            r_s: d.rd_ios as f64 / secs,
            w_s: d.wr_ios as f64 / secs,
            rrqm_s: d.rd_merges as f64 / secs,
            wrqm_s: d.wr_merges as f64 / secs,
            rareq_sz_kib: per(d.rd_sectors, d.rd_ios) / 2.0,
            wareq_sz_kib: per(d.wr_sectors, d.wr_ios) / 2.0,
            r_await_ms: per(d.rd_ticks, d.rd_ios),
            w_await_ms: per(d.wr_ticks, d.wr_ios),
            aqu_sz: d.time_in_queue as f64 / ms,
            util_pct: (d.io_ticks as f64 / ms * 100.0).min(100.0),
        }
    }

    /// One line in iostat's terms.
    pub fn line(&self) -> String {
        format!(
            "{}: r/s {:.0} rrqm/s {:.0} rareq-sz {:.0}k r_await {:.2} ms  w/s {:.0} wrqm/s {:.0} wareq-sz {:.0}k w_await {:.2} ms  aqu-sz {:.2} %util {:.1}",
            self.device,
            self.r_s,
            self.rrqm_s,
            self.rareq_sz_kib,
            self.r_await_ms,
            self.w_s,
            self.wrqm_s,
            self.wareq_sz_kib,
            self.w_await_ms,
            self.aqu_sz,
            self.util_pct
        )
    }
}

/// The device view of one run: the file's device first, then the devices
/// under it; or why there is none.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceView {
    /// Per device, the file's own first.
    pub devices: Vec<DeviceStats>,
    /// Why no device is reported (tmpfs, network file system, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl DeviceView {
    /// The lines the table shows under a run.
    pub fn lines(&self) -> Vec<String> {
        match &self.note {
            Some(n) => vec![format!("device: {n}")],
            None => self
                .devices
                .iter()
                .enumerate()
                .map(|(i, d)| {
                    if i == 0 {
                        format!("device {}", d.line())
                    } else {
                        format!("  under it {}", d.line())
                    }
                })
                .collect(),
        }
    }
}

/// Where a block device's `stat` file is under a `/sys/block`-like folder:
/// `ROOT/NAME/stat` for a disk or md/dm device, `ROOT/DISK/NAME/stat` for a
/// partition.
pub fn stat_path(sys_block: &Path, name: &str) -> Option<PathBuf> {
    let direct = sys_block.join(name).join("stat");
    if direct.is_file() {
        return Some(direct);
    }
    std::fs::read_dir(sys_block)
        .ok()?
        .flatten()
        .map(|e| e.path().join(name).join("stat"))
        .find(|p| p.is_file())
}

/// The device `name` and every device under it, depth first: a partition's
/// disk, and the members (`slaves/`) of md and dm devices, recursively.
pub fn device_tree(sys_block: &Path, name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut todo = vec![name.to_string()];
    while let Some(n) = todo.pop() {
        if out.contains(&n) || out.len() > 64 {
            continue;
        }
        let Some(stat) = stat_path(sys_block, &n) else {
            continue;
        };
        let dir = stat.parent().expect("stat has a parent").to_path_buf();
        out.push(n);
        if dir.join("partition").is_file() {
            // A partition: its disk is the folder above.
            if let Some(disk) = dir.parent().and_then(|p| p.file_name()) {
                todo.push(disk.to_string_lossy().into_owned());
            }
        }
        let mut members: Vec<String> = std::fs::read_dir(dir.join("slaves"))
            .map(|rd| {
                rd.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        members.sort();
        members.reverse();
        todo.extend(members);
    }
    out
}

/// The block device (disk, partition, md or dm) holding `path`, by name.
pub fn device_name_of(path: &Path) -> Option<String> {
    let link = iolab::file::sys_block_dir(path)?;
    Some(link.file_name()?.to_string_lossy().into_owned())
}

/// Counters of a set of devices at one moment.
#[derive(Clone, Debug)]
pub struct Snapshot {
    sys_block: PathBuf,
    at: Instant,
    devices: Vec<(String, Counters)>,
    note: Option<String>,
}

impl Snapshot {
    /// Reads the counters of the device holding `path` and of those under it.
    pub fn of_file(path: &Path) -> Snapshot {
        match device_name_of(path) {
            Some(name) => Snapshot::of_device(Path::new("/sys/block"), &name),
            None => Snapshot {
                sys_block: PathBuf::from("/sys/block"),
                at: Instant::now(),
                devices: Vec::new(),
                note: Some(format!(
                    "no block device holds {} (tmpfs, a network or FUSE file system?): no device counters",
                    path.display()
                )),
            },
        }
    }

    /// Reads the counters of `name` and the devices under it, in a
    /// `/sys/block`-like folder.
    pub fn of_device(sys_block: &Path, name: &str) -> Snapshot {
        let devices: Vec<(String, Counters)> = device_tree(sys_block, name)
            .into_iter()
            .filter_map(|n| {
                let t = std::fs::read_to_string(stat_path(sys_block, &n)?).ok()?;
                Some((n, Counters::parse(&t)?))
            })
            .collect();
        let note = devices
            .is_empty()
            .then(|| format!("block device {name} has no readable stat file"));
        Snapshot {
            sys_block: sys_block.to_path_buf(),
            at: Instant::now(),
            devices,
            note,
        }
    }

    /// Reads the same devices again and gives the figures since this snapshot.
    pub fn finish(&self) -> DeviceView {
        let dt = self.at.elapsed().as_nanos() as u64;
        if let Some(n) = &self.note {
            return DeviceView {
                devices: Vec::new(),
                note: Some(n.clone()),
            };
        }
        let devices = self
            .devices
            .iter()
            .filter_map(|(n, before)| {
                let t = std::fs::read_to_string(stat_path(&self.sys_block, n)?).ok()?;
                let after = Counters::parse(&t)?;
                Some(DeviceStats::between(n, before, &after, dt))
            })
            .collect();
        DeviceView {
            devices,
            note: None,
        }
    }
}

/// CSV column names for the file's device figures.
pub const CSV_HEADER: &[&str] = &[
    "device",
    "r_s",
    "w_s",
    "rrqm_s",
    "wrqm_s",
    "rareq_sz_kib",
    "wareq_sz_kib",
    "r_await_ms",
    "w_await_ms",
    "aqu_sz",
    "util_pct",
];

/// CSV fields of the file's own device (empty when there is none).
pub fn csv_fields(v: Option<&DeviceView>) -> Vec<String> {
    match v.and_then(|v| v.devices.first()) {
        None => vec![String::new(); CSV_HEADER.len()],
        Some(d) => vec![
            d.device.clone(),
            format!("{:.1}", d.r_s),
            format!("{:.1}", d.w_s),
            format!("{:.1}", d.rrqm_s),
            format!("{:.1}", d.wrqm_s),
            format!("{:.1}", d.rareq_sz_kib),
            format!("{:.1}", d.wareq_sz_kib),
            format!("{:.3}", d.r_await_ms),
            format!("{:.3}", d.w_await_ms),
            format!("{:.3}", d.aqu_sz),
            format!("{:.1}", d.util_pct),
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn iostat_figures_follow_iostat_definitions() {
        let a = Counters::parse("100 10 800 50 0 0 0 0 0 1000 2000 0 0 0 0 0 0").unwrap();
        // +100 reads of 2048 sectors (1 MiB each), 20 merges, 300 ms of
        // read time, 500 ms busy, 1000 weighted ms, over one second.
        let b = Counters::parse("200 30 205600 350 5 1 40 10 0 1500 3000 0 0 0 0 0 0").unwrap();
        let s = DeviceStats::between("vda", &a, &b, 1_000_000_000);
        assert_eq!(s.read_ios, 100);
        assert_eq!(s.read_bytes, 204800 * 512);
        assert!((s.r_s - 100.0).abs() < 1e-9);
        assert!((s.rrqm_s - 20.0).abs() < 1e-9);
        assert!((s.rareq_sz_kib - 1024.0).abs() < 1e-9);
        assert!((s.r_await_ms - 3.0).abs() < 1e-9);
        assert!((s.wareq_sz_kib - 4.0).abs() < 1e-9);
        assert!((s.w_await_ms - 2.0).abs() < 1e-9);
        assert!((s.aqu_sz - 1.0).abs() < 1e-9);
        assert!((s.util_pct - 50.0).abs() < 1e-9);
        assert!(s.line().contains("rareq-sz 1024k"), "{}", s.line());
    }

    #[test]
    fn short_or_garbled_stat_files_are_refused() {
        assert_eq!(Counters::parse("1 2 3"), None);
        assert_eq!(Counters::parse("1 2 x 4 5 6 7 8 9 10 11"), None);
        assert!(Counters::parse("0 0 0 0 0 0 0 0 0 0 0").is_some());
    }

    /// A tree laid out like /sys/block: disk sda with partition sda1, md0
    /// over sdb and sdc, dm-0 over md0 and sda1.
    fn fixture() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        let r = d.path();
        let stat = |p: PathBuf, n: u64| {
            fs::create_dir_all(&p).unwrap();
            fs::write(p.join("stat"), format!("{n} 0 {} 0 0 0 0 0 0 0 0\n", n * 8)).unwrap();
        };
        stat(r.join("sda"), 1);
        stat(r.join("sda/sda1"), 2);
        fs::write(r.join("sda/sda1/partition"), "1\n").unwrap();
        for n in ["sdb", "sdc"] {
            stat(r.join(n), 3);
        }
        stat(r.join("md0"), 4);
        fs::create_dir_all(r.join("md0/slaves/sdb")).unwrap();
        fs::create_dir_all(r.join("md0/slaves/sdc")).unwrap();
        stat(r.join("dm-0"), 5);
        fs::create_dir_all(r.join("dm-0/slaves/md0")).unwrap();
        fs::create_dir_all(r.join("dm-0/slaves/sda1")).unwrap();
        d
    }

    #[test]
    fn partitions_and_stacked_devices_are_followed_down() {
        let d = fixture();
        let r = d.path();
        assert_eq!(stat_path(r, "sda1"), Some(r.join("sda/sda1/stat")));
        assert_eq!(stat_path(r, "nope"), None);
        assert_eq!(device_tree(r, "sda1"), vec!["sda1", "sda"]);
        assert_eq!(device_tree(r, "md0"), vec!["md0", "sdb", "sdc"]);
        assert_eq!(
            device_tree(r, "dm-0"),
            vec!["dm-0", "md0", "sdb", "sdc", "sda1", "sda"]
        );
        let snap = Snapshot::of_device(r, "dm-0");
        // Counters move on the fixture: the view reports the difference.
        fs::write(r.join("sdb/stat"), "13 0 104 0 0 0 0 0 0 0 0\n").unwrap();
        let v = snap.finish();
        assert_eq!(v.note, None);
        let names: Vec<_> = v.devices.iter().map(|s| s.device.as_str()).collect();
        assert_eq!(names, ["dm-0", "md0", "sdb", "sdc", "sda1", "sda"]);
        let sdb = &v.devices[2];
        assert_eq!((sdb.read_ios, sdb.read_bytes), (10, 80 * 512));
        assert_eq!(v.devices[0].read_ios, 0);
    }

    #[test]
    fn a_missing_device_is_said_not_guessed() {
        let d = tempfile::tempdir().unwrap();
        let v = Snapshot::of_device(d.path(), "vdz").finish();
        assert!(v.devices.is_empty());
        assert!(v.note.unwrap().contains("vdz"));
        // /proc is on no block device.
        let v = Snapshot::of_file(Path::new("/proc/self/stat")).finish();
        assert!(
            v.note.unwrap().contains("no block device"),
            "tmpfs-like file systems are named"
        );
    }
}
