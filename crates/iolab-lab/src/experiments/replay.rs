//! `replay` (study 000, chapter 5): the thesis judged its readers by
//! replaying the reads of a real application. This experiment replays
//! real programs' reads, recorded with `iolab record`, against every
//! reader of the reading library, cold and warm, as fast as possible,
//! readers in rotating order each round.
//!
//! The programs come in two halves. `Auto`'s rules and thresholds were
//! set on the `train` half only; the `test` half says how it does on
//! programs it was not shaped on. By default the experiment records two
//! small programs itself (so it needs `strace`): `grep -r` over a tree it
//! makes (train) and a Python loader reading records of a file it makes in
//! shuffled order (test). With `IOLAB_LAB_CORPUS=DIR` it replays the
//! corpus `scripts/record-corpus.sh` recorded there instead (its
//! `MANIFEST.tsv` names each trace's half); `IOLAB_LAB_TRACE=FILE` adds a
//! trace of the user's (half `user`).
//!
//! Decisive value per round: `auto`'s time over the time of the fixed
//! reader with the best median (every reader but `auto` and
//! `auto:builtin`; the thesis's rules included), in the same round
//! (paired, so a loaded machine's drift cancels); `auto:builtin` (no
//! profile) the same way. Findings, on the test half: `auto` within 5 %
//! of the best fixed reader on every trace with the machine's profile,
//! 10 % without one (the 95 % interval of the median ratio decides), and
//! no slower than the per-trace best in geometric mean.

use crate::figure::{self, Axis, BarSeries};
use crate::record::LabRecord;
use crate::util::*;
use crate::verdict::{all_of, Finding, Verdict};
use crate::{Analysis, Config, Ctx, Experiment, Measured, Work};
use iolab_bench::error::{BenchError, Result};
use iolab_bench::stats::{median, Stats};
use iolab_reader::Technique;
use iolab_trace::replay::{self, PreadReader, ReplayReader, Threads, Timing};
use iolab_trace::session::{self, Cache, SessionOpts};
use iolab_trace::{self as tr, readers, Trace};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The experiment.
pub struct Replay;

const NAME: &str = "replay";
/// Environment variable naming a trace of the user's to replay too.
pub const TRACE_ENV: &str = "IOLAB_LAB_TRACE";
/// Environment variable naming a corpus directory (`MANIFEST.tsv` and one
/// `NAME.csv` per program, as `scripts/record-corpus.sh` writes them).
pub const CORPUS_ENV: &str = "IOLAB_LAB_CORPUS";
/// With the machine's profile, `auto` is within this of the best fixed
/// reader on every test trace.
const WITHIN_TUNED: f64 = 1.05;
/// Without a profile (`auto:builtin`).
const WITHIN_BUILTIN: f64 = 1.10;
/// The per-round ratio of `auto:builtin`, as an extra.
const BUILTIN_RATIO: &str = "builtin_ratio";

/// The two programs the experiment records itself when no corpus is
/// named: (name, half).
const OWN: [(&str, &str); 2] = [("grep-tree", "train"), ("py-loader", "test")];

/// Every reader of the comparison: the library's techniques, `Auto`
/// without a profile, and the plain `pread` loop.
fn all_readers(
    hints: &std::collections::HashMap<PathBuf, iolab_reader::Hints>,
) -> Vec<Box<dyn ReplayReader>> {
    let mut v: Vec<Box<dyn ReplayReader>> = readers::all()
        .into_iter()
        .map(|t| Box::new(readers::TechniqueReader::new(t, hints.clone())) as _)
        .collect();
    v.push(Box::new(readers::TechniqueReader::auto_builtin()));
    v.push(Box::new(PreadReader));
    v
}

/// The name `auto` has in the results.
fn auto_name() -> String {
    Technique::Auto.to_string()
}

/// The fixed (non-adaptive) readers: everything but `auto` with or
/// without a profile (the thesis's rules count as fixed).
fn is_fixed(name: &str) -> bool {
    name != auto_name() && name != readers::AUTO_BUILTIN
}

fn err(e: tr::TraceError) -> BenchError {
    BenchError::Usage(format!("{NAME}: {e}"))
}

fn io_err(what: &Path, e: std::io::Error) -> BenchError {
    BenchError::Usage(format!("{NAME}: {}: {e}", what.display()))
}

/// The traces of a corpus manifest: (name, half), in its order.
fn manifest(text: &str) -> Vec<(String, String)> {
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let mut f = l.split('\t');
            let (name, half) = (f.next()?.trim(), f.next()?.trim());
            (!name.is_empty() && !half.is_empty()).then(|| (name.to_string(), half.to_string()))
        })
        .collect()
}

/// Makes the data of one of the experiment's own programs under `dir` and
/// returns the program to record (it names its files by their full path
/// and prints nothing).
fn own_program(name: &str, dir: &Path, ctx: &Ctx) -> Result<Vec<String>> {
    let mut x = 0x5eed_u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let write = |p: &Path, n: u64, seed: u64| {
        let body: Vec<u8> = (0..n)
            .map(|i| b"abcdefgh \n"[((i ^ seed) % 10) as usize])
            .collect();
        std::fs::write(p, body).map_err(|e| io_err(p, e))
    };
    match name {
        "grep-tree" => {
            // A source tree: small files in a few directories.
            for i in 0..ctx.pick(40, 400, 2000) {
                let d = dir.join("tree").join(format!("d{}", i % 8));
                std::fs::create_dir_all(&d).map_err(|e| io_err(&d, e))?;
                write(&d.join(format!("f{i:04}.c")), 1024 + next() % (31 << 10), i)?;
            }
            let tree = dir.join("tree").display().to_string();
            Ok(vec![
                "grep".into(),
                "-r".into(),
                "-l".into(),
                "zzqqxyz".into(),
                tree,
            ])
        }
        _ => {
            // A data set of records read in shuffled order, as a training
            // loader reads its shards.
            let mib = ctx.pick(4u64, 64, 256);
            let shard = dir.join("shard.bin");
            write(&shard, mib << 20, 7)?;
            let code = format!(
                "import random\nf = open({:?}, 'rb')\noffs = list(range(0, {mib} << 20, 65536))\nrandom.Random(1).shuffle(offs)\nfor o in offs[:len(offs) // 2]:\n    f.seek(o); f.read(16384)\n",
                shard.display().to_string()
            );
            Ok(vec!["python3".into(), "-c".into(), code])
        }
    }
}

/// Records one of the experiment's own programs (data and log in a
/// directory of their own under the lab directory, removed afterwards).
fn record_own(name: &str, ctx: &Ctx) -> Result<Trace> {
    let dir = tempfile::Builder::new()
        .prefix(&format!("iolab-lab-record-{name}-"))
        .tempdir_in(&ctx.dir)
        .map_err(|e| io_err(&ctx.dir, e))?;
    let program = own_program(name, dir.path(), ctx)?;
    let log = dir.path().join("strace.log");
    let argv: Vec<std::ffi::OsString> = program.iter().map(Into::into).collect();
    let t = tr::capture::record(&argv, &log).map_err(err)?.trace;
    if t.reads.is_empty() {
        return Err(BenchError::Usage(format!(
            "{NAME}: {name}: the recording has no reads ({})",
            program.join(" ")
        )));
    }
    Ok(t)
}

/// Replays `t` against every reader, `repeats` rounds, from `cache`, and
/// reduces the result to the experiment's record: each reader's time per
/// round (s) as extras, `auto`'s time over the best fixed reader's per
/// round as samples and `auto:builtin`'s as an extra.
fn measure(t: &Trace, name: &str, cache: Cache, repeats: usize, ctx: &Ctx) -> Result<Measured> {
    // The trace's files (and the directories its paths name) live in a
    // directory of their own, removed with everything in it afterwards.
    let dir = tempfile::Builder::new()
        .prefix(&format!("iolab-lab-replay-{name}-"))
        .tempdir_in(&ctx.dir)
        .map_err(|e| io_err(&ctx.dir, e))?;
    let placed = tr::place::place(t, dir.path(), ctx.stop, &mut |_, _| {}).map_err(err)?;
    let hints = readers::hints_for(t, &placed.paths);
    let rs = all_readers(&hints);
    let plan = replay::plan(t, Threads::Recorded, None);
    let opts = SessionOpts {
        repeat: repeats,
        cache,
        timing: Timing::Asap,
        verify: false,
    };
    let res = session::compare(
        &plan,
        &placed.paths,
        &placed.sizes,
        &placed.patterns,
        &rs,
        opts,
        ctx.stop,
        &mut |_, _| {},
    )
    .map_err(err)?;
    let mut m = Measured {
        unit: "x best fixed".into(),
        ..Measured::default()
    };
    for r in &res {
        m.extra.insert(
            format!("{}_s", r.reader),
            r.runs.iter().map(|x| x.wall_ns as f64 / 1e9).collect(),
        );
        if !r.switches.is_empty() {
            m.notes
                .push(format!("{}: guard: {}", r.reader, r.switches.join("; ")));
        }
    }
    m.samples = ratios(&m.extra, &auto_name());
    m.extra.insert(
        BUILTIN_RATIO.into(),
        ratios(&m.extra, readers::AUTO_BUILTIN),
    );
    m.notes.push(format!(
        "{}: {} requests, {} bytes, {} files; {} cache, timing asap, {} rounds in rotating order",
        name,
        t.reads.len(),
        t.total_bytes(),
        t.files.len(),
        cache.name(),
        repeats
    ));
    Ok(m)
}

/// The fixed reader with the best median time and that median, from the
/// per-reader extras (`<reader>_s`).
fn best_fixed(extra: &BTreeMap<String, Vec<f64>>) -> Option<(String, f64)> {
    extra
        .iter()
        .filter_map(|(k, v)| Some((k.strip_suffix("_s")?, v)))
        .filter(|(k, v)| is_fixed(k) && !v.is_empty())
        .map(|(k, v)| (k.to_string(), median(v)))
        .min_by(|a, b| a.1.total_cmp(&b.1))
}

/// Per round: `reader`'s time over the best fixed reader's (same round).
fn ratios(extra: &BTreeMap<String, Vec<f64>>, reader: &str) -> Vec<f64> {
    let (Some((best, _)), Some(a)) = (best_fixed(extra), extra.get(&format!("{reader}_s"))) else {
        return Vec::new();
    };
    let b = &extra[&format!("{best}_s")];
    a.iter().zip(b).map(|(a, b)| a / b.max(1e-12)).collect()
}

/// The median of `v` and its 95 % interval from order statistics (the
/// sign test's: no assumption about the noise's shape): the k-th smallest
/// and k-th largest with P(Binomial(n, 1/2) < k) <= 2.5 %; the whole range
/// when there are too few values for that. NaN for none.
pub fn median_interval(v: &[f64]) -> (f64, f64, f64) {
    if v.is_empty() {
        return (f64::NAN, f64::NAN, f64::NAN);
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    let (mut k, mut tail, mut comb) = (0usize, 0.0f64, 1.0f64);
    let half_n = 0.5f64.powi(n as i32);
    while k < n / 2 {
        let next = tail + comb * half_n;
        if next > 0.025 {
            break;
        }
        tail = next;
        comb = comb * (n - k) as f64 / (k + 1) as f64;
        k += 1;
    }
    let (lo, hi) = if k == 0 {
        (s[0], s[n - 1])
    } else {
        (s[k - 1], s[n - k])
    };
    (median(&s), lo, hi)
}

/// The tags of a configuration.
fn tags(trace: &str, half: &str, cache: &str) -> [(&'static str, String); 3] {
    [
        ("half", half.to_string()),
        ("trace", trace.to_string()),
        ("cache", cache.to_string()),
    ]
}

impl Experiment for Replay {
    fn name(&self) -> &'static str {
        NAME
    }
    fn study(&self) -> &'static str {
        "000"
    }
    fn answers(&self) -> &'static str {
        "replaying real programs' reads, is auto within 5 % of the best fixed reader on programs it was not tuned on?"
    }
    fn times(&self) -> [&'static str; 3] {
        ["10 s", "3 min", "30 min"]
    }
    fn configs(&self, _ctx: &Ctx) -> Vec<Config> {
        let mut traces: Vec<(String, String)> = match std::env::var_os(CORPUS_ENV) {
            Some(d) => std::fs::read_to_string(Path::new(&d).join("MANIFEST.tsv"))
                .map(|t| manifest(&t))
                .unwrap_or_default(),
            None => OWN
                .iter()
                .map(|(n, h)| (n.to_string(), h.to_string()))
                .collect(),
        };
        if let Some(p) = std::env::var_os(TRACE_ENV) {
            traces.push((PathBuf::from(p).display().to_string(), "user".into()));
        }
        let mut v = Vec::new();
        for (trace, half) in &traces {
            for cache in ["cold", "warm"] {
                v.push(Config::new(&tags(trace, half, cache), Work::Custom));
            }
        }
        v
    }
    fn custom(&self, cfg: &Config, ctx: &Ctx) -> Result<Measured> {
        let repeats = ctx.pick(1, 5, 11);
        let trace = cfg.tags.get("trace").cloned().unwrap_or_default();
        let half = cfg.tags.get("half").cloned().unwrap_or_default();
        let cache = cfg
            .tags
            .get("cache")
            .and_then(|c| c.parse().ok())
            .unwrap_or(Cache::Cold);
        let t = if half == "user" {
            tr::load(Path::new(&trace), None).map_err(err)?
        } else if let Some(d) = std::env::var_os(CORPUS_ENV) {
            tr::load(&Path::new(&d).join(format!("{trace}.csv")), None).map_err(err)?
        } else {
            record_own(&trace, ctx)?
        };
        let short = Path::new(&trace)
            .file_stem()
            .map_or(trace.clone(), |s| s.to_string_lossy().into_owned());
        measure(&t, &short, cache, repeats, ctx)
    }
    fn analyse(&self, recs: &[LabRecord]) -> Analysis {
        let recs = ordered(recs);
        let cats: Vec<String> = recs.iter().map(|r| category(r)).collect();
        let figures = vec![
            figure::bars(
                "replay-auto",
                "Auto over the best fixed reader: train half (policy set on it), test half",
                "replayed program (half · trace · cache)",
                &cats,
                Axis::new(
                    "auto's time (× the best fixed reader's, same round)",
                    false,
                    figure::num,
                ),
                &auto_series(&recs),
            ),
            figure::bars(
                "replay-readers",
                "Every reader's time over the fastest reader's median",
                "replayed program (half · trace · cache)",
                &cats,
                Axis::new("time (× the fastest reader's median)", true, figure::num),
                &relative_times(&recs),
            ),
        ];
        let (rows, findings) = auto_findings(&recs);
        Analysis {
            figures,
            table: table(
                &[
                    "half",
                    "trace",
                    "cache",
                    "best fixed",
                    "its time",
                    "auto/best [95 %]",
                    "built-in/best [95 %]",
                ],
                &rows,
            ),
            findings,
        }
    }
}

/// Records in the order the figure shows them: train, test, user; then by
/// trace and cache.
fn ordered(recs: &[LabRecord]) -> Vec<&LabRecord> {
    let rank = |h: &str| match h {
        "train" => 0,
        "test" => 1,
        _ => 2,
    };
    let mut v: Vec<&LabRecord> = recs.iter().collect();
    v.sort_by(|a, b| {
        (rank(a.tag("half")), a.tag("trace"), a.tag("cache")).cmp(&(
            rank(b.tag("half")),
            b.tag("trace"),
            b.tag("cache"),
        ))
    });
    v
}

/// A record's category in the figures: half, trace, cache.
fn category(r: &LabRecord) -> String {
    let t = Path::new(r.tag("trace"))
        .file_stem()
        .map_or(r.tag("trace").to_string(), |s| {
            s.to_string_lossy().into_owned()
        });
    format!("{} · {t} · {}", r.tag("half"), r.tag("cache"))
}

/// Bars: auto's per-round ratio with the profile and without.
fn auto_series(recs: &[&LabRecord]) -> Vec<BarSeries> {
    let of = |v: &[f64]| (!v.is_empty()).then(|| Stats::of(v));
    vec![
        BarSeries {
            name: "auto (this machine's profile)".into(),
            vals: recs.iter().map(|r| of(&r.samples)).collect(),
        },
        BarSeries {
            name: "auto:builtin (no profile)".into(),
            vals: recs
                .iter()
                .map(|r| of(r.extra.get(BUILTIN_RATIO).map_or(&[][..], |v| &v[..])))
                .collect(),
        },
    ]
}

/// Bars: each reader's time per round over the record's best median.
fn relative_times(recs: &[&LabRecord]) -> Vec<BarSeries> {
    let mut names: Vec<String> = Vec::new();
    for r in recs {
        for k in r.extra.keys() {
            if let Some(n) = k.strip_suffix("_s") {
                if !names.iter().any(|x| x == n) {
                    names.push(n.to_string());
                }
            }
        }
    }
    names
        .iter()
        .map(|n| BarSeries {
            name: n.clone(),
            vals: recs
                .iter()
                .map(|r| {
                    let best = names
                        .iter()
                        .filter_map(|m| r.extra.get(&format!("{m}_s")))
                        .map(|v| median(v))
                        .fold(f64::INFINITY, f64::min);
                    let v = r.extra.get(&format!("{n}_s"))?;
                    let rel: Vec<f64> = v.iter().map(|x| x / best.max(1e-12)).collect();
                    Some(Stats::of(&rel))
                })
                .collect(),
        })
        .collect()
}

/// Whether the 95 % interval of the median ratio lies at or under `limit`
/// (reproduced), over it (not reproduced), or across it.
fn judge(v: &[f64], limit: f64) -> Verdict {
    let (_, lo, hi) = median_interval(v);
    crate::verdict::over_range(lo, hi, |x| x <= limit)
}

fn cell(v: &[f64]) -> String {
    let (m, lo, hi) = median_interval(v);
    if m.is_nan() {
        return "-".into();
    }
    format!("{m:.2} [{lo:.2}–{hi:.2}]")
}

/// A record's row of the table: half, trace, cache, the best fixed reader
/// and its median, and the two ratios with their intervals.
fn row(r: &LabRecord) -> Option<Vec<String>> {
    let (bname, bmed) = best_fixed(&r.extra)?;
    let b = r.extra.get(BUILTIN_RATIO).map_or(&[][..], |v| &v[..]);
    Some(vec![
        r.tag("half").to_string(),
        category(r).split(" · ").nth(1).unwrap_or("").to_string(),
        r.tag("cache").to_string(),
        bname,
        format!("{bmed:.3} s"),
        cell(&r.samples),
        cell(b),
    ])
}

/// The table rows and the findings: on the test half, `auto` within
/// [`WITHIN_TUNED`] and `auto:builtin` within [`WITHIN_BUILTIN`] of the
/// best fixed reader on every trace, and at most the per-trace best in
/// geometric mean.
fn auto_findings(recs: &[&LabRecord]) -> (Vec<Vec<String>>, Vec<Finding>) {
    let rows: Vec<Vec<String>> = recs.iter().filter_map(|r| row(r)).collect();
    let (mut tuned, mut builtin, mut nums, mut logs) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for r in recs.iter().filter(|r| r.tag("half") == "test") {
        let Some((bname, _)) = best_fixed(&r.extra) else {
            continue;
        };
        let b = r.extra.get(BUILTIN_RATIO).map_or(&[][..], |v| &v[..]);
        tuned.push(judge(&r.samples, WITHIN_TUNED));
        builtin.push(judge(b, WITHIN_BUILTIN));
        let (m, ..) = median_interval(&r.samples);
        let (mb, ..) = median_interval(b);
        logs.push(m.ln());
        nums.push(format!("{}: {m:.2} / {mb:.2} (best {bname})", category(r)));
    }
    let numbers = if nums.is_empty() {
        "no test traces measured".to_string()
    } else {
        nums.join("; ")
    };
    let gmean = (logs.iter().sum::<f64>() / logs.len().max(1) as f64).exp();
    let gm_verdict = if logs.is_empty() || logs.iter().any(|x| x.is_nan()) {
        Verdict::Inconclusive
    } else if gmean <= 1.0 {
        Verdict::Reproduced
    } else {
        Verdict::NotReproduced
    };
    let findings = vec![
        Finding::new(
            NAME,
            format!("on every test trace, auto with this machine's profile takes at most {WITHIN_TUNED:.2}× the best fixed reader's time (95 % interval of the per-round median)"),
            all_of(&tuned),
            format!("auto / auto:builtin over the best fixed: {numbers}"),
        ),
        Finding::new(
            NAME,
            format!("on every test trace, auto without a profile takes at most {WITHIN_BUILTIN:.2}× the best fixed reader's time"),
            all_of(&builtin),
            numbers.clone(),
        ),
        Finding::new(
            NAME,
            "over the test half, auto's geometric mean time is at most the per-trace best fixed reader's",
            gm_verdict,
            format!("geometric mean {gmean:.3} over {} test traces", logs.len()),
        ),
    ];
    (rows, findings)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::rec_x;

    fn rec(
        half: &str,
        trace: &str,
        auto: f64,
        builtin: f64,
        mapped: f64,
        stream: f64,
    ) -> LabRecord {
        let mut extra = BTreeMap::new();
        extra.insert("auto_s".to_string(), vec![auto, auto * 1.01, auto * 0.99]);
        extra.insert("auto:builtin_s".to_string(), vec![builtin; 3]);
        extra.insert("mapped_s".to_string(), vec![mapped; 3]);
        extra.insert("stream_s".to_string(), vec![stream; 3]);
        let samples = ratios(&extra, "auto");
        let b = ratios(&extra, readers::AUTO_BUILTIN);
        extra.insert(BUILTIN_RATIO.to_string(), b);
        let ex: Vec<(&str, &[f64])> = extra.iter().map(|(k, v)| (k.as_str(), &v[..])).collect();
        rec_x(
            NAME,
            &[("half", half), ("trace", trace), ("cache", "cold")],
            &samples,
            &ex,
        )
    }

    #[test]
    fn ratios_pair_auto_with_the_best_fixed_reader_never_an_adaptive_one() {
        // auto:builtin is the fastest of all, but it is not fixed.
        let r = rec("test", "db", 1.0, 0.1, 2.0, 4.0);
        assert_eq!(best_fixed(&r.extra).unwrap().0, "mapped");
        assert!((r.samples[0] - 0.5).abs() < 1e-9, "{:?}", r.samples);
        assert!((r.extra[BUILTIN_RATIO][0] - 0.05).abs() < 1e-9);
    }

    #[test]
    fn only_the_test_half_decides_and_both_halves_are_drawn() {
        // Auto twice as slow on a train trace: shown, not judged.
        let train = rec("train", "grep", 2.0, 2.0, 1.0, 3.0);
        let test = rec("test", "loader", 1.0, 1.05, 1.0, 3.0);
        let a = Replay.analyse(&[test.clone(), train.clone()]);
        assert_eq!(
            a.findings[0].verdict,
            Verdict::Reproduced,
            "{:?}",
            a.findings
        );
        assert_eq!(a.findings[1].verdict, Verdict::Reproduced);
        // As fast as the best fixed reader: at most it, in geometric mean.
        assert_eq!(
            a.findings[2].verdict,
            Verdict::Reproduced,
            "{:?}",
            a.findings[2]
        );
        assert_eq!(a.figures.len(), 2);
        // Train first, then test, in the table as in the figure.
        let t = a.table.find("train").unwrap();
        assert!(t < a.table.find("test").unwrap(), "{}", a.table);
        // Auto 40 % slower than the best on a test trace: not reproduced.
        let slow = rec("test", "db", 1.4, 1.0, 1.0, 3.0);
        let a = Replay.analyse(&[train, test, slow]);
        assert_eq!(a.findings[0].verdict, Verdict::NotReproduced);
        assert!(
            a.findings[0].numbers.contains("test · db · cold: 1.40"),
            "{}",
            a.findings[0].numbers
        );
        assert_eq!(a.findings[2].verdict, Verdict::NotReproduced);
    }

    #[test]
    fn the_interval_of_the_median_comes_from_order_statistics() {
        // 11 rounds: the 2nd and the 10th of the sorted ratios (98.8 %).
        let v: Vec<f64> = (1..=11).map(f64::from).collect();
        assert_eq!(median_interval(&v), (6.0, 2.0, 10.0));
        // 5 rounds are too few for 95 %: the whole range.
        assert_eq!(median_interval(&[3.0, 1.0, 2.0, 5.0, 4.0]), (3.0, 1.0, 5.0));
        // 20 rounds: the 6th and the 15th.
        let v: Vec<f64> = (1..=20).map(f64::from).collect();
        let (_, lo, hi) = median_interval(&v);
        assert_eq!((lo, hi), (6.0, 15.0));
        assert!(median_interval(&[]).0.is_nan());
    }

    #[test]
    fn a_manifest_names_each_trace_and_its_half() {
        let m = "name\thalf\tshape\tmaps\twhat\nsqlite-index\ttrain\tdb\tno\tlook-ups\n\nzstd-big\ttest\tarchiver\tno\tzstd\n";
        assert_eq!(
            manifest(m),
            vec![
                ("sqlite-index".to_string(), "train".to_string()),
                ("zstd-big".to_string(), "test".to_string())
            ]
        );
    }
}
