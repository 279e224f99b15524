//! Which of fio's options iolab maps, which it refuses (and why), which
//! only change presentation (refused too, unless `--lenient` makes them
//! warnings), and fio's aliases.

/// Names fio 3.33 documents (`fio --cmdhelp=all`, the aliases, and the
/// options of the engines iolab maps): used to tell an option fio knows
/// but iolab does not support from a misspelling.
const FIO_NAMES: &str = include_str!("fio_names.txt");

/// How iolab treats an option.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// Mapped onto the workload (see `map.rs`).
    Mapped,
    /// Changes only presentation or bookkeeping, not what is measured:
    /// refused, or a warning with `--lenient`.
    Cosmetic,
    /// fio has it, iolab does not do it: refused with this reason.
    Refused(&'static str),
    /// Not an option fio knows.
    Unknown,
}

/// fio's aliases, to the name iolab handles.
pub fn canonical(key: &str) -> &str {
    match key {
        "timeout" => "runtime",
        "readwrite" => "rw",
        "blocksize" => "bs",
        "blocksize_range" => "bsrange",
        "iodepth_batch_submit" => "iodepth_batch",
        "iodepth_batch_complete" => "iodepth_batch_complete_min",
        "wait_for_previous" => "stonewall",
        "io_limit" => "io_size",
        "nr_files" => "nrfiles",
        "fileoffset" => "offset",
        "iomem" => "mem",
        "blockalign" => "ba",
        "blocksize_unaligned" => "bs_unaligned",
        "ratemin" => "rate_min",
        "ratecycle" => "rate_cycle",
        "disable_bw" => "disable_bw_measurement",
        "fill_fs" => "fill_device",
        "ss" => "steadystate",
        "ss_dur" => "steadystate_duration",
        "ss_ramp" => "steadystate_ramp_time",
        k => k,
    }
}

/// The options iolab maps (canonical names).
pub const MAPPED: &[&str] = &[
    "name",
    "filename",
    "directory",
    "nrfiles",
    "file_service_type",
    "filesize",
    "size",
    "offset",
    "io_size",
    "number_ios",
    "bs",
    "bsrange",
    "rw",
    "rwmixread",
    "rwmixwrite",
    "ioengine",
    "iodepth",
    "iodepth_batch",
    "iodepth_batch_complete_min",
    "iodepth_batch_complete_max",
    "direct",
    "buffered",
    "invalidate",
    "runtime",
    "time_based",
    "ramp_time",
    "startdelay",
    "loops",
    "norandommap",
    "randrepeat",
    "randseed",
    "random_distribution",
    "hipri",
    "fixedbufs",
    "registerfiles",
    "sqthread_poll",
    "sqthread_poll_cpu",
    "cpus_allowed",
    "cpus_allowed_policy",
    "rate",
    "rate_iops",
    "thinktime",
    "fsync",
    "fdatasync",
    "end_fsync",
    "create_on_open",
    "allow_file_create",
    "unlink",
    "lat_percentiles",
    "clat_percentiles",
    "slat_percentiles",
    "percentile_list",
    "write_bw_log",
    "write_lat_log",
    "write_iops_log",
    "log_avg_msec",
    "numjobs",
    "group_reporting",
    "stonewall",
    "new_group",
    "thread",
    "kb_base",
    "disable_slat",
    "disable_clat",
    "disable_lat",
    "offset_increment",
    "filename_format",
    "continue_on_error",
];

/// Options that change only presentation or bookkeeping.
pub const COSMETIC: &[&str] = &[
    "description",
    "per_job_logs",
    "log_offset",
    "log_unix_epoch",
    "log_prio",
    "log_max_value",
    "log_compression",
    "log_store_compressed",
    "significant_figures",
    "exitall",
    "exitall_on_error",
    "clocksource",
    "gtod_reduce",
    "disk_util",
    "unit_base",
    "create_serialize",
    "fallocate",
    "bwavgtime",
    "iopsavgtime",
    "stats",
    "uid",
    "gid",
    "nice",
];

/// Why iolab refuses an option fio knows.
fn reason(key: &str) -> &'static str {
    match key {
        k if k.starts_with("verify") || k == "do_verify" || k == "experimental_verify" => {
            "fio's verification writes its own headers; iolab verifies its own pattern (iolab bench --verify)"
        }
        k if k.starts_with("zone") || k.ends_with("_zones") || k == "read_beyond_wp" || k == "ignore_zone_limits" => {
            "zoned block devices are not supported by iolab"
        }
        k if k.starts_with("dedupe") || k.starts_with("buffer_") || k == "refill_buffers" || k == "scramble_buffers" || k == "zero_buffers" => {
            "iolab writes its own verifiable pattern; fio's buffer contents options do not apply"
        }
        k if k.starts_with("replay") || k.contains("iolog") || k.starts_with("merge_blktrace") => {
            "replaying I/O logs is iolab's `replay` command, not a job option"
        }
        k if k.starts_with("steadystate") => "iolab has no steady-state detection",
        k if k.starts_with("cgroup") || k.starts_with("numa_") || k.starts_with("prio") || k == "cpumask" || k == "ioscheduler" => {
            "iolab does not change scheduling, cgroups or NUMA placement"
        }
        k if k.starts_with("trim") => "iolab does not issue trims",
        k if k.starts_with("latency_") || k == "max_latency" => {
            "iolab has no latency-target mode"
        }
        k if k.starts_with("rate_") || k == "flow" || k.starts_with("flow_") => {
            "iolab paces only by rate or rate_iops, not by these"
        }
        k if k.starts_with("thinktime_") => "iolab supports plain thinktime only",
        k if k.starts_with("cmdprio") => "iolab does not set I/O priorities",
        "bssplit" => "iolab uses one block size per job (bs)",
        "ba" | "bs_unaligned" => "iolab aligns every op to bs",
        "mem" => "buffer backing is chosen by iolab's engines, not by job files",
        "sync" | "write_barrier" | "sync_file_range" | "fsync_on_close" | "create_fsync" => {
            "iolab issues no syncs of its own during a job"
        }
        "opendir" => "iolab takes a job's files from filename, filename_format and nrfiles, not from a folder's listing",
        "openfiles" => "iolab keeps every file of a job open for the whole job",
        "file_append" => "iolab's I/O stays in [offset, offset + size) of each file",
        "lockfile" => "iolab does not lock files between threads",
        "unique_filename" => "iolab names files as filename/filename_format say (fio's client prefix does not apply)",
        "overwrite" | "create_only" | "pre_read" | "fill_device" => {
            "iolab lays out missing files itself and never measures the layout"
        }
        "rw_sequencer" | "percentage_random" | "random_generator" | "allrandrepeat" => {
            "iolab's offsets are seq, uniformly random (norandommap) or a shuffle (fio's random map)"
        }
        "unified_rw_reporting" => "iolab reports reads and writes as fio does by default",
        "ignore_error" | "error_dump" => {
            "iolab counts failed ops with continue_on_error, by kind of op, not by errno"
        }
        "exec_prerun" | "exec_postrun" => "iolab runs no commands from job files",
        "wait_for" => "iolab waits only for all jobs before (stonewall), not for a named one",
        "disable_bw_measurement" => "iolab always measures bandwidth",
        "write_hist_log" | "log_hist_msec" | "log_hist_coarseness" | "log_entries" | "log_alternate_epoch" | "log_alternate_epoch_clock_id" | "log_compression_cpus" => {
            "iolab writes bw, lat and iops logs only"
        }
        "block_error_percentiles" => "iolab does not track block errors",
        "iodepth_low" => "iolab refills the queue as soon as a slot frees",
        "io_submit_mode" => "iolab submits inline",
        "fadvise_hint" => "iolab sets the access hint from the pattern",
        "lockmem" => "iolab does not lock memory",
        "profile" => "fio's built-in profiles are not supported",
        "atomic" | "write_hint" => "iolab does not set write hints or atomic writes",
        "cmd_type" | "force_async" | "hipri_percentage" | "nonvectored" | "nowait" | "thp" | "uncached" | "userspace_reap" => {
            "this engine option is not supported by iolab's engines"
        }
        "allow_mounted_write" => "iolab never writes to block devices",
        "gtod_cpu" => "iolab reads the TSC clock in each thread",
        _ => "not supported by iolab",
    }
}

/// Classifies a canonical option name.
pub fn class(key: &str) -> Class {
    if MAPPED.contains(&key) {
        Class::Mapped
    } else if COSMETIC.contains(&key) {
        Class::Cosmetic
    } else if FIO_NAMES.lines().any(|n| n == key) {
        Class::Refused(reason(key))
    } else {
        Class::Unknown
    }
}

/// For a mapped option that iolab takes only in part: what it takes (the
/// rest is refused with a message naming the job, line and option).
pub fn limits(name: &str) -> Option<&'static str> {
    Some(match name {
        "filename" => "a ':'-separated list is shared by every thread of the job",
        "nrfiles" => "not with filename= (the files are the ones it names)",
        "file_service_type" => "roundrobin (fio's default) only",
        "fsync" | "fdatasync" => {
            "one of the two per job; the writing thread syncs before its next I/O, as fio"
        }
        "kb_base" => "1024 only",
        "rw" => {
            "no trims; randread:N runs are drawn from the uniform law only (no random_distribution)"
        }
        "random_distribution" => "random, zipf:θ, pareto:h, normal:dev (not zoned)",
        "filename_format" => "STEM.$jobnum, or STEM.$jobnum.$filenum with nrfiles",
        _ => return None,
    })
}

/// Every option fio documents, with iolab's treatment, for the table in
/// the README and `iolab fio --list-options`.
pub fn table() -> Vec<(String, Class)> {
    let mut v: Vec<(String, Class)> = FIO_NAMES
        .lines()
        .filter(|n| !n.is_empty() && canonical(n) == *n)
        .map(|n| (n.to_string(), class(n)))
        .collect();
    for m in MAPPED {
        if !v.iter().any(|(n, _)| n == m) {
            v.push((m.to_string(), Class::Mapped));
        }
    }
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aliases_map_to_the_names_fio_documents() {
        assert_eq!(canonical("timeout"), "runtime");
        assert_eq!(canonical("readwrite"), "rw");
        assert_eq!(canonical("iodepth_batch_submit"), "iodepth_batch");
        assert_eq!(canonical("bs"), "bs");
    }

    #[test]
    fn classes() {
        assert_eq!(class("bs"), Class::Mapped);
        assert_eq!(class("description"), Class::Cosmetic);
        assert!(matches!(class("verify"), Class::Refused(r) if r.contains("verif")));
        assert!(matches!(class("zonemode"), Class::Refused(_)));
        assert_eq!(class("blocksise"), Class::Unknown);
        // Every name iolab maps is one fio knows (no typos in the table).
        for m in MAPPED {
            assert!(
                FIO_NAMES.lines().any(|n| n == *m),
                "{m} is not a fio option"
            );
        }
        for c in COSMETIC {
            assert!(FIO_NAMES.lines().any(|n| n == *c), "{c}");
        }
        assert!(table().len() > 200);
    }
}
