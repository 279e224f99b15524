//! The mapping of fio jobs, option by option.

use super::*;
use crate::parse::Reader;
use iolab_bench::spec::{AccessPattern, CacheMode, OpMix, SyncEvery};
use std::path::Path;
use std::path::PathBuf;

fn jobs(text: &str, lenient: bool) -> Result<Vec<FioJob>, FioJobError> {
    let mut r = Reader::new();
    r.read_text(text, Path::new("j.fio"), 0)?;
    map_all(&r.finish(), lenient)
}

fn one(text: &str) -> FioJob {
    jobs(text, false).unwrap().remove(0)
}

fn err(text: &str) -> String {
    jobs(text, false).unwrap_err().to_string()
}

#[test]
fn a_plain_random_read_job_maps_to_the_spec() {
    let j = one("[global]\nioengine=io_uring\ndirect=1\n[rr]\nfilename=/tmp/x\nsize=64m\nrw=randread\nbs=4k\niodepth=32\niodepth_batch_submit=8\nnorandommap\nruntime=10s\ntime_based\n");
    let s = &j.spec;
    assert_eq!(s.engine, EngineKind::Uring);
    assert!(s.direct);
    assert_eq!((s.bs, s.qd, s.batch_submit), (4096, 32, 8));
    assert_eq!(s.pattern, AccessPattern::Rand);
    assert_eq!(s.file, PathBuf::from("/tmp/x"));
    assert_eq!(s.file_size, 64 << 20);
    assert_eq!(s.stop.time_ns, Some(10_000_000_000));
    assert_eq!(s.stop.bytes, None);
    assert_eq!(s.cache, CacheMode::Cold);
    assert_eq!(j.global_options.len(), 2);
    assert_eq!(j.job_options[0], ("filename".into(), "/tmp/x".into()));
}

#[test]
fn a_sequential_suffix_is_a_stride_and_skewed_laws_map_to_patterns() {
    let j = one("[s]\nfilename=/x\nsize=1m\nrw=read:8k\n");
    assert_eq!(j.spec.pattern, AccessPattern::Stride(8192));
    assert!(
        j.notes.iter().any(|n| n.contains("stride:8192")),
        "{:?}",
        j.notes
    );
    // `:0` and `:1` on random I/O are fio's default.
    assert_eq!(
        one("[r]\nfilename=/x\nsize=1m\nrw=randread:1\nnorandommap\n")
            .spec
            .pattern,
        AccessPattern::Rand
    );
    // `:N` > 1 on random I/O: N I/Os per random offset.
    let r = one("[r]\nfilename=/x\nsize=1m\nrw=randrw:8\nnorandommap\n");
    assert_eq!(r.spec.pattern, AccessPattern::RandRun(8));
    let said: Vec<&String> = r
        .notes
        .iter()
        .filter(|n| n.contains("rand-run:8"))
        .collect();
    assert_eq!(said.len(), 1, "{:?}", r.notes);
    let r = one("[r]\nfilename=/x\nsize=1m\nrw=randwrite:4\n");
    assert_eq!(r.spec.pattern, AccessPattern::ShuffleRun(4));
    let z = one("[z]\nfilename=/x\nsize=1m\nrw=randread\nrandom_distribution=zipf:1.2\n");
    assert_eq!(z.spec.pattern.to_string(), "zipf:1.2");
    let n = one("[n]\nfilename=/x\nsize=1m\nrw=randread\nrandom_distribution=normal:10\n");
    assert_eq!(n.spec.pattern.name(), "normal");
    // A law on sequential I/O changes nothing, as in fio.
    let q = one("[q]\nfilename=/x\nsize=1m\nrw=read\nrandom_distribution=zipf:1.2\n");
    assert_eq!(q.spec.pattern, AccessPattern::Seq);
}

#[test]
fn offset_moves_the_region_as_fio_does() {
    // [offset, offset + size): the file made holds both.
    let j = one("[o]\nfilename=/x\nsize=1m\noffset=256k\n");
    assert_eq!((j.spec.offset, j.spec.file_size), (256 << 10, 1 << 20));
    assert_eq!(j.spec.file_end(), (1 << 20) + (256 << 10));
    // filesize without size: the region is the rest of the file.
    let j = one("[o]\nfilename=/x\nfilesize=1m\noffset=256k\n");
    assert_eq!((j.spec.offset, j.spec.file_size), (256 << 10, 768 << 10));
    assert_eq!(j.spec.stop.bytes, Some(768 << 10));
    // A percentage of an existing file, aligned down to bs; no size:
    // the rest of the file.
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("f");
    std::fs::write(&f, vec![0u8; 100_000]).unwrap();
    let j = one(&format!(
        "[p]\nfilename={}\nbs=4k\noffset=50%\n",
        f.display()
    ));
    assert_eq!(j.spec.offset, 12 * 4096);
    assert_eq!(j.spec.file_size, 100_000 - 12 * 4096);
    // Alias, and offset_increment slices starting at the offset.
    let j = jobs(
        "[i]\nfilename=/x\nsize=64k\nfileoffset=1m\nnumjobs=2\noffset_increment=64k\n",
        false,
    )
    .unwrap();
    let at: Vec<(u64, u64)> = j
        .iter()
        .map(|j| (j.spec.offset, j.spec.file_size))
        .collect();
    assert_eq!(
        at,
        [(1 << 20, 64 << 10), ((1 << 20) + (64 << 10), 64 << 10)]
    );
}

#[test]
fn cpus_allowed_pins_and_split_numbers_threads_over_the_file() {
    let cpu = iolab::primitives::allowed_cpus().unwrap()[0];
    let j = jobs(
        &format!("[global]\nfilename=/x\nsize=1m\ncpus_allowed={cpu}\ncpus_allowed_policy=split\n[a]\nnumjobs=2\n[b]\n[c]\ncpus_allowed_policy=shared\n"),
        false,
    )
    .unwrap();
    let pins: Vec<_> = j.iter().map(|j| j.spec.cpus.clone().unwrap()).collect();
    assert_eq!(pins[0].cpus, vec![cpu as u32]);
    // numjobs=2 is two jobs: fio numbers its threads over the whole file.
    assert_eq!(
        pins.iter().map(|p| (p.split, p.first)).collect::<Vec<_>>(),
        vec![(true, 0), (true, 1), (true, 2), (false, 3)]
    );
    assert_eq!(one("[a]\nfilename=/x\nsize=1m\n").spec.cpus, None);
    // cpumask is a bit mask of the same CPUs.
    let j = one(&format!(
        "[m]\nfilename=/x\nsize=1m\ncpumask={}\n",
        1u64 << cpu
    ));
    assert_eq!(j.spec.cpus.unwrap().cpus, vec![cpu as u32]);
}

#[test]
fn filename_lists_and_nrfiles_spread_a_job_over_files() {
    use iolab_bench::service::FileService;
    let p = |v: &[&str]| v.iter().map(PathBuf::from).collect::<Vec<_>>();
    // A list: every clone uses every file; they share `size`.
    let j = jobs("[l]\nfilename=/a:/b::/c\nsize=3m\nnumjobs=2\n", false).unwrap();
    assert_eq!(j.len(), 2);
    assert_eq!(j[1].spec.files(), p(&["/a", "/b", "/c"]));
    assert_eq!(j[1].spec.file_size, 1 << 20);
    assert_eq!(j[1].spec.stop.bytes, Some(3 << 20));
    // nrfiles with fio's default names, JOB.$jobnum.$filenum.
    let j = one("[n]\ndirectory=/d\nnrfiles=2\nfilesize=64k\n");
    assert_eq!(j.spec.files(), p(&["/d/n.0.0", "/d/n.0.1"]));
    assert_eq!(
        (j.spec.file_size, j.spec.stop.bytes),
        (64 << 10, Some(128 << 10))
    );
    let j = jobs(
        "[n]\ndirectory=/d\nnr_files=2\nsize=128k\nnumjobs=2\nfile_service_type=random:4\n",
        false,
    )
    .unwrap();
    assert_eq!(j[1].spec.files(), p(&["/d/n.1.0", "/d/n.1.1"]));
    assert_eq!(j[1].spec.file_size, 64 << 10);
    assert_eq!(j[1].spec.file_service, FileService::Random { every: 4 });
    // filename_format with fio's variables; directories in turn.
    let j = one(
        "[f]\nfilename_format=x.$jobname.$jobnum.$filenum\ndirectory=/d:/e\nnrfiles=2\nsize=128k\n",
    );
    assert_eq!(j.spec.files(), p(&["/d/x.f.0.0", "/e/x.f.0.1"]));
    let z = one("[z]\nfilename=/a:/b\nsize=1m\nfile_service_type=zipf:1.2\n");
    assert!(matches!(
        z.spec.file_service,
        FileService::Skewed { every: 1, .. }
    ));
}

#[test]
fn fsync_and_fdatasync_every_n_writes() {
    let j = one("[w]\nfilename=/x\nsize=1m\nrw=write\nfsync=8\n");
    assert_eq!(
        j.spec.sync_every,
        Some(SyncEvery {
            writes: 8,
            data_only: false
        })
    );
    let j = one("[w]\nfilename=/x\nsize=1m\nrw=write\nfdatasync=1\nfsync=0\n");
    assert_eq!(
        j.spec.sync_every,
        Some(SyncEvery {
            writes: 1,
            data_only: true
        })
    );
    assert_eq!(
        one("[w]\nfilename=/x\nsize=1m\nrw=write\n").spec.sync_every,
        None
    );
    let e = err("[w]\nfilename=/x\nsize=1m\nrw=write\nfsync=2\nfdatasync=2\n");
    assert!(
        e.contains("j.fio:6: fdatasync=2: iolab takes fsync=N or fdatasync=N"),
        "{e}"
    );
}

#[test]
fn defaults_directory_numjobs_and_mixes() {
    // numjobs=3: three jobs, each its own file and the whole size.
    let all = jobs(
        "[seq]\ndirectory=/d\nsize=1m\nnumjobs=3\nloops=2\ngroup_reporting\n",
        false,
    )
    .unwrap();
    assert_eq!(all.len(), 3);
    let j = &all[2];
    let s = &j.spec;
    assert_eq!(s.engine, EngineKind::Pread);
    assert_eq!(
        (s.op, s.pattern, s.bs),
        (OpMix::Read, AccessPattern::Seq, 4096)
    );
    assert_eq!(s.file, PathBuf::from("/d/seq.2.0"));
    assert_eq!((s.threads, j.jobnum, j.thread_number), (1, 2, 3));
    assert_eq!(s.stop.bytes, Some(2 * (1 << 20)));
    assert_ne!(all[0].spec.seed, all[1].spec.seed);
    assert!(j.group_reporting);
    let j = one("[m]\nfilename=/x\nsize=1m\nrw=randrw\nrwmixwrite=30\nbs=8k,8k\ninvalidate=0\n");
    assert_eq!(j.spec.op, OpMix::Rw { read_pct: 70 });
    assert_eq!(j.spec.pattern, AccessPattern::Shuffle);
    assert_eq!(j.spec.cache, CacheMode::AsIs);
    assert_eq!(j.spec.bs, 8192);
    assert_eq!(
        one("[n]\nfilename=/x\nsize=1m\n").spec.file,
        PathBuf::from("/x")
    );
    assert_eq!(
        one("[n]\ndirectory=/d\nsize=1m\n").spec.file,
        PathBuf::from("/d/n.0.0")
    );
    // bs split: a write job takes the second size.
    assert_eq!(
        one("[w]\nfilename=/x\nsize=1m\nrw=write\nbs=4k,64k\n")
            .spec
            .bs,
        64 << 10
    );
    // A mixed job with two sizes draws each direction's own.
    let m = one("[m]\nfilename=/x\nsize=1m\nrw=rw\nbs=4k,64k\n");
    let sz = m.spec.sizes.as_ref().unwrap();
    assert_eq!(
        (m.spec.bs, sz.read.max(), sz.write.max()),
        (4096, 4096, 64 << 10)
    );
    // Aliases.
    let j = one("[a]\nfilename=/x\nsize=1m\nreadwrite=randread\nblocksize=16k\ntimeout=2\ntime_based\nbuffered=0\n");
    assert_eq!(
        (j.spec.bs, j.spec.stop.time_ns, j.spec.direct),
        (16384, Some(2_000_000_000), true)
    );
    assert_eq!(
        one("[a]\nfilename=/x\nsize=1m\nbsrange=8k-8k\n").spec.bs,
        8192
    );
    // psync with iodepth: one in flight.
    assert_eq!(one("[a]\nfilename=/x\nsize=1m\niodepth=8\n").spec.qd, 1);
    // Time and percentages.
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("f");
    std::fs::write(&f, vec![0u8; 1 << 16]).unwrap();
    let j = one(&format!(
        "[p]\nfilename={}\nsize=50%\nramp_time=500ms\nstartdelay=1\n",
        f.display()
    ));
    assert_eq!(j.spec.file_size, 1 << 15);
    assert_eq!(
        (j.spec.ramp_ns, j.startdelay_ns),
        (500_000_000, 1_000_000_000)
    );
}

#[test]
fn rates_and_thinktime_pace_the_run() {
    use iolab_bench::pacing::{Rate, Think};
    // Each clone has the job's rate, as each of fio's jobs has.
    let j = one("[a]\nfilename=/x\nsize=1m\nrate_iops=500\nnumjobs=2\nthinktime=250\nthinktime_blocks=4\nioengine=libaio\niodepth=8\n");
    let p = &j.spec.pacing;
    assert_eq!(
        p.rate,
        Some(Rate {
            per_sec: 500,
            bytes: false,
            poisson: false,
            quiesce: true,
            ignore_think: false
        })
    );
    assert_eq!(
        p.think,
        Some(Think {
            ns: 250_000,
            spin_ns: 0,
            blocks: 4,
            on_complete: false,
            iotime_ns: 0
        })
    );
    let j = one("[a]\nfilename=/x\nsize=1m\nbs=4k\nrate=4m\nio_submit_mode=offload\nrate_process=poisson\nrate_min=1m\n");
    let r = j.spec.pacing.rate.unwrap();
    assert_eq!(
        (r.per_sec, r.bytes, r.quiesce, r.poisson),
        (4 << 20, true, false, true)
    );
    assert_eq!(j.rate_min.unwrap().per_sec, 1 << 20);
    let j = one("[a]\nfilename=/x\nsize=1m\nioengine=libaio\niodepth=16\niodepth_low=4\nflow=-2\nlatency_target=500\nlatency_window=5000\nlatency_percentile=99.9\n");
    let p = &j.spec.pacing;
    assert_eq!(p.depth_low, Some(4));
    assert_eq!(p.flow.unwrap().weight, -2);
    let t = p.lat_target.unwrap();
    assert_eq!(
        (t.target_ns, t.window_ns, t.percentile),
        (500_000, 5_000_000, 99.9)
    );
    assert_eq!(one("[a]\nfilename=/x\nsize=1m\n").spec.pacing.rate, None);
}

#[test]
fn groups_and_stonewalls() {
    let j = jobs("[a]\nfilename=/x\nsize=1m\n[b]\nfilename=/x\nsize=1m\nstonewall\n[c]\nfilename=/x\nsize=1m\nwait_for_previous\nnew_group\n", false).unwrap();
    assert_eq!(
        j.iter().map(|j| j.groupid).collect::<Vec<_>>(),
        vec![0, 1, 2]
    );
    // Jobs of different block sizes report together, as in fio.
    let j = jobs(
        "[a]\nfilename=/x\nsize=1m\ngroup_reporting\n[b]\nfilename=/x\nsize=1m\nbs=8k\n",
        false,
    )
    .unwrap();
    assert_eq!((j[0].groupid, j[1].groupid, j[1].spec.bs), (0, 0, 8192));
    // A stonewall job's clones all wait, the first one says so.
    let j = jobs(
        "[a]\nfilename=/x\nsize=1m\n[b]\nfilename=/x\nsize=1m\nstonewall\nnumjobs=2\n",
        false,
    )
    .unwrap();
    assert_eq!(
        j.iter()
            .map(|j| (j.groupid, j.stonewall))
            .collect::<Vec<_>>(),
        vec![(0, false), (1, true), (1, false)]
    );
    let e = err("[a]\nfilename=/x\nsize=1m\nwait_for=b\n");
    assert!(
        e.contains("wait_for=b: no job of that name before it"),
        "{e}"
    );
}

#[test]
fn every_refusal_names_file_line_and_option() {
    let cases: &[(&str, &str)] = &[
        ("[a]\nfilename=/x\nsize=1m\nblocksise=4k\n", "j.fio:4: option 'blocksise': unknown"),
        ("[a]\nfilename=/x\nsize=1m\nzonemode=zbd\n", "j.fio:4: option 'zonemode': known to fio but not supported by iolab: zoned block devices"),
        ("[a]\nfilename=/x\nsize=1m\nss=iops:10%\n", "j.fio:4: option 'ss': known to fio but not supported by iolab: iolab has no steady-state detection"),
        ("[a]\nfilename=/x\nsize=1m\nprioclass=3\n", "j.fio:4: option 'prioclass': known to fio but not supported by iolab: iolab does not set I/O priorities"),
        ("[a]\nfilename=/x\nsize=1m\nnuma_cpu_nodes=0\n", "j.fio:4: option 'numa_cpu_nodes': known to fio but not supported by iolab: iolab does not set NUMA placement"),
        ("[a]\nfilename=/x\nsize=1m\ndedupe_percentage=50\n", "j.fio:4: option 'dedupe_percentage': known to fio but not supported by iolab: iolab does not generate dedupable buffers"),
        ("[a]\nfilename=/x\nsize=1m\nioengine=splice\n", "j.fio:4: ioengine=splice: 'splice' is not an engine iolab has"),
        // An engine iolab lacks is blamed at its own line, not its options'.
        ("[a]\nhttp_host=h\nfilename=/x\nsize=1m\nioengine=http\n", "j.fio:5: ioengine=http: 'http' is not an engine iolab has"),
        ("[a]\nfilename=/x\nsize=1m\nfdp=1\n", "j.fio:4: option 'fdp' belongs to ioengine io_uring_cmd, xnvme, none of which iolab has; this job has no ioengine="),
        ("[a]\nfilename=/x\nsize=1m\nioengine=libaio\nnonvectored=1\n", "j.fio:5: option 'nonvectored' belongs to ioengine io_uring, io_uring_cmd; this job has ioengine=libaio at j.fio:4"),
        ("[a]\nfilename=/x\nsize=1m\nioengine=libaio\nuserspace_reap=1\n", "j.fio:5: option 'userspace_reap' of ioengine=libaio: known to fio but not supported by iolab: iolab's libaio engine reaps with io_getevents"),
        ("[a]\nfilename=/x\nsize=1m\nrw=randread:x\n", "j.fio:4: rw=randread:x: ':x': the I/Os per random offset, a number"),
        ("[a]\nfilename=/x\nsize=1m\nrw=randread:8\nrandom_distribution=zipf:1.2\n", "j.fio:5: random_distribution=zipf:1.2: iolab draws runs of rw=...:N from the uniform law only"),
        ("[a]\nfilename=/x\nsize=1m\nrw=read:x\n", "j.fio:4: rw=read:x: :x: 'x': not a size"),
        ("[a]\nfilename=/x\nsize=1m\nrw=randread\nrandom_distribution=zipf:1\n", "j.fio:5: random_distribution=zipf:1: "),
        ("[a]\nfilename=/x\nsize=1m\nrw=rw\nrate_iops=100,200\n", "j.fio:5: rate_iops=100,200: iolab paces a mixed job's reads and writes together"),
        ("[a]\nfilename=/x\nsize=1m\nrate=1m\nrate_iops=10\n", "j.fio:4: rate=1m: give rate or rate_iops"),
        ("[a]\nfilename=/x\nsize=1m\ncpus_allowed=4095\n", "j.fio:4: cpus_allowed=4095: CPU 4095 is not online or not allowed for this process (it may use "),
        ("[a]\nfilename=/x\nsize=1m\ncpus_allowed=0-x\n", "j.fio:4: cpus_allowed: '0-x': a CPU list is CPUs and ranges"),
        ("[a]\nfilename=/x\nsize=1m\ncpus_allowed=0\ncpus_allowed_policy=half\n", "j.fio:5: cpus_allowed_policy=half: one of shared, split"),
        ("[a]\nfilename=/nonexistent/iolab/x\nsize=1m\noffset=10%\n", "j.fio:4: offset=10%: a percentage of a file that does not exist"),
        ("[a]\nfilename=/x\nfilesize=1m\noffset=1m\n", "j.fio:4: offset=1m: at or past the end of the file (1048576 bytes)"),
        ("[a]\nfilename=/x\nsize=1m\noffset=4q\n", "j.fio:4: offset: '4q': not a size"),
        ("[a]\nfilename=/x\nsize=1m\nfixedbufs\n", "j.fio:4: fixedbufs=: an io_uring option"),
        ("[a]\nfilename=/x\nsize=1m\nioengine=psync\nhipri\n", "j.fio:5: hipri=: only pvsync2 and io_uring"),
        ("[a]\nfilename=/x\nsize=1m\nbssplit=4k/60:8k/60\n", "j.fio:4: bssplit: '4k/60:8k/60': the weights add up to 120%"),
        ("[a]\nfilename=/x\nsize=1m\nbsrange=4k\n", "j.fio:4: bsrange: '4k': a range is LOW-HIGH"),
        ("[a]\nfilename=/x:/y\nsize=1m\nnrfiles=4\n", "j.fio:4: nrfiles=4: with filename=, the files are the ones it names"),
        ("[a]\nsize=1m\nnrfiles=0\n", "j.fio:3: nrfiles=0: must be 1..=65536"),
        ("[a]\nfilename=/x\nsize=1m\nfile_service_type=lottery\n", "j.fio:4: file_service_type=lottery: one of roundrobin, sequential, random"),
        ("[a]\nfilename=/x\nsize=1m\nbs=4q\n", "j.fio:4: bs: '4q': not a size"),
        ("[a]\nfilename=/x\nsize=1m\nbs=${IOLAB_SURELY_UNSET}\n", "j.fio:4: bs=${IOLAB_SURELY_UNSET}: ${IOLAB_SURELY_UNSET} not set, and fio expands an unset variable to nothing, leaving '': "),
        ("[a]\nfilename=/x\nsize=1m\nruntime=soon\n", "j.fio:4: runtime: 'soon': not a time"),
        ("[a]\nfilename=/x\nsize=1m\nkb_base=1000\n", "j.fio:4: kb_base=1000:"),
        ("[a]\nfilename=/x\nsize=1m\nverify=sha0\n", "j.fio:4: verify=sha0: one of fio's kinds"),
        ("[a]\nfilename=/x\nsize=1m\nsync=maybe\n", "j.fio:4: sync=maybe: one of 0, 1 (sync), dsync"),
        ("[a]\nfilename=/x\nsize=1m\nlatency_target=10ms\n", "j.fio:4: latency_target=10ms: needs latency_window="),
        ("[a]\nnumjobs=0\n", "j.fio:2: numjobs=0: must be 1..=4096"),
        ("[a]\nfilename=/x\nsize=1m\niodepth=0\n", "j.fio:4: iodepth=0: must be 1..=65536"),
        ("[a]\nioengine=null\nrw=randread\n", "j.fio:1: job 'a': ioengine=null needs size="),
        ("[a]\nfilename=/nonexistent/iolab/x\nsize=10%\n", "j.fio:3: size=10%: a percentage of a file that does not exist"),
        ("[a]\nfilename=/x\nsize=1m\nioengine=mmap\nrw=write\n", "j.fio:1: job 'a': --op write: engine mmap only reads"),
    ];
    for (text, want) in cases {
        let e = err(text);
        assert!(e.starts_with(want), "for {text:?}\n got: {e}\nwant: {want}");
        assert!(!e.contains('\n'), "{e}");
    }
}

#[test]
fn options_that_cannot_change_the_measurement_are_accepted_with_a_note() {
    let j = one("[a]\nfilename=/x\nsize=1m\ndescription=hello\nthreads=1\nclocksource=cpu\n");
    let n: Vec<&String> = j.notes.iter().filter(|n| n.starts_with("j.fio:")).collect();
    assert_eq!(n.len(), 3, "{:?}", j.notes);
    assert!(n[0].starts_with("j.fio:4: option 'description': a job's description is text only"));
    assert!(n[1].contains("fio's tiobench profile"), "{}", n[1]);
    // fio's reading of a value with an operator outside parentheses.
    let j =
        one("[a]\nfilename=/x\nsize=1m\nbs=2*2048\niodepth_batch=16\nioengine=libaio\niodepth=4\n");
    assert_eq!((j.spec.bs, j.spec.batch_submit), (2, 4));
    assert!(
        j.notes
            .iter()
            .any(|n| n.contains("bs=2*2048: read as 2, as fio reads it")),
        "{:?}",
        j.notes
    );
    assert!(
        j.notes
            .iter()
            .any(|n| n.contains("iodepth_batch=16 above iodepth=4")),
        "{:?}",
        j.notes
    );
}

#[test]
fn trims_backwards_reads_sync_and_contents_map_to_the_spec() {
    use iolab_bench::content::WriteContent;
    use iolab_bench::spec::{OpenSync, TrimMix};
    let j = one("[t]\nfilename=/x\nsize=1m\nrw=randtrim\n");
    assert_eq!(
        (j.spec.op, j.spec.trim),
        (OpMix::Write, Some(TrimMix { only: true }))
    );
    let j = one("[t]\nfilename=/x\nsize=1m\nrw=trimwrite\n");
    assert_eq!(j.spec.trim, Some(TrimMix { only: false }));
    let j = one("[b]\nfilename=/x\nsize=1m\nrw=read:-8k\n");
    assert_eq!(j.spec.pattern, AccessPattern::Back(8192));
    let j = one("[s]\nfilename=/x\nsize=1m\nrw=write\nsync=1\nzero_buffers\n");
    assert_eq!(j.spec.open_sync, Some(OpenSync::Sync));
    assert_eq!(
        (j.spec.content.clone(), j.spec.write_once),
        (WriteContent::Zero, true)
    );
    let j = one("[s]\nfilename=/x\nsize=1m\nrw=write\nsync=dsync\nbuffer_compress_percentage=40\nrefill_buffers\n");
    assert_eq!(j.spec.open_sync, Some(OpenSync::Dsync));
    assert!(!j.spec.write_once);
    assert_eq!(
        j.spec.content,
        WriteContent::Compressible {
            pct: 40,
            chunk: 512
        }
    );
    // verify: writes carry the pattern; the written region is read back.
    let j = one("[v]\nfilename=/x\nsize=1m\nrw=randwrite\nverify=crc32c\nzero_buffers\n");
    assert_eq!(j.spec.content, WriteContent::Pattern);
    assert!(j.verify.as_ref().unwrap().after_writes && !j.spec.write_once);
    let j = one("[v]\nfilename=/x\nsize=1m\nrw=read\nverify=md5\n");
    assert!(j.spec.verify);
    // bssplit sizes, aligned to the smallest.
    let j = one("[s]\nfilename=/x\nsize=1m\nrw=randread\nbssplit=512/10:4k/60:64k/30\n");
    assert_eq!(j.spec.bs, 512);
    assert_eq!(j.spec.sizes.as_ref().unwrap().read.max(), 64 << 10);
    let j = one("[s]\nfilename=/x\nsize=1m\nrw=randread\nbssplit=512/10:4k/90\nblockalign=4k\n");
    assert_eq!(j.spec.bs, 4096);
    // ioengine=null has no files.
    let j = one("[n]\nioengine=null\nsize=1g\n");
    assert!(j.spec.no_files);
}

#[test]
fn libcufile_jobs_read_with_pread_and_copy_each_read_into_their_gpu_round_robin() {
    let base = "[global]\nioengine=libcufile\ngpu_dev_ids=2:5\nbs=1m\nsize=4m\nnumjobs=3\nthread\n";
    let all = jobs(
        &format!("{base}direct=1\n[r]\nrw=read\nfilename=/x\n"),
        false,
    )
    .unwrap();
    let gpus: Vec<Option<u32>> = all.iter().map(|j| j.spec.copy_to_gpu).collect();
    assert_eq!(gpus, [Some(2), Some(5), Some(2)]);
    let s = &all[0].spec;
    assert_eq!((s.engine, s.qd, s.direct), (EngineKind::Pread, 1, true));
    assert!(s.label().ends_with(">G2"), "{}", s.label());
    let said = all[0].notes.join("\n");
    assert!(
        said.contains("cuda_io=cufile")
            && said.contains("GPUDirect Storage's direct path is not taken"),
        "{said}"
    );
    let posix = one("[r]\nioengine=libcufile\ncuda_io=posix\nrw=randread\nfilename=/x\nsize=4m\n");
    assert_eq!(posix.spec.copy_to_gpu, Some(0));
    assert!(!posix.spec.direct);
    assert!(
        posix.notes.join("\n").contains("fio's posix mode"),
        "{:?}",
        posix.notes
    );
    // Any other engine copies nothing.
    assert_eq!(
        one("[r]\nrw=read\nfilename=/x\nsize=4m\n").spec.copy_to_gpu,
        None
    );
}

#[test]
fn libcufile_refuses_writes_cufile_without_direct_and_its_options_elsewhere() {
    let e = err("[w]\nioengine=libcufile\ncuda_io=posix\nrw=write\nfilename=/x\nsize=1m\n");
    assert!(
        e.contains("j.fio:4: rw=write") && e.contains("writes out of GPU memory are not run"),
        "{e}"
    );
    let e = err("[r]\nioengine=libcufile\nrw=read\nfilename=/x\nsize=1m\n");
    assert!(e.contains("job 'r'") && e.contains("needs direct=1"), "{e}");
    let e = err("[r]\nioengine=libcufile\ncuda_io=dma\nrw=read\nfilename=/x\nsize=1m\n");
    assert!(
        e.contains("j.fio:3: cuda_io=dma") && e.contains("cufile or posix"),
        "{e}"
    );
    let e = err("[r]\nioengine=libcufile\ngpu_dev_ids=0,1\ndirect=1\nfilename=/x\nsize=1m\n");
    assert!(
        e.contains("gpu_dev_ids=0,1") && e.contains("separated by ':'"),
        "{e}"
    );
    let e = err("[r]\nioengine=io_uring\ncuda_io=posix\nfilename=/x\nsize=1m\n");
    assert!(
        e.contains("cuda_io=posix: an option of ioengine=libcufile"),
        "{e}"
    );
}

#[test]
fn cudamalloc_buffers_are_refused_with_what_fio_means_by_them() {
    let e = err("[r]\nmem=cudamalloc\nrw=read\nfilename=/x\nsize=1m\n");
    assert!(e.contains("j.fio:2: mem=cudamalloc"), "{e}");
    assert!(
        e.contains("GPUDirect RDMA with ioengine=rdma") && e.contains("ioengine=libcufile"),
        "{e}"
    );
}
