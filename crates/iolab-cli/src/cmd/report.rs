//! `iolab report DIR|FILE... [-o FILE]`: one self-contained HTML page from
//! any set of records: lab records (figures inline, tables, findings, the
//! commands that produced them), `iolab bench --jsonl` records and
//! `iolab sys --jsonl` records, with the environment they came from.

use crate::lab_files::write_regenerated;
use anyhow::{Context, Result};
use iolab_bench::record::BenchRecord;
use iolab_lab::{self as lab, record::LabRecord, verdict::Finding};
use iolab_sysbench::result::Entry;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Arguments of `iolab report`.
#[derive(clap::Args, Debug)]
pub struct ReportArgs {
    /// Record files (JSON lines), or folders whose `*.jsonl` files are read.
    #[arg(required = true, value_name = "DIR|FILE")]
    inputs: Vec<PathBuf>,
    /// The HTML page to write.
    #[arg(short = 'o', long = "output", default_value = "iolab-report.html")]
    output: PathBuf,
    /// Allow replacing an existing file iolab did not write.
    #[arg(long)]
    overwrite: bool,
}

/// Marks a page as iolab's (so a later report may replace it).
const MARK: &str = "<!-- iolab report -->";

#[derive(Default)]
struct Inputs {
    lab: Vec<LabRecord>,
    bench: Vec<BenchRecord>,
    sys: Vec<Entry>,
    /// Environments of sys records (host, kernel, device and the rest).
    sys_env: Vec<iolab_bench::env::Environment>,
    skipped: usize,
    files: Vec<PathBuf>,
}

fn files_of(inputs: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut v = Vec::new();
    for p in inputs {
        let m = std::fs::metadata(p).map_err(|e| {
            super::usage(format!(
                "{}: {}",
                p.display(),
                e.kind().to_string().to_lowercase()
            ))
        })?;
        if m.is_dir() {
            let mut f: Vec<PathBuf> = std::fs::read_dir(p)
                .with_context(|| format!("read folder {}", p.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|q| q.extension().is_some_and(|x| x == "jsonl"))
                .collect();
            f.sort();
            v.extend(f);
        } else {
            v.push(p.clone());
        }
    }
    if v.is_empty() {
        return Err(super::usage(
            "no record files found (give .jsonl files or folders holding them)",
        ));
    }
    Ok(v)
}

fn load(files: Vec<PathBuf>) -> Result<Inputs> {
    let mut inp = Inputs::default();
    for f in &files {
        let bytes = iolab::file::read_bounded(f, iolab::file::RECORDS_MAX_BYTES, "record file")
            .map_err(|e| super::usage(format!("{}: {e}", f.display())))?;
        let text = String::from_utf8_lossy(&bytes);
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let Ok(v) = serde_json::from_str::<Value>(line) else {
                inp.skipped += 1;
                continue;
            };
            if v.get("kind").and_then(Value::as_str) == Some("lab") {
                match serde_json::from_value::<LabRecord>(v) {
                    Ok(r) => inp.lab.push(r),
                    Err(_) => inp.skipped += 1,
                }
            } else if v.get("spec").is_some() && v.get("runs").is_some() {
                match serde_json::from_value::<BenchRecord>(v) {
                    Ok(r) => inp.bench.push(r),
                    Err(_) => inp.skipped += 1,
                }
            } else if let Some(e) = v.get("entry") {
                if let Some(env) = v
                    .get("environment")
                    .and_then(|x| serde_json::from_value(x.clone()).ok())
                {
                    inp.sys_env.push(env);
                }
                match serde_json::from_value::<Entry>(e.clone()) {
                    Ok(r) => inp.sys.push(r),
                    Err(_) => inp.skipped += 1,
                }
            } else if v.get("group").is_some() && v.get("method").is_some() {
                match serde_json::from_value::<Entry>(v) {
                    Ok(r) => inp.sys.push(r),
                    Err(_) => inp.skipped += 1,
                }
            } else {
                inp.skipped += 1;
            }
        }
    }
    inp.files = files;
    Ok(inp)
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The SVG without its XML declaration, to inline in HTML.
fn inline_svg(svg: &str) -> &str {
    match svg.find("?>") {
        Some(i) if svg.starts_with("<?xml") => svg[i + 2..].trim_start(),
        _ => svg,
    }
}

/// The whole page: where the records came from, the machines, the
/// findings, each experiment, then the bench and sys records.
fn page(inp: &Inputs) -> String {
    let mut h = String::new();
    header(&mut h, inp);
    environment(&mut h, inp);
    let (sections, findings) = experiments(inp);
    findings_table(&mut h, &findings);
    h.push_str(&sections);
    bench_table(&mut h, inp);
    sys_table(&mut h, inp);
    h.push_str("</body></html>\n");
    h
}

/// The head, the style and the line naming the inputs.
fn header(h: &mut String, inp: &Inputs) {
    h.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    h.push_str(MARK);
    h.push_str("<title>iolab report</title><style>body{font-family:sans-serif;max-width:1100px;margin:1em auto;padding:0 1em}pre{background:#f4f4f4;padding:.5em;overflow-x:auto}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}.reproduced{color:#070}.not-reproduced{color:#a00}.inconclusive{color:#850}figure{margin:1em 0}</style></head><body>\n");
    h.push_str("<h1>iolab report</h1>\n<p>From ");
    h.push_str(
        &inp.files
            .iter()
            .map(|f| format!("<code>{}</code>", esc(&f.display().to_string())))
            .collect::<Vec<_>>()
            .join(", "),
    );
    h.push_str(&format!(
        ": {} lab record(s), {} bench record(s), {} sys record(s){}.</p>\n",
        inp.lab.len(),
        inp.bench.len(),
        inp.sys.len(),
        if inp.skipped > 0 {
            format!(
                ", {} line(s) that are not iolab records skipped",
                inp.skipped
            )
        } else {
            String::new()
        }
    ));
}

/// Every distinct machine (and the full environment of the first runner
/// record of each).
fn environment(h: &mut String, inp: &Inputs) {
    let mut machines: BTreeMap<String, String> = BTreeMap::new();
    for r in &inp.lab {
        let key = format!(
            "{} / {} / {}",
            r.machine.host, r.machine.kernel, r.machine.device
        );
        let env = r
            .bench
            .as_ref()
            .and_then(|b| serde_json::to_string_pretty(&b.env).ok());
        let e = machines.entry(key).or_default();
        if e.is_empty() {
            if let Some(env) = env {
                *e = env;
            }
        }
    }
    for env in inp.bench.iter().map(|b| &b.env).chain(inp.sys_env.iter()) {
        let key = format!(
            "{} / {} / {}",
            env.hostname,
            env.kernel,
            env.device.clone().unwrap_or_default()
        );
        let e = machines.entry(key).or_default();
        if e.is_empty() {
            *e = serde_json::to_string_pretty(env).unwrap_or_default();
        }
    }
    h.push_str("<h2>Environment</h2>\n");
    for (k, env) in &machines {
        h.push_str(&format!("<h3>host / kernel / device: {}</h3>\n", esc(k)));
        if !env.is_empty() {
            h.push_str(&format!("<pre>{}</pre>\n", esc(env)));
        }
    }
}

/// One section per experiment with records (its figures, table and
/// findings), and all the findings, for the table that comes first.
fn experiments(inp: &Inputs) -> (String, Vec<Finding>) {
    let mut by_exp: BTreeMap<String, Vec<LabRecord>> = BTreeMap::new();
    for r in &inp.lab {
        by_exp
            .entry(r.experiment.clone())
            .or_default()
            .push(r.clone());
    }
    let mut sections = String::new();
    let mut findings = Vec::new();
    for e in lab::experiments() {
        let Some(recs) = by_exp.get(e.name()) else {
            continue;
        };
        let recs = latest(recs);
        let an = e.analyse(&recs);
        experiment_section(&mut sections, e, &recs, &an);
        findings.extend(an.findings);
    }
    (sections, findings)
}

/// The latest record of each configuration and machine.
fn latest(recs: &[LabRecord]) -> Vec<LabRecord> {
    let mut latest: BTreeMap<(String, String), &LabRecord> = BTreeMap::new();
    for r in recs {
        latest.insert((r.resume_key.clone(), r.machine.host.clone()), r);
    }
    latest.values().map(|r| (*r).clone()).collect()
}

/// One experiment's section: what it studies, its figures, its table, its
/// findings and the commands that produced its records.
fn experiment_section(
    sections: &mut String,
    e: &dyn lab::Experiment,
    recs: &[LabRecord],
    an: &lab::Analysis,
) {
    sections.push_str(&format!(
        "<h2 id=\"{0}\">{0} (studies {1})</h2>\n<p>{2} {3} configuration(s).</p>\n",
        esc(e.name()),
        esc(e.study()),
        esc(e.answers()),
        recs.len()
    ));
    for f in &an.figures {
        sections.push_str(&format!(
            "<figure class=\"figure\" id=\"fig-{}\">{}<figcaption>{}</figcaption></figure>\n",
            esc(&f.name),
            inline_svg(&f.svg),
            esc(&f.title)
        ));
    }
    sections.push_str(&format!("<pre>{}</pre>\n<ul>\n", esc(&an.table)));
    for f in &an.findings {
        sections.push_str(&format!(
            "<li><span class=\"{}\">{}</span>: {} ({})</li>\n",
            f.verdict.to_string().replace(' ', "-"),
            f.verdict,
            esc(&f.claim),
            esc(&f.numbers)
        ));
    }
    sections.push_str("</ul>\n<p>Produced by:</p><pre>");
    sections.push_str(&esc(&produced_by(recs)));
    sections.push_str("</pre>\n");
}

/// The commands that produced the records, each once, sorted, with the
/// scale and iolab version they ran at.
fn produced_by(recs: &[LabRecord]) -> String {
    let mut cmds: Vec<String> = recs
        .iter()
        .map(|r| {
            format!(
                "{}   # scale {}, iolab {}",
                r.command, r.scale, r.iolab_version
            )
        })
        .collect();
    cmds.sort();
    cmds.dedup();
    cmds.join("\n")
}

/// The findings of every experiment, in one table.
fn findings_table(h: &mut String, findings: &[Finding]) {
    if !findings.is_empty() {
        h.push_str("<h2>Findings</h2>\n<table><tr><th>experiment</th><th>claim (test and tolerance)</th><th>verdict</th><th>numbers</th></tr>\n");
        for f in findings {
            h.push_str(&format!(
                "<tr><td>{}</td><td>{}</td><td class=\"{}\">{}</td><td>{}</td></tr>\n",
                esc(&f.experiment),
                esc(&f.claim),
                f.verdict.to_string().replace(' ', "-"),
                f.verdict,
                esc(&f.numbers)
            ));
        }
        h.push_str("</table>\n");
    }
}

/// The `iolab bench` records, one row each.
fn bench_table(h: &mut String, inp: &Inputs) {
    if !inp.bench.is_empty() {
        h.push_str("<h2>Bench records</h2>\n<table><tr><th>label</th><th>engine</th><th>op</th><th>pattern</th><th>block</th><th>qd</th><th>threads</th><th>cache</th><th>MiB/s (median)</th><th>p99 (ns)</th><th>runs</th><th>failed ops</th></tr>\n");
        for b in &inp.bench {
            let s = &b.spec;
            h.push_str(&format!(
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.1}</td><td>{:.0}</td><td>{}</td>{}</tr>\n",
                esc(&b.label),
                s.engine,
                esc(&s.op.name()),
                s.pattern,
                s.bs,
                s.qd,
                s.threads,
                s.cache.name(),
                b.summary.mib_per_s.median,
                b.summary.p99_ns.median,
                b.runs.len(),
                failed_ops_cell(b)
            ));
        }
        h.push_str("</table>\n");
    }
}

/// A bench record's failed ops (errors, short transfers, verify
/// mismatches): a run that had any did not measure what it claims.
fn failed_ops_cell(b: &BenchRecord) -> String {
    let n: u64 = b.runs.iter().map(|r| r.errors).sum();
    if n == 0 {
        return "<td>0</td>".into();
    }
    let first = b.runs.iter().find_map(|r| r.first_errors.first());
    format!(
        "<td style=\"color:#b00;font-weight:bold\">{n} failed{}</td>",
        first.map_or(String::new(), |f| format!(": {}", esc(f)))
    )
}

/// The `iolab sys` records, one row each.
fn sys_table(h: &mut String, inp: &Inputs) {
    if !inp.sys.is_empty() {
        h.push_str("<h2>System measurements</h2>\n<table><tr><th>name</th><th>group</th><th>median</th><th>unit</th><th>how</th></tr>\n");
        for e in &inp.sys {
            let (v, u) = match e.headline() {
                Some((hd, s)) => (format!("{:.3}", s.median), hd.unit()),
                None => ("-".into(), ""),
            };
            h.push_str(&format!(
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                esc(&e.name),
                esc(&e.group),
                v,
                u,
                esc(&e.method)
            ));
        }
        h.push_str("</table>\n");
    }
}

/// Runs `iolab report`.
pub fn run(a: &ReportArgs) -> Result<i32> {
    let files = files_of(&a.inputs)?;
    let out: &Path = &a.output;
    if files.iter().any(|f| same(f, out)) {
        return Err(super::usage(format!(
            "-o {}: that is one of the record files; choose another name",
            out.display()
        )));
    }
    let inp = load(files)?;
    if inp.lab.is_empty() && inp.bench.is_empty() && inp.sys.is_empty() {
        return Err(super::usage(
            "no iolab records in the inputs (give files written by iolab lab, bench --jsonl or sys --jsonl)",
        ));
    }
    let html = page(&inp);
    if write_regenerated("-o", out, &html, MARK, a.overwrite)? {
        eprintln!("wrote {}", out.display());
    }
    Ok(0)
}

fn same(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}
