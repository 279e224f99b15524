//! `iolab sys`: the cost of the operating system's basic operations.

use crate::export::flags::OutputArgs;
use crate::export::{Exportable, Exporters};
use anyhow::Context;
use iolab_bench::env::Environment;
use iolab_sysbench::{
    self as system, net, result::EntryLine, Config, Entry, Scale, SysError, SysReport, GROUPS,
    MEASUREMENTS, QUICK_SKIPS, SCHEMA_VERSION,
};
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

/// Arguments of `iolab sys`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  iolab sys --quick\n  iolab sys list\n  iolab sys getpid fork mem_latency --json\n  iolab sys net --serve 0.0.0.0:7777   (on the other machine)\n  iolab sys net --connect host:7777"
)]
pub struct SysArgs {
    /// Measurements or groups to run (default: all); `list` prints them.
    #[arg(value_name = "NAME")]
    pub names: Vec<String>,
    /// Smaller experiments: everything in under 45 s.
    #[arg(long)]
    pub quick: bool,
    /// Outputs: --json, --jsonl (one record per measurement), --csv
    /// (series,x,x_unit,y,y_unit,y_min,y_max: every series point, then each
    /// measurement's median as series NAME with no x), --overwrite.
    #[command(flatten)]
    pub out: OutputArgs,
    /// Show how each value was measured, its notes and every point of
    /// each curve (the table alone is the summary).
    #[arg(long)]
    pub detail: bool,
    /// Repeats per measurement [default: 5, 3 with --quick].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub repeat: Option<u32>,
    /// Directory for temporary files (a hidden temp dir is made inside) [default: .].
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Serve the network tests' other end until Ctrl-C on \[ADDR:\]PORT: a
    /// bare PORT listens on 127.0.0.1 only; 0.0.0.0:PORT exposes it.
    #[arg(long, value_name = "[ADDR:]PORT", conflicts_with = "connect", value_parser = crate::parse::listen_addr)]
    pub serve: Option<std::net::SocketAddr>,
    /// Run the network tests against `iolab sys net --serve` at HOST:PORT.
    #[arg(long, value_name = "HOST:PORT")]
    pub connect: Option<String>,
}

/// The folder the measurements make their files in, under `dir`: removed
/// at the end, and by the watchdog too if a measurement blocked in the
/// kernel keeps the run from ending after Ctrl-C.
fn scratch_dir(dir: &std::path::Path) -> anyhow::Result<tempfile::TempDir> {
    let t = tempfile::Builder::new()
        .prefix(".iolab-sys-")
        .tempdir_in(dir)
        .with_context(|| format!("create a temporary folder in {}", dir.display()))?;
    if let Some(id) = iolab::file::FileIdent::of_path(t.path()) {
        crate::cleanup::register_created(t.path(), id);
    }
    Ok(t)
}

/// Bad input: one `error:` line, exit status 2.
fn bad(msg: &str) -> anyhow::Result<i32> {
    Err(super::usage(msg))
}

/// Runs `iolab sys`; returns the exit code (0 ok, 1 a measurement failed,
/// 2 bad input, 130 interrupted).
// Long on purpose: the command's outline (select, measure, print,
// write); each step is short and in order.
pub fn run(args: &SysArgs, stop: &AtomicBool) -> anyhow::Result<i32> {
    if args.names.len() == 1 && args.names[0] == "list" {
        crate::export::stdout(&list_text())?;
        return Ok(0);
    }
    let net_only = args.names.is_empty() || args.names.iter().all(|n| n == "net");
    if args.serve.is_some() && !net_only {
        return bad("--serve runs only the network tests: use `iolab sys net --serve [ADDR:]PORT`");
    }
    if args.connect.is_some() && !net_only {
        return bad(
            "--connect runs only the network tests: use `iolab sys net --connect HOST:PORT`",
        );
    }
    let list = match system::select(&args.names) {
        Ok(l) => l,
        Err(SysError::Unknown(n)) => {
            return bad(&format!(
                "unknown measurement '{n}'; names are listed by `iolab sys list`, groups are {}",
                GROUPS.join(", ")
            ))
        }
        Err(e) => return Err(e.into()),
    };
    let list: Vec<_> = if args.quick && args.names.is_empty() {
        for n in QUICK_SKIPS {
            eprintln!("iolab sys: --quick leaves out {n} (run `iolab sys {n}` for it)");
        }
        list.into_iter()
            .filter(|m| !QUICK_SKIPS.contains(&m.name))
            .collect()
    } else {
        list
    };
    let dir = args.dir.clone().unwrap_or_else(|| PathBuf::from("."));
    crate::work_dir::check("--dir", &dir)?;
    let mut out = SysOut {
        exporters: Exporters::new(args.out.check(&[])?),
        done: 0,
    };
    crate::work_dir::ensure("--dir", &dir)?;
    let scale = if args.quick {
        Scale::Quick
    } else {
        Scale::Full
    };
    let repeat = args.repeat.unwrap_or(if args.quick { 3 } else { 5 }) as usize;
    let scratch = scratch_dir(&dir)?;
    let cfg = Config {
        scale,
        repeat,
        dir: scratch.path().to_path_buf(),
        stop,
    };
    if let Some(addr) = args.serve {
        return serve(addr, stop);
    }
    let mut report = SysReport {
        schema_version: SCHEMA_VERSION,
        scale: scale.name().into(),
        repeat,
        environment: Environment::capture(&dir),
        entries: Vec::new(),
    };
    if let Some(hp) = &args.connect {
        eprintln!("iolab sys: network tests against {hp}");
        match net::remote(&cfg, hp) {
            Ok(es) => report.entries = es,
            Err(SysError::Cancelled) => return Ok(130),
            Err(e) => return Err(anyhow::anyhow!("--connect {hp}: {e}")),
        }
        return finish(args, &mut out, &report, 0);
    }
    let total = list.len();
    let mut failed = false;
    let mut i = 0;
    let mut write_err = None;
    let r = system::run(&list, &cfg, &mut |m, r| {
        i += 1;
        match r {
            Ok(e) => {
                eprintln!("[{i}/{total}] {}", m.name);
                report.entries.push(e.clone());
                if write_err.is_none() {
                    if let Err(e) = out.write(&report) {
                        write_err = Some(e);
                    }
                }
            }
            Err(SysError::Unsupported(why)) => {
                eprintln!("[{i}/{total}] {}: skipped: {why}", m.name)
            }
            Err(SysError::Cancelled) => {}
            Err(e) => {
                failed = true;
                eprintln!("[{i}/{total}] {}: failed: {e}", m.name)
            }
        }
    });
    if let Some(e) = write_err {
        return Err(e);
    }
    let code = match r {
        Err(SysError::Cancelled) => {
            eprintln!("iolab sys: interrupted; printing what was measured");
            130
        }
        Err(e) => return Err(e.into()),
        Ok(()) if failed || stop.load(Ordering::Relaxed) => 1,
        Ok(()) => 0,
    };
    finish(args, &mut out, &report, code)
}

fn finish(args: &SysArgs, out: &mut SysOut, report: &SysReport, code: i32) -> anyhow::Result<i32> {
    out.write(report)?;
    out.exporters.finish()?;
    let out = std::io::stdout();
    let mut out = out.lock();
    let res = if args.out.json {
        serde_json::to_writer_pretty(&mut out, report)
            .map_err(std::io::Error::from)
            .and_then(|_| writeln!(out))
    } else {
        print_table(&mut out, report, args.detail)
    };
    match res {
        Ok(()) => Ok(code),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(code),
        Err(e) => Err(e).context("write to stdout"),
    }
}

/// The output files of `iolab sys`, written through the exporters.
struct SysOut {
    exporters: Exporters,
    /// Entries already handed to the exporters.
    done: usize,
}

impl SysOut {
    /// Hands the entries measured since the last call to the exporters
    /// (`--jsonl` appends them, `--csv` rewrites every point so far).
    fn write(&mut self, report: &SysReport) -> anyhow::Result<()> {
        for e in &report.entries[self.done.min(report.entries.len())..] {
            self.exporters.record(&EntryLine {
                schema_version: SCHEMA_VERSION,
                scale: &report.scale,
                repeat: report.repeat,
                environment: &report.environment,
                entry: e,
            })?;
        }
        self.done = report.entries.len();
        Ok(())
    }
}

/// A number as serde writes one into CSV: shortest round-trip digits, with
/// `.0` on whole numbers (`1.0`, not `1`).
fn csv_num(x: f64) -> String {
    let s = x.to_string();
    if x.is_finite() && !s.contains(['.', 'e', 'E']) {
        s + ".0"
    } else {
        s
    }
}

/// A `sys` measurement as the file formats write it.
impl Exportable for EntryLine<'_> {
    fn to_json(&self) -> anyhow::Result<serde_json::Value> {
        Ok(serde_json::to_value(self)?)
    }

    fn csv_header(&self) -> Vec<String> {
        ["series", "x", "x_unit", "y", "y_unit", "y_min", "y_max"]
            .map(String::from)
            .to_vec()
    }

    fn csv_rows(&self) -> Vec<Vec<String>> {
        let mut rows: Vec<Vec<String>> = self
            .entry
            .csv_rows()
            .into_iter()
            .map(|r| {
                vec![
                    r.series,
                    csv_num(r.x),
                    r.x_unit,
                    csv_num(r.y),
                    r.y_unit,
                    csv_num(r.y_min),
                    csv_num(r.y_max),
                ]
            })
            .collect();
        // The headline value: series = the measurement's name, no x.
        if let Some((h, st)) = self.entry.headline() {
            rows.push(vec![
                self.entry.name.clone(),
                String::new(),
                String::new(),
                csv_num(st.median),
                h.unit().to_string(),
                csv_num(st.min),
                csv_num(st.max),
            ]);
        }
        rows
    }
}

fn serve(addr: std::net::SocketAddr, stop: &AtomicBool) -> anyhow::Result<i32> {
    let r = net::serve(addr, stop, &mut |a| {
        eprintln!("iolab sys: serving TCP and UDP on {a}; Ctrl-C to stop")
    });
    match r {
        Ok(()) => Ok(130),
        Err(e) => Err(anyhow::anyhow!("--serve {addr}: {e}")),
    }
}

/// What `iolab sys list` prints: every measurement, then the groups.
fn list_text() -> String {
    use std::fmt::Write as _;
    let mut s = format!("{:<16} {:<7} WHAT\n", "NAME", "GROUP");
    for m in MEASUREMENTS {
        let _ = writeln!(s, "{:<16} {:<7} {}", m.name, m.group, m.about);
    }
    let _ = writeln!(
        s,
        "\ngroups: {} (a group name runs the whole group)",
        GROUPS.join(", ")
    );
    s
}

fn num(v: f64) -> String {
    let a = v.abs();
    if !v.is_finite() {
        "-".into()
    } else if a >= 1e6 {
        format!("{:.4e}", v)
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn bytes(b: f64) -> String {
    iolab_bench::prepare::human(b.max(0.0) as u64)
}

/// The summary (one line per measurement, one per curve's plateaus), then
/// with `detail` how each was measured and every point of every curve.
fn print_table(out: &mut dyn Write, r: &SysReport, detail: bool) -> std::io::Result<()> {
    let e = &r.environment;
    writeln!(
        out,
        "iolab sys ({} scale, {} repeats) on {} | {} | {} cores | {} RAM | kernel {}",
        r.scale,
        r.repeat,
        e.hostname,
        e.cpu_model,
        e.cores,
        bytes(e.memory_bytes as f64),
        e.kernel
    )?;
    writeln!(
        out,
        "{:<16} {:>12} {:<6} {:>12} {:>12} {:>8}",
        "NAME", "MEDIAN", "UNIT", "MIN", "MAX", "SD%"
    )?;
    let mut group = "";
    for en in &r.entries {
        if en.group != group {
            group = &en.group;
            writeln!(out, "-- {group}")?;
        }
        write_entry(out, en, detail)?;
    }
    for en in &r.entries {
        if detail {
            write_series(out, en)?;
        } else {
            write_plateaus_line(out, en)?;
        }
    }
    if !detail && !r.entries.is_empty() {
        writeln!(
            out,
            "\nhow each value was measured, notes, and every point of each curve: add --detail (or --json, --csv)"
        )?;
    }
    Ok(())
}

/// The plateaus of a curve on one line (the summary's view of it).
fn write_plateaus_line(out: &mut dyn Write, en: &Entry) -> std::io::Result<()> {
    if en.plateaus.is_empty() {
        return Ok(());
    }
    let parts: Vec<String> = en
        .plateaus
        .iter()
        .map(|p| {
            format!(
                "{} {} ns ({}..{})",
                p.name,
                num(p.latency_ns),
                bytes(p.from_bytes as f64),
                bytes(p.to_bytes as f64)
            )
        })
        .collect();
    writeln!(out, "{} plateaus: {}", en.name, parts.join(", "))
}

fn write_entry(out: &mut dyn Write, en: &Entry, detail: bool) -> std::io::Result<()> {
    match en.headline() {
        Some((h, s)) => {
            let sd = if s.mean != 0.0 {
                100.0 * s.stddev / s.mean.abs()
            } else {
                0.0
            };
            let (med, min, max) = if h.unit() == "bytes" {
                (bytes(s.median), bytes(s.min), bytes(s.max))
            } else {
                (num(s.median), num(s.min), num(s.max))
            };
            let unit = if h.unit() == "bytes" { "" } else { h.unit() };
            writeln!(
                out,
                "{:<16} {:>12} {:<6} {:>12} {:>12} {:>7.1}%",
                en.name, med, unit, min, max, sd
            )?;
        }
        None => writeln!(out, "{:<16} {:>12}", en.name, "-")?,
    }
    if detail {
        writeln!(out, "    method: {}", en.method)?;
        for n in &en.notes {
            writeln!(out, "    note: {n}")?;
        }
    }
    Ok(())
}

fn write_series(out: &mut dyn Write, en: &Entry) -> std::io::Result<()> {
    for s in &en.series {
        writeln!(
            out,
            "\n{} ({} by {}; median [min..max] over repeats)",
            s.name, s.y_unit, s.x_unit
        )?;
        let mut marks: Vec<_> = en.cache_levels.iter().collect();
        marks.sort_by_key(|c| c.size_bytes);
        let mut mi = 0;
        for p in &s.points {
            while mi < marks.len() && (marks[mi].size_bytes as f64) < p.x {
                let c = marks[mi];
                writeln!(
                    out,
                    "  ---- L{} {} cache {} ----",
                    c.level,
                    c.kind,
                    bytes(c.size_bytes as f64)
                )?;
                mi += 1;
            }
            let x = if s.x_unit == "bytes" {
                bytes(p.x)
            } else {
                format!("{} {}", p.x, s.x_unit)
            };
            let (y, lo, hi) = if s.y_unit == "bytes" {
                (bytes(p.y), bytes(p.y_min), bytes(p.y_max))
            } else {
                (num(p.y), num(p.y_min), num(p.y_max))
            };
            writeln!(out, "  {x:>14}  {y:>10}  [{lo}..{hi}]")?;
        }
        // The plateaus belong to the main curve (named as the entry), not
        // to its comparison walks.
        for p in en.plateaus.iter().filter(|_| s.name == en.name) {
            writeln!(
                out,
                "  plateau {:<4} {:>8} ns  ({}..{})",
                p.name,
                num(p.latency_ns),
                bytes(p.from_bytes as f64),
                bytes(p.to_bytes as f64)
            )?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_sysbench::result::{Plateau, Point, Series};

    fn curve(name: &str, ys: &[f64]) -> Series {
        Series {
            name: name.into(),
            x_unit: "bytes".into(),
            y_unit: "ns".into(),
            points: ys
                .iter()
                .enumerate()
                .map(|(i, &y)| Point::of((1024u64 << i) as f64, &[y]))
                .collect(),
        }
    }

    fn report() -> SysReport {
        let mut e = Entry::new("mem_latency", "memory", "a random cycle".to_string());
        e.series.push(curve("mem_latency", &[1.0, 1.1, 120.0]));
        e.series
            .push(curve("mem_latency.stride64", &[0.5, 0.6, 7.0]));
        e.plateaus.push(Plateau {
            name: "RAM".into(),
            from_bytes: 4096,
            to_bytes: 4096,
            latency_ns: 120.0,
        });
        SysReport {
            entries: vec![e],
            ..SysReport::default()
        }
    }

    #[test]
    fn plateaus_sit_under_the_curve_they_describe_and_detail_is_asked_for() {
        let mut out = Vec::new();
        print_table(&mut out, &report(), true).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.matches("plateau RAM").count(), 1, "{text}");
        let plateau = text.find("plateau RAM").unwrap();
        let stride = text.find("mem_latency.stride64 (").unwrap();
        assert!(plateau < stride, "under the main curve only: {text}");
        let mut out = Vec::new();
        print_table(&mut out, &report(), false).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("mem_latency plateaus: RAM 120 ns"), "{text}");
        assert!(
            !text.contains("stride64") && !text.contains("method:"),
            "{text}"
        );
        assert!(text.contains("add --detail"), "{text}");
    }
}
