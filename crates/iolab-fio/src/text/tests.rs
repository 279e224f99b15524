//! fio's text layouts from known runs.

use super::*;
use crate::json::tests::{job, run_with};

#[test]
fn numbers_are_fio_s_num2str() {
    assert_eq!(num2str(4_035_241, 6, false, ""), "4035.2k");
    assert_eq!(num2str(491, 6, false, ""), "491");
    assert_eq!(num2str(32_604_000, 4, true, "B/s"), "31.1MiB/s");
    assert_eq!(num2str(32_604_000, 4, false, "B/s"), "32.6MB/s");
    assert_eq!(num2str(4_071_424, 4, true, "B"), "3976KiB");
    assert_eq!(num2str(7952, 4, false, ""), "7952");
    assert_eq!(num2str(16_000, 4, false, ""), "16.0k");
    assert_eq!(num(39_300.0, 1000.0), "39.3k");
}

#[test]
fn normal_output_has_fio_s_shape() {
    let j = job("[r]\nfilename=/x\nsize=1m\n");
    let mut run = run_with(&[40_000, 50_000, 60_000, 170_000], 1024, 0);
    run.depths.submitted(1, 1);
    run.depths.reaped(1);
    let r = JobResult {
        job: &j,
        run: &run,
        verify: None,
        waker: None,
    };
    let aggs = [2.0 * 1024.0 * 1024.0, 0.0, 0.0];
    let t = job_text(&r, 7, 0, aggs);
    assert!(
        t.starts_with("r: (groupid=0, jobs=1): err= 0: pid=7: Thu Jan  1"),
        "{t}"
    );
    assert!(
        t.contains("  read: IOPS=512, BW=2048KiB/s (2097kB/s)(4096KiB/2000msec)\n"),
        "{t}"
    );
    assert!(
        t.contains("    clat (usec): min=40, max=170, avg=80.02, stdev=52.46\n"),
        "{t}"
    );
    assert!(
        t.contains("    clat percentiles (usec):\n     |  1.00th=[   41],"),
        "{t}"
    );
    assert!(
        t.contains("   bw (  KiB/s): min= 1024, max= 3072, per=100.00%"),
        "{t}"
    );
    assert!(
        t.contains("  IO depths    : 1=100.0%, 2=0.0%, 4=0.0%"),
        "{t}"
    );
    assert!(
        t.contains("     issued rwts: total=1024,0,0,0 short=0,0,0,0 dropped=0,0,0,0"),
        "{t}"
    );
    assert!(
        t.contains("     latency   : target=0.00ns, window=0.00ns, percentile=100.00%, depth=1"),
        "{t}"
    );
    assert!(t.contains("  cpu          : usr="), "{t}");
    let g = group_text(0, &[&r]);
    assert!(
        g.contains("   READ: bw=2048KiB/s (2097kB/s), 2048KiB/s-2048KiB/s"),
        "{g}"
    );
    let h = header(&[&j]);
    assert!(h.starts_with("r: (g=0): rw=read, bs=(R) 4096B-4096B, (W) 4096B-4096B, (T) 4096B-4096B, ioengine=psync, iodepth=1\n"), "{h}");
    assert!(h.ends_with("Starting 1 process\n\n"), "{h}");
    let disk = serde_json::json!({"name": "vda", "read_ios": 1, "write_ios": 2, "read_merges": 0, "write_merges": 0, "read_ticks": 3, "write_ticks": 4, "in_queue": 5, "util": 6.5});
    let line = terse(&r, &[disk], aggs);
    let f: Vec<&str> = line.split(';').collect();
    assert_eq!(f.len(), 130, "{line}");
    assert_eq!(
        (f[0], f[2], f[5], f[6], f[7], f[8]),
        ("3", "r", "4096", "2048", "512", "2000")
    );
    assert_eq!(f[13], "40");
    assert!(f[17].starts_with("1.000000%="));
    assert_eq!(f[121], "vda");
    assert_eq!(f[129], "6.50%");
    // fio's bw share of the group: this job is all of it.
    assert_eq!(f[43], "100.000000%");
}
