//! `to-gpu` (the thesis's closing pointer: loading data from storage into
//! a GPU): a file into GPU memory through the reading library's pipeline,
//! swept over piece size × pieces in flight × page-locked or pageable
//! staging × O_DIRECT or buffered reads, cold and warm; the same pipeline
//! into host memory is measured alongside as the ceiling the GPU path
//! works against. Without a usable GPU only the host side is measured and
//! the finding says why it is inconclusive.

use crate::figure::{self, Axis, LineSeries, Pt};
use crate::record::LabRecord;
use crate::util::*;
use crate::verdict::{all_of, over_range, Finding, Verdict};
use crate::{Analysis, Config, Ctx, Experiment, Measured, Work};
use iolab_bench::stats::Stats;
use iolab_bench::BenchError;
use iolab_reader::gpu::{self, GpuOptions, GpuTechnique, HostTarget, Source, Stats as Moved};
use std::collections::BTreeMap;
use std::path::Path;

/// The experiment.
pub struct ToGpu;

const NAME: &str = "to-gpu";

/// GPUs the driver sees, or why none can be used.
fn gpu_status() -> Result<usize, String> {
    #[cfg(feature = "cuda")]
    {
        match gpu::device_count() {
            Ok(0) => Err("no NVIDIA GPU: the driver reports none".into()),
            Ok(n) => Ok(n),
            Err(e) => Err(e.to_string()),
        }
    }
    #[cfg(not(feature = "cuda"))]
    {
        Err("this iolab was built without the cuda feature".into())
    }
}

/// One configuration's tags.
fn cfg(
    part: &str,
    cache: &str,
    direct: bool,
    staging: &str,
    technique: GpuTechnique,
    (chunk, depth, size): (u64, u32, u64),
) -> Config {
    let tags = [
        ("part", part.to_string()),
        ("cache", cache.to_string()),
        (
            "direct",
            if direct { "direct" } else { "buffered" }.to_string(),
        ),
        ("staging", staging.to_string()),
        ("technique", technique.name().to_string()),
        ("chunk", b(chunk)),
        ("depth", depth.to_string()),
        ("size", b(size)),
    ];
    Config::new(&tags, Work::Custom)
}

/// The configurations of one destination (`gpu` or `host`).
fn sweep(part: &str, size: u64, chunks: &[u64], depths: &[u32]) -> Vec<Config> {
    let stagings: &[&str] = if part == "gpu" {
        &["pinned", "pageable"]
    } else {
        &["-"]
    };
    let mut v = Vec::new();
    for cache in ["cold", "warm"] {
        for &staging in stagings {
            for &chunk in chunks {
                for &depth in depths {
                    for direct in [true, false] {
                        let k = (chunk, depth, size);
                        v.push(cfg(part, cache, direct, staging, GpuTechnique::Ring, k));
                    }
                    // Warm data's own technique: `depth` threads reading.
                    if cache == "warm" {
                        let k = (chunk, depth, size);
                        v.push(cfg(part, cache, false, staging, GpuTechnique::Threads, k));
                    }
                }
            }
        }
    }
    v
}

impl Experiment for ToGpu {
    fn name(&self) -> &'static str {
        NAME
    }
    fn study(&self) -> &'static str {
        "000"
    }
    fn answers(&self) -> &'static str {
        "how fast does a file reach GPU memory, and with which pieces, depth and staging?"
    }
    fn times(&self) -> [&'static str; 3] {
        ["1 s", "2 min", "10 min"]
    }
    fn configs(&self, ctx: &Ctx) -> Vec<Config> {
        let size = size_for(ctx, ctx.pick(16 * MIB, 512 * MIB, 2048 * MIB));
        let chunks = ctx.pick(
            vec![MIB],
            vec![MIB, 4 * MIB, 16 * MIB],
            vec![MIB, 2 * MIB, 4 * MIB, 8 * MIB, 16 * MIB, 32 * MIB],
        );
        let depths = ctx.pick(vec![4], vec![2, 8], vec![1, 2, 4, 8, 16]);
        let mut v = sweep("host", size, &chunks, &depths);
        match gpu_status() {
            Ok(_) => v.extend(sweep("gpu", size, &chunks, &depths)),
            Err(_) => v.push(Config::new(&[("part", "probe".into())], Work::Custom)),
        }
        v
    }
    fn custom(&self, cfg: &Config, ctx: &Ctx) -> iolab_bench::Result<Measured> {
        if cfg.tags["part"] == "probe" {
            return Ok(Measured {
                unit: "GB/s".into(),
                notes: vec![gpu_status().err().unwrap_or_default()],
                ..Measured::default()
            });
        }
        measure(cfg, ctx)
    }
    fn analyse(&self, recs: &[LabRecord]) -> Analysis {
        let figures = ["cold", "warm"]
            .iter()
            .map(|cache| {
                let series = lines(recs, cache);
                figure::lines(
                    &format!("{NAME}-{cache}"),
                    &format!(
                        "A {cache} file into GPU (and host) memory: best depth per piece size"
                    ),
                    Axis::bytes("piece size (bytes)"),
                    Axis::new("throughput (GB/s)", false, figure::num),
                    &series,
                )
            })
            .collect();
        Analysis {
            figures,
            table: key_table(recs),
            findings: findings(recs),
        }
    }
}

/// The pipeline's settings for a configuration.
fn options(c: &Config) -> GpuOptions {
    let depth: u32 = c.tags["depth"].parse().unwrap_or(1);
    let technique: GpuTechnique = c.tags["technique"].parse().unwrap_or(GpuTechnique::Ring);
    GpuOptions {
        technique: Some(technique),
        chunk: c.tags["chunk"].parse().unwrap_or(1 << 20),
        depth,
        threads: if technique == GpuTechnique::Threads {
            depth as usize
        } else {
            1
        },
        pinned: c.tags["staging"] != "pageable",
        direct: c.tags["direct"] == "direct",
        ..GpuOptions::default()
    }
}

fn failed(what: &str, e: impl std::fmt::Display) -> BenchError {
    BenchError::Io(iolab::Error::io(
        format!("{NAME}: {what}"),
        std::io::Error::other(e.to_string()),
    ))
}

/// Repeats of one configuration: the cache state set before each, then
/// the file moved to its destination; GB/s and where the time went.
fn measure(c: &Config, ctx: &Ctx) -> iolab_bench::Result<Measured> {
    let size: u64 = c.tags["size"].parse().unwrap_or(MIB);
    let file = ctx.data_file(size);
    crate::prepare_in(&spec(&file, size), ctx)?;
    let opts = options(c);
    let cold = c.tags["cache"] == "cold";
    let mut host = if c.tags["part"] == "host" {
        vec![0u8; size as usize]
    } else {
        Vec::new()
    };
    let mut m = Measured {
        unit: "GB/s".into(),
        ..Measured::default()
    };
    for _ in 0..ctx.pick(1, 3, 3) {
        let resident = set_cache(&file, size, cold)?;
        let st = if host.is_empty() {
            to_gpu(&file, &opts)?
        } else {
            let src = Source::whole(&file, 0).map_err(|e| failed("open", e))?;
            gpu::transfer(&HostTarget::new(&mut host), &[src], &opts)
                .map_err(|e| failed("host", e))?
        };
        m.samples.push(st.gb_per_s());
        for (k, v) in [
            ("resident_before", resident),
            ("read_s", st.read_ns as f64 / 1e9),
            ("copy_s", st.copy_ns as f64 / 1e9),
            ("wait_s", st.wait_ns as f64 / 1e9),
            ("pinned", f64::from(u8::from(st.pinned))),
            ("o_direct", f64::from(u8::from(st.direct))),
        ] {
            m.extra.entry(k.to_string()).or_default().push(v);
        }
    }
    Ok(m)
}

/// Evicts (cold) or reads in (warm) the file; returns the fraction then
/// resident.
fn set_cache(file: &Path, size: u64, cold: bool) -> iolab_bench::Result<f64> {
    if cold {
        iolab::cache::evict(file)?;
    } else {
        iolab::cache::warm(file, size)?;
    }
    Ok(iolab::cache::residency(file, size)?.fraction())
}

#[cfg(feature = "cuda")]
fn to_gpu(file: &Path, opts: &GpuOptions) -> iolab_bench::Result<Moved> {
    gpu::load_file(file, 0, opts)
        .map(|(_, st)| st)
        .map_err(|e| failed("GPU 0", e))
}

#[cfg(not(feature = "cuda"))]
fn to_gpu(_: &Path, _: &GpuOptions) -> iolab_bench::Result<Moved> {
    Err(failed(
        "GPU 0",
        "this iolab was built without the cuda feature",
    ))
}

/// A series' name: where, how read, what staging.
fn series_name(r: &LabRecord) -> String {
    let how = match (r.tag("technique"), r.tag("direct")) {
        ("threads", _) => "threads".to_string(),
        (_, "direct") => "ring O_DIRECT".to_string(),
        _ => "ring buffered".to_string(),
    };
    match r.tag("part") {
        "gpu" => format!("GPU {how} {}", r.tag("staging")),
        _ => format!("host {how}"),
    }
}

/// The best record (highest median) of each series at each piece size.
fn best_by_chunk<'a>(
    recs: &'a [LabRecord],
    cache: &str,
) -> BTreeMap<String, BTreeMap<u64, &'a LabRecord>> {
    let mut m: BTreeMap<String, BTreeMap<u64, &LabRecord>> = BTreeMap::new();
    for r in recs
        .iter()
        .filter(|r| r.tag("cache") == cache && !r.samples.is_empty())
    {
        let slot = m
            .entry(series_name(r))
            .or_default()
            .entry(r.num("chunk") as u64)
            .or_insert(r);
        if r.stats().median > slot.stats().median {
            *slot = r;
        }
    }
    m
}

fn lines(recs: &[LabRecord], cache: &str) -> Vec<LineSeries> {
    best_by_chunk(recs, cache)
        .into_iter()
        .map(|(name, by)| LineSeries {
            name,
            pts: by
                .into_iter()
                .map(|(c, r)| Pt::of(c as f64, &r.stats()))
                .collect(),
        })
        .collect()
}

/// The best record of a series over every piece size and depth.
fn best_of<'a>(recs: &'a [LabRecord], cache: &str, series: &str) -> Option<&'a LabRecord> {
    best_by_chunk(recs, cache)
        .remove(series)?
        .into_values()
        .max_by(|a, b| a.stats().median.total_cmp(&b.stats().median))
}

fn key_table(recs: &[LabRecord]) -> String {
    let gbs = |v: f64| format!("{v:.2} GB/s");
    let mut rows = Vec::new();
    for cache in ["cold", "warm"] {
        for (name, by) in best_by_chunk(recs, cache) {
            let Some(r) = by
                .into_values()
                .max_by(|a, b| a.stats().median.total_cmp(&b.stats().median))
            else {
                continue;
            };
            rows.push(vec![
                cache.to_string(),
                name,
                hb(r, "chunk"),
                r.tag("depth").to_string(),
                mmm(&r.stats(), gbs),
            ]);
        }
    }
    table(&["cache", "path", "pieces", "depth/threads", "best"], &rows)
}

/// `a` against `b` as a range over their repeats: (a's worst / b's best,
/// a's best / b's worst).
fn ratio_range(a: &Stats, b: &Stats) -> (f64, f64) {
    (a.min / b.max.max(1e-12), a.max / b.min.max(1e-12))
}

fn findings(recs: &[LabRecord]) -> Vec<Finding> {
    if let Some(p) = recs.iter().find(|r| r.tag("part") == "probe") {
        let host = best_of(recs, "warm", "host threads").map_or(String::new(), |r| {
            format!(
                "; the same pipeline into host memory, warm: {:.2} GB/s",
                r.stats().median
            )
        });
        return vec![Finding::new(
            NAME,
            "page-locked staging moves a file into the GPU faster than pageable staging",
            Verdict::Inconclusive,
            format!("not measured: {}{host}", p.notes.join("; ")),
        )];
    }
    let mut v = Vec::new();
    let mut nums = Vec::new();
    for (cache, how) in [("cold", "ring O_DIRECT"), ("warm", "threads")] {
        let pinned = best_of(recs, cache, &format!("GPU {how} pinned"));
        let pageable = best_of(recs, cache, &format!("GPU {how} pageable"));
        if let (Some(a), Some(b)) = (pinned, pageable) {
            let (lo, hi) = ratio_range(&a.stats(), &b.stats());
            v.push(over_range(lo, hi, |x| x >= 1.0));
            nums.push(format!(
                "{cache}: {:.2} against {:.2} GB/s ({lo:.2}–{hi:.2}×)",
                a.stats().median,
                b.stats().median
            ));
        }
    }
    let mut out = vec![Finding::new(
        NAME,
        "page-locked staging moves a file into the GPU faster than pageable staging (best setting of each, cold and warm)",
        all_of(&v),
        nums.join("; "),
    )];
    if let (Some(d), Some(b)) = (
        best_of(recs, "cold", "GPU ring O_DIRECT pinned"),
        best_of(recs, "cold", "GPU ring buffered pinned"),
    ) {
        let (lo, hi) = ratio_range(&d.stats(), &b.stats());
        out.push(Finding::new(
            NAME,
            "a cold file reaches the GPU at least as fast read with O_DIRECT as through the page cache",
            over_range(lo, hi, |x| x >= 1.0),
            format!("{:.2} against {:.2} GB/s ({lo:.2}–{hi:.2}×)", d.stats().median, b.stats().median),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::rec;

    fn r(
        part: &str,
        cache: &str,
        direct: &str,
        staging: &str,
        t: &str,
        chunk: &str,
        s: &[f64],
    ) -> LabRecord {
        rec(
            NAME,
            &[
                ("part", part),
                ("cache", cache),
                ("direct", direct),
                ("staging", staging),
                ("technique", t),
                ("chunk", chunk),
                ("depth", "4"),
            ],
            s,
        )
    }

    #[test]
    fn without_a_gpu_the_finding_is_inconclusive_and_says_why() {
        let mut p = rec(NAME, &[("part", "probe")], &[]);
        p.notes
            .push("no NVIDIA driver: libcuda.so could not be loaded".into());
        let recs = vec![
            r(
                "host",
                "warm",
                "buffered",
                "-",
                "threads",
                "1048576",
                &[6.0, 7.0],
            ),
            p,
        ];
        let a = ToGpu.analyse(&recs);
        assert_eq!(a.findings.len(), 1);
        assert_eq!(a.findings[0].verdict, Verdict::Inconclusive);
        assert!(
            a.findings[0].numbers.contains("no NVIDIA driver")
                && a.findings[0].numbers.contains("6.50 GB/s"),
            "{}",
            a.findings[0].numbers
        );
        assert_eq!(a.figures.iter().map(|f| f.points).sum::<usize>(), 1);
    }

    #[test]
    fn pinned_staging_wins_only_when_every_repeat_says_so() {
        let m = "1048576";
        let mut recs = vec![
            r("gpu", "cold", "direct", "pinned", "ring", m, &[2.0, 2.1]),
            r("gpu", "cold", "direct", "pageable", "ring", m, &[1.5, 1.6]),
            r("gpu", "cold", "buffered", "pinned", "ring", m, &[1.2, 1.3]),
            r(
                "gpu",
                "warm",
                "buffered",
                "pinned",
                "threads",
                m,
                &[30.0, 32.0],
            ),
            r(
                "gpu",
                "warm",
                "buffered",
                "pageable",
                "threads",
                m,
                &[12.0, 13.0],
            ),
        ];
        let a = ToGpu.analyse(&recs);
        assert_eq!(
            a.findings[0].verdict,
            Verdict::Reproduced,
            "{:?}",
            a.findings
        );
        assert_eq!(
            a.findings[1].verdict,
            Verdict::Reproduced,
            "{:?}",
            a.findings
        );
        assert!(
            a.findings[0]
                .numbers
                .contains("warm: 31.00 against 12.50 GB/s"),
            "{}",
            a.findings[0].numbers
        );
        // Warm pageable as fast in one repeat: the ranges overlap.
        recs[4] = r(
            "gpu",
            "warm",
            "buffered",
            "pageable",
            "threads",
            m,
            &[12.0, 31.0],
        );
        assert_eq!(
            ToGpu.analyse(&recs).findings[0].verdict,
            Verdict::Inconclusive
        );
    }
}
