//! What iolab does with each option fio documents: runs it as fio does
//! ([`Class::Mapped`], see `map/`), accepts it with a one-line note because
//! it cannot change what is measured ([`Class::Noted`]), refuses it with the
//! reason ([`Class::Refused`]), or names the engines it belongs to
//! ([`Class::Engine`]: the job is refused at its `ioengine=` line when iolab
//! has none of them).

/// Every option name fio knows: its general options (fio 3.33 and the
/// current source), its aliases, the options of each of its engines (a
/// second column `engine:NAME,...`) and of its built-in profiles
/// (`profile:NAME`). Used to tell an option iolab does not run from a
/// misspelling, and to blame the right line.
const FIO_NAMES: &str = include_str!("fio_names.txt");

/// How iolab treats an option.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// Run as fio runs it (see `map/`).
    Mapped,
    /// Accepted: it cannot change what is measured; the note says why.
    Noted(&'static str),
    /// fio has it, iolab does not do it: refused with this reason.
    Refused(&'static str),
    /// An option of these engines (fio's names, comma-separated), none of
    /// which iolab runs it for.
    Engine(&'static str),
    /// An option of a built-in fio profile (`profile=NAME`).
    Profile(&'static str),
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
        "blocksize_unaligned" => "bs_unaligned",
        "blockalign" => "ba",
        "iodepth_batch_submit" => "iodepth_batch",
        "iodepth_batch_complete" => "iodepth_batch_complete_min",
        "wait_for_previous" => "stonewall",
        "io_limit" => "io_size",
        "nr_files" => "nrfiles",
        "fileoffset" => "offset",
        "iomem" => "mem",
        "mem_align" => "iomem_align",
        "allrandrepeat" => "randrepeat",
        "ratemin" => "rate_min",
        "ratecycle" => "rate_cycle",
        "disable_bw" => "disable_bw_measurement",
        "fill_fs" => "fill_device",
        "log_max_value" => "log_window_value",
        "log_unix_epoch" => "log_alternate_epoch",
        "data_placement" => "dataplacement",
        "fdp_pli_select" => "plid_select",
        "fdp_pli" => "plids",
        "ss" => "steadystate",
        "ss_dur" => "steadystate_duration",
        "ss_ramp" => "steadystate_ramp_time",
        "ss_interval" => "steadystate_check_interval",
        k => k,
    }
}

/// The options iolab runs as fio does (canonical names).
pub const MAPPED: &[&str] = &[
    "name",
    "filename",
    "directory",
    "nrfiles",
    "file_service_type",
    "filesize",
    "size",
    "offset",
    "offset_align",
    "io_size",
    "number_ios",
    "bs",
    "bsrange",
    "bssplit",
    "ba",
    "bs_unaligned",
    "rw",
    "rw_sequencer",
    "rwmixread",
    "rwmixwrite",
    "ioengine",
    "gpu_dev_ids",
    "cuda_io",
    "iodepth",
    "iodepth_low",
    "iodepth_batch",
    "iodepth_batch_complete_min",
    "iodepth_batch_complete_max",
    "io_submit_mode",
    "direct",
    "buffered",
    "sync",
    "invalidate",
    "pre_read",
    "fadvise_hint",
    "runtime",
    "time_based",
    "ramp_time",
    "startdelay",
    "loops",
    "norandommap",
    "randrepeat",
    "randseed",
    "random_distribution",
    "random_sequence_stride",
    "hipri",
    "fixedbufs",
    "registerfiles",
    "sqthread_poll",
    "sqthread_poll_cpu",
    "cpus_allowed",
    "cpus_allowed_policy",
    "cpumask",
    "mem",
    "rate",
    "rate_iops",
    "rate_min",
    "rate_iops_min",
    "rate_cycle",
    "rate_process",
    "rate_ignore_thinktime",
    "thinktime",
    "thinktime_spin",
    "thinktime_blocks",
    "thinktime_blocks_type",
    "thinktime_iotime",
    "flow",
    "flow_id",
    "flow_sleep",
    "flow_watermark",
    "latency_target",
    "latency_window",
    "latency_percentile",
    "latency_run",
    "max_latency",
    "fsync",
    "fdatasync",
    "end_fsync",
    "fsync_on_close",
    "create_on_open",
    "create_only",
    "allow_file_create",
    "fill_device",
    "unlink",
    "fallocate",
    "openfiles",
    "overwrite",
    "refill_buffers",
    "zero_buffers",
    "scramble_buffers",
    "buffer_pattern",
    "buffer_compress_percentage",
    "buffer_compress_chunk",
    "verify",
    "do_verify",
    "verify_only",
    "verify_backlog",
    "verify_backlog_batch",
    "verify_interval",
    "verify_offset",
    "verify_pattern",
    "verify_fatal",
    "verify_dump",
    "verify_async",
    "verify_write_sequence",
    "verify_header_seed",
    "verifysort",
    "verifysort_nr",
    "lat_percentiles",
    "clat_percentiles",
    "slat_percentiles",
    "percentile_list",
    "gtod_reduce",
    "disk_util",
    "unified_rw_reporting",
    "bwavgtime",
    "write_bw_log",
    "write_lat_log",
    "write_iops_log",
    "log_avg_msec",
    "log_window_value",
    "log_offset",
    "log_alternate_epoch",
    "per_job_logs",
    "numjobs",
    "group_reporting",
    "stonewall",
    "new_group",
    "wait_for",
    "exitall",
    "exit_what",
    "thread",
    "kb_base",
    "disable_slat",
    "disable_clat",
    "disable_lat",
    "offset_increment",
    "filename_format",
    "continue_on_error",
];

/// Options that cannot change what is measured, with the note iolab
/// prints when a job sets one.
fn note(key: &str) -> Option<&'static str> {
    Some(match key {
        "description" => "a job's description is text only",
        "clocksource" | "gtod_cpu" => "iolab times every I/O with its own calibrated TSC clock",
        "significant_figures" | "unit_base" => "output formatting: iolab prints fio's defaults",
        "iopsavgtime" => "iolab samples bandwidth and IOPS together, every bwavgtime",
        "disable_bw_measurement" => {
            "iolab still samples bandwidth (its cost is one clock read per completion round)"
        }
        "create_serialize" | "create_fsync" => {
            "iolab lays out a job's files before any job starts, outside the measured time"
        }
        "exitall_on_error" => "an error ends iolab's run of every job",
        "ignore_error" | "error_dump" => {
            "iolab counts failed I/Os by direction (continue_on_error), not by errno"
        }
        "random_generator" => {
            "iolab draws offsets with its own generator; the law (uniform, zipf, ...) is the job's"
        }
        "softrandommap" => "iolab's random map (a permutation) never runs out of memory",
        "serialize_overlap" => "iolab's I/Os of one job never overlap in flight",
        "allow_mounted_write" => "iolab never writes to block devices",
        "unique_filename" => "iolab names files as filename/filename_format say",
        "unlink_each_loop" => {
            "iolab keeps a job's files between loops and removes what it made with unlink=1"
        }
        "per_job_logs"
        | "log_prio"
        | "log_issue_time"
        | "log_compression"
        | "log_store_compressed"
        | "log_compression_cpus"
        | "log_entries"
        | "job_start_clock_id"
        | "log_alternate_epoch_clock_id" => {
            "log presentation: iolab writes fio's default log lines"
        }
        "write_hist_log" | "log_hist_msec" | "log_hist_coarseness" => {
            "iolab writes no histogram logs (json+ has the full histogram)"
        }
        "write_iolog" => "iolab writes no I/O log of its own (`iolab record` captures traces)",
        "block_error_percentiles" => {
            "reported for trim errors only, which iolab's trims do not have"
        }
        "hugepage-size" => "iolab's huge-page buffers use the system's default huge page size",
        "iomem_align" => "iolab aligns buffers to the page (and to O_DIRECT's alignment)",
        "end_syncfs" => "iolab syncs the job's files at its end (fsync), outside the measured time",
        "filetype" => "iolab finds each file's type itself",
        "rwmixcycle" => "an option fio no longer uses",
        "comm" => "the process name is iolab's",
        "stats" => "iolab reports every job's statistics",
        _ => return None,
    })
}

/// Why iolab refuses an option fio knows.
fn reason(key: &str) -> &'static str {
    match key {
        k if k.starts_with("zone") || k.ends_with("_zones") || k == "read_beyond_wp" || k == "ignore_zone_limits" || k == "recover_zbd_write_error" || k == "write_zone_remainder" => {
            "zoned block devices (zonemode, zone sizes and resets) are not supported by iolab"
        }
        k if k.starts_with("dedupe") => "iolab does not generate dedupable buffers",
        k if k.starts_with("replay") || k == "read_iolog" || k == "read_iolog_chunked" || k.starts_with("merge_blktrace") => {
            "replaying I/O logs is iolab's `replay` command, not a job option"
        }
        k if k.starts_with("steadystate") => "iolab has no steady-state detection (it measures for the time or bytes given)",
        k if k.starts_with("cgroup") => "iolab does not place jobs in cgroups",
        k if k.starts_with("numa_") => "iolab does not set NUMA placement (use cpus_allowed)",
        k if k.starts_with("prio") || k.starts_with("cmdprio") => "iolab does not set I/O priorities",
        k if k.starts_with("trim_") => "iolab verifies no trims (trim_percentage, trim_backlog)",
        k if k.starts_with("spr") => "SPRandom preconditioning (an order of writes that brings an SSD to its steady state) is not one of iolab's patterns",
        "experimental_verify" => "iolab verifies against its pattern, not by replaying the written log",
        "verify_state_save" | "verify_state_load" | "verify_async_cpus" | "verify_policy" | "verify_pattern_interval" => {
            "iolab verifies every block it wrote against its pattern, after the writes"
        }
        "percentage_random" | "percentage_sequential" | "bs_is_seq_rand" | "thinkcycles" | "ramp_size" => {
            "iolab does not mix sequential and random offsets in one job"
        }
        "sync_file_range" | "write_barrier" => "iolab issues fsync and fdatasync, not sync_file_range or barriers",
        "opendir" => "iolab takes a job's files from filename, filename_format and nrfiles, not from a folder's listing",
        "file_append" => "iolab's I/O stays in [offset, offset + size) of each file",
        "lockfile" => "iolab does not lock files between jobs",
        "exec_prerun" | "exec_postrun" => "iolab runs no commands from job files",
        "ioscheduler" => "iolab does not change the device's I/O scheduler",
        "lockmem" => "iolab does not lock memory away from the run",
        "profile" => "fio's built-in profiles are not supported",
        "nice" | "uid" | "gid" => "iolab runs with the priority and identity of the user who starts it",
        "write_hint" | "atomic" => "iolab sets no write hints and issues no atomic writes",
        "gpu_dev_id" => "it goes with mem=cudamalloc (GPUDirect RDMA with ioengine=rdma), which iolab does not run; libcufile's GPUs are gpu_dev_ids",
        _ => "not supported by iolab",
    }
}

/// Why iolab refuses an option of an engine it has but does not run the
/// option for.
fn engine_reason(key: &str) -> &'static str {
    match key {
        "nonvectored" | "libaio_vectored" => {
            "iolab's engines issue one buffer per I/O as they are built to"
        }
        "force_async" => "iolab's io_uring engine lets the kernel decide when to go async",
        "userspace_reap" => "iolab's libaio engine reaps with io_getevents",
        "hipri_percentage" => "iolab polls every I/O of a hipri job, or none",
        "nowait" => "iolab's engines do not use RWF_NOWAIT",
        "uncached" => "iolab's engines do not use RWF_DONTCACHE",
        "thp" => "iolab's mmap engine does not ask for transparent huge pages",
        _ => "an engine option iolab's engines do not implement",
    }
}

/// One line of [`FIO_NAMES`]: the name and what it belongs to.
fn lookup(key: &str) -> Option<&'static str> {
    FIO_NAMES.lines().find_map(|l| {
        let (n, kind) = l.split_once('\t').unwrap_or((l, ""));
        (n == key).then_some(kind)
    })
}

/// Classifies a canonical option name.
pub fn class(key: &str) -> Class {
    if MAPPED.contains(&key) {
        return Class::Mapped;
    }
    if let Some(n) = note(key) {
        return Class::Noted(n);
    }
    match lookup(key) {
        None => Class::Unknown,
        Some(kind) => {
            if let Some(e) = kind.strip_prefix("engine:") {
                Class::Engine(e)
            } else if let Some(p) = kind.strip_prefix("profile:") {
                Class::Profile(p)
            } else {
                Class::Refused(reason(key))
            }
        }
    }
}

/// Why the engine option `key` is refused for a job whose engine has it.
pub fn engine_option_reason(key: &str) -> &'static str {
    engine_reason(key)
}

/// For a mapped option that iolab takes only in part: what it takes (the
/// rest is refused with a message naming the job, line and option).
pub fn limits(name: &str) -> Option<&'static str> {
    Some(match name {
        "filename" => "a ':'-separated list is shared by every thread of the job",
        "nrfiles" => "not with filename= (the files are the ones it names)",
        "file_service_type" => "roundrobin, sequential, random, zipf, pareto, normal (gauss), each with :N",
        "kb_base" => "1024 only",
        "random_distribution" => "random, zipf:θ, pareto:h, normal:dev, zoned and zoned_abs",
        "filename_format" => "STEM.$jobnum, or STEM.$jobnum.$filenum with nrfiles",
        "verify" => "iolab checks every byte read against its pattern (a pure function of seed and offset), whichever checksum is named",
        "unified_rw_reporting" => "none (0) only: reads and writes reported apart",
        "mem" => "malloc, shm, mmap (shared memory and mmap'd memory are iolab's malloc), mmaphuge and shmhuge (huge pages); not cudamalloc (GPUDirect RDMA, ioengine=rdma)",
        "fallocate" => "files iolab lays out are written in full: every mode behaves as native",
        "ioengine" => "iolab's engines, and libcufile (reads copied into a GPU)",
        "cuda_io" => "posix and cufile (with direct=1), both run as pread, then a copy into the GPU inside the op (no GPUDirect Storage); reads only",
        "gpu_dev_ids" => "GPU numbers separated by ':', handed out round robin over a job's clones",
        _ => return None,
    })
}

/// Every option fio documents, with iolab's treatment, for the table in
/// the guide and `iolab fio --list-options`.
pub fn table() -> Vec<(String, Class)> {
    let mut v: Vec<(String, Class)> = FIO_NAMES
        .lines()
        .map(|l| l.split('\t').next().unwrap_or(l))
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

/// The table as `iolab fio --list-options` prints it: one option a line,
/// its name padded to a column, then what iolab does with it.
pub fn table_text() -> String {
    use std::fmt::Write;
    let mut o = String::new();
    for (name, class) in table() {
        let what = match class {
            Class::Mapped => match limits(&name) {
                Some(l) => format!("supported: {l}"),
                None => "supported".to_string(),
            },
            Class::Noted(n) => format!("accepted with a note: {n}"),
            Class::Refused(why) => format!("refused: {why}"),
            Class::Engine(e) => {
                let list = e.replace(',', ", ");
                if e.split(',').any(|x| iolab::engine::EngineKind::of_fio(x).is_some()) {
                    format!("refused: an option of ioengine {list}: {}", engine_reason(&name))
                } else {
                    format!("refused: an option of ioengine {list}, none of which iolab has (the job's ioengine= line is named)")
                }
            }
            Class::Profile(p) => format!("option of fio's {p} profile: accepted with a note, it changes nothing without profile={p}"),
            Class::Unknown => continue,
        };
        let _ = writeln!(o, "{name:<28} {what}");
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aliases_map_to_the_names_fio_documents() {
        assert_eq!(canonical("timeout"), "runtime");
        assert_eq!(canonical("readwrite"), "rw");
        assert_eq!(canonical("iodepth_batch_submit"), "iodepth_batch");
        assert_eq!(canonical("blockalign"), "ba");
        assert_eq!(canonical("bs"), "bs");
    }

    #[test]
    fn classes() {
        assert_eq!(class("bs"), Class::Mapped);
        assert_eq!(class("verify"), Class::Mapped);
        assert!(matches!(class("description"), Class::Noted(_)));
        assert!(matches!(class("zonemode"), Class::Refused(r) if r.contains("zoned")));
        assert!(matches!(class("steadystate"), Class::Refused(r) if r.contains("steady")));
        assert_eq!(class("http_host"), Class::Engine("http"));
        assert_eq!(class("fdp"), Class::Engine("io_uring_cmd,xnvme"));
        assert_eq!(class("threads"), Class::Profile("tiobench"));
        assert_eq!(class("blocksise"), Class::Unknown);
        // Every name iolab maps or notes is one fio knows (no typos).
        for m in MAPPED {
            assert!(lookup(m).is_some(), "{m} is not a fio option");
        }
        for (n, c) in table() {
            if let Class::Noted(_) = c {
                assert!(lookup(&n).is_some(), "{n}");
            }
        }
        assert!(table().len() > 300);
    }
}
