//! The job-file language and fio's command-line form, read into jobs of raw
//! `key[=value]` options that remember where each came from.
//!
//! Job files: `[section]` headers, `key=value` or bare `key` lines, comments
//! from the first `;` or `#` of a line to its end (as fio cuts them, also
//! after a value), `include FILE` (relative to the including file),
//! `${VAR}` from the environment (nothing when unset, as fio) and fio's
//! keywords `$ncpus`, `$pagesize`, `$mb_memory` (with `bc` arithmetic
//! around them, see [`crate::expr`]). A job inherits the `[global]` options
//! written before it. The command-line form is the same language: options
//! before the first `--name` are global, each `--name` starts a job.

use super::{FioJobError, Loc};
use std::path::{Path, PathBuf};

/// One option as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawOpt {
    /// Name as written (lower case, trimmed).
    pub key: String,
    /// Value after `=`, variables expanded; `None` for a bare `key`.
    pub value: Option<String>,
    /// The value as written, before expansion (for messages).
    pub written: Option<String>,
    /// Environment variables the value used that are not set (fio expands
    /// them to nothing).
    pub unset: Vec<String>,
    /// Where it was written.
    pub loc: Loc,
}

/// One job: its name and every option that applies, globals first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawJob {
    /// Section name (or `--name` value).
    pub name: String,
    /// Where the job starts.
    pub loc: Loc,
    /// Inherited `[global]` options, then the job's own, in order (a later
    /// one overrides an earlier one).
    pub opts: Vec<RawOpt>,
    /// How many of `opts` came from `[global]` (for fio's "global options").
    pub n_global: usize,
}

/// Include depth past which a job file is taken to include itself.
const MAX_INCLUDE_DEPTH: usize = 16;

/// fio's built-in variables.
fn builtin(name: &str) -> Option<String> {
    match name {
        "ncpus" => Some(
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
                .to_string(),
        ),
        "pagesize" => Some(iolab::usage::page_size().to_string()),
        "mb_memory" => {
            let text = std::fs::read_to_string("/proc/meminfo").ok()?;
            let kb: u64 = text
                .lines()
                .find(|l| l.starts_with("MemTotal:"))?
                .split_whitespace()
                .nth(1)?
                .parse()
                .ok()?;
            Some((kb / 1024).to_string())
        }
        _ => None,
    }
}

/// Expands a value as fio does: `${VAR}` becomes the environment
/// variable's value, or nothing when it is unset (fio substitutes it
/// always); `$pagesize`, `$mb_memory` and `$ncpus` become their values
/// wherever they appear, and a value in which one was replaced that holds
/// `+ - * /` is computed as `bc` computes it (integers). Any other `$name`
/// (fio's `$jobnum`, `$filenum` in `filename_format`) is left as written.
/// Returns the value and the names of the unset variables it used.
pub fn expand(text: &str, loc: &Loc) -> Result<(String, Vec<String>), FioJobError> {
    let mut out = String::new();
    let mut unset = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("${") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        match after.find('}').filter(|&e| e > 0) {
            Some(end) => {
                let name = &after[..end];
                match std::env::var(name) {
                    Ok(v) => out.push_str(&v),
                    Err(_) => unset.push(name.to_string()),
                }
                rest = &after[end + 1..];
            }
            None => {
                out.push_str("${");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    let mut replaced = false;
    for kw in ["pagesize", "mb_memory", "ncpus"] {
        let word = format!("${kw}");
        if out.contains(&word) {
            let v = builtin(kw)
                .ok_or_else(|| loc.err(format!("${kw}: cannot be read on this machine")))?;
            out = out.replace(&word, &v);
            replaced = true;
        }
    }
    if replaced && crate::expr::wants_bc(&out) {
        let v = crate::expr::eval(&out, crate::expr::Units::Bc).map_err(|e| {
            loc.err(format!(
                "'{text}' is computed as bc computes it ({out}): {e}"
            ))
        })?;
        out = v.to_string();
    }
    Ok((out, unset))
}

/// A job-file line without its comment: fio cuts a line at the first `;`
/// or `#`, wherever it is (`numjobs=4 ; threads` is `numjobs=4`).
pub fn strip_comment(line: &str) -> &str {
    let cut = line.find([';', '#']).unwrap_or(line.len());
    line[..cut].trim()
}

/// Splits `key=value` / `key` into a raw option.
fn option(text: &str, loc: Loc) -> Result<RawOpt, FioJobError> {
    let (k, v, written, unset) = match text.split_once('=') {
        Some((k, v)) => {
            let (x, unset) = expand(v.trim(), &loc)?;
            (k.trim(), Some(x), Some(v.trim().to_string()), unset)
        }
        None => (text.trim(), None, None, Vec::new()),
    };
    if k.is_empty() || k.contains(char::is_whitespace) {
        return Err(loc.err(format!(
            "'{text}' is not an option (write key=value, or a bare key)"
        )));
    }
    Ok(RawOpt {
        key: k.to_ascii_lowercase(),
        value: v,
        written,
        unset,
        loc,
    })
}

/// The parser's state while reading files (and the command line).
#[derive(Default)]
pub struct Reader {
    globals: Vec<RawOpt>,
    jobs: Vec<RawJob>,
    /// Options given on the command line before any job: they apply to
    /// every job of every file, as fio's own command-line globals do.
    cli_globals: Vec<RawOpt>,
    in_job: bool,
}

impl Reader {
    /// A new reader with no jobs.
    pub fn new() -> Self {
        Self::default()
    }

    fn push_opt(&mut self, o: RawOpt) {
        if self.in_job {
            self.jobs.last_mut().expect("a job").opts.push(o);
        } else {
            self.globals.push(o);
        }
    }

    fn start_job(&mut self, name: String, loc: Loc) {
        let mut opts = self.cli_globals.clone();
        opts.extend(self.globals.iter().cloned());
        let n_global = opts.len();
        self.jobs.push(RawJob {
            name,
            loc,
            opts,
            n_global,
        });
        self.in_job = true;
    }

    /// Reads one job file (its includes too).
    pub fn read_file(&mut self, path: &Path) -> Result<(), FioJobError> {
        // Each file starts outside any job; its globals apply to its own jobs.
        self.in_job = false;
        self.globals.clear();
        // Not opened unless regular: opening a FIFO blocks for a writer.
        if let Ok(m) = std::fs::metadata(path) {
            if !m.is_file() {
                return Err(Loc::new(path.display().to_string(), 0)
                    .err("not a regular file; name a job file".to_string()));
            }
        }
        let text = read_job_file(path).map_err(|e| {
            Loc::new(path.display().to_string(), 0).err(format!("cannot read the job file: {e}"))
        })?;
        self.read_text(&text, path, 0)
    }

    /// Reads job-file text; `path` names it in messages and anchors includes.
    pub fn read_text(&mut self, text: &str, path: &Path, depth: usize) -> Result<(), FioJobError> {
        let name = path.display().to_string();
        for (i, raw) in text.lines().enumerate() {
            let loc = Loc::new(name.clone(), i + 1);
            let line = strip_comment(raw);
            if line.is_empty() {
                continue;
            }
            if let Some(rest) = line.strip_prefix('[') {
                let sec = rest
                    .strip_suffix(']')
                    .ok_or_else(|| loc.err(format!("'{line}': a section header ends with ']'")))?;
                let sec = sec.trim();
                if sec.is_empty() {
                    return Err(loc.err("'[]': a section needs a name".into()));
                }
                if sec == "global" {
                    self.in_job = false;
                } else {
                    self.start_job(sec.to_string(), loc);
                }
                continue;
            }
            if let Some(inc) = line.strip_prefix("include") {
                if inc.starts_with(char::is_whitespace) {
                    let (inc, _) = expand(inc.trim(), &loc)?;
                    if depth >= MAX_INCLUDE_DEPTH {
                        return Err(loc.err(format!(
                            "include {inc}: includes nested {MAX_INCLUDE_DEPTH} deep (does a file include itself?)"
                        )));
                    }
                    let p = PathBuf::from(&inc);
                    let p = if p.is_relative() {
                        path.parent().unwrap_or(Path::new(".")).join(p)
                    } else {
                        p
                    };
                    let body =
                        read_job_file(&p).map_err(|e| loc.err(format!("include {inc}: {e}")))?;
                    self.read_text(&body, &p, depth + 1)?;
                    continue;
                }
            }
            let o = option(line, loc)?;
            self.push_opt(o);
        }
        Ok(())
    }

    /// Reads fio's command-line form: `--key=value` / `--key` arguments;
    /// `--name=X` starts a job. Options before the first job apply to all.
    pub fn read_args(&mut self, args: &[String]) -> Result<(), FioJobError> {
        self.in_job = false;
        self.globals.clear();
        for (i, a) in args.iter().enumerate() {
            let loc = Loc::new("<command line>".into(), i + 1);
            let body = a
                .strip_prefix("--")
                .ok_or_else(|| loc.err(format!("'{a}': fio options are written --key=value")))?;
            let o = option(body, loc.clone())?;
            if o.key == "name" {
                let n = o
                    .value
                    .clone()
                    .filter(|v| !v.is_empty())
                    .ok_or_else(|| loc.err("--name needs a value (--name=JOB)".into()))?;
                self.start_job(n, loc);
                // fio lists `name` among the job's options too.
                self.push_opt(o);
            } else if self.in_job {
                self.push_opt(o);
            } else {
                self.cli_globals.push(o);
            }
        }
        Ok(())
    }

    /// The jobs read so far. Command-line options that came after the last
    /// file but before any `--name` apply to every job read from files.
    pub fn finish(self) -> Vec<RawJob> {
        self.jobs
    }

    /// Options given before any job on the command line.
    pub fn cli_globals(&self) -> &[RawOpt] {
        &self.cli_globals
    }
}

/// The most bytes of a job file (or a file it includes) read: job files
/// are a few KiB of text.
const JOB_FILE_MAX_BYTES: u64 = 1 << 20;

/// A job file's text, read only from a regular file and with a size limit.
fn read_job_file(p: &Path) -> std::io::Result<String> {
    let b = iolab::file::read_bounded(p, JOB_FILE_MAX_BYTES, "job file")?;
    String::from_utf8(b).map_err(|_| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "stream did not contain valid UTF-8",
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<Vec<RawJob>, FioJobError> {
        let mut r = Reader::new();
        r.read_text(text, Path::new("t.fio"), 0)?;
        Ok(r.finish())
    }

    fn kv(j: &RawJob) -> Vec<(String, Option<String>)> {
        j.opts
            .iter()
            .map(|o| (o.key.clone(), o.value.clone()))
            .collect()
    }

    #[test]
    fn sections_inherit_the_globals_written_before_them() {
        let jobs = read(
            "; a comment\n# another\n[global]\nbs=4k\n  rw = randread \n[a]\nsize=1m\n[global]\nbs=8k\n[b]\nthread\n",
        )
        .unwrap();
        assert_eq!(jobs.len(), 2);
        assert_eq!(jobs[0].name, "a");
        assert_eq!(jobs[0].loc.line, 6);
        assert_eq!(
            kv(&jobs[0]),
            vec![
                ("bs".into(), Some("4k".into())),
                ("rw".into(), Some("randread".into())),
                ("size".into(), Some("1m".into()))
            ]
        );
        // The second [global] adds bs=8k after bs=4k: the later one wins.
        assert_eq!(jobs[1].n_global, 3);
        assert_eq!(jobs[1].opts[2].value.as_deref(), Some("8k"));
        assert_eq!(jobs[1].opts[3].key, "thread");
        assert_eq!(jobs[1].opts[3].value, None);
        assert_eq!(jobs[1].opts[3].loc.line, 11);
    }

    #[test]
    fn variables_expand_as_fio_expands_them() {
        std::env::set_var("IOLAB_TEST_BS", "64k");
        let jobs = read("[j]\nbs=${IOLAB_TEST_BS}\nsize=$IOLAB_TEST_BS\nnumjobs=$ncpus\niodepth=${pagesize}\nfilename_format=$jobname.$jobnum\n").unwrap();
        let v = kv(&jobs[0]);
        assert_eq!(v[0].1.as_deref(), Some("64k"));
        // Only ${VAR} is the environment's: a bare $VAR stays as written.
        assert_eq!(v[1].1.as_deref(), Some("$IOLAB_TEST_BS"));
        let n: usize = v[2].1.as_deref().unwrap().parse().unwrap();
        assert!(n >= 1);
        // ${pagesize} is an (unset) environment variable, not the keyword.
        assert_eq!(v[3].1.as_deref(), Some(""));
        assert_eq!(jobs[0].opts[3].unset, vec!["pagesize".to_string()]);
        assert_eq!(v[4].1.as_deref(), Some("$jobname.$jobnum"));
        // An unset variable is nothing, as fio substitutes it.
        let jobs = read("[j]\n\nbs=${IOLAB_SURELY_UNSET_VAR}k\n").unwrap();
        let o = &jobs[0].opts[0];
        assert_eq!(o.value.as_deref(), Some("k"));
        assert_eq!(o.written.as_deref(), Some("${IOLAB_SURELY_UNSET_VAR}k"));
        assert_eq!(o.unset, vec!["IOLAB_SURELY_UNSET_VAR".to_string()]);
        assert_eq!(o.loc.line, 3);
    }

    #[test]
    fn keywords_with_arithmetic_are_computed_as_bc_does() {
        let page = iolab::usage::page_size() as u64;
        let jobs =
            read("[j]\nsize=8*1024*$pagesize\nbs=$pagesize\noffset=$pagesize/3\nnrfiles=2*2\n")
                .unwrap();
        let v = kv(&jobs[0]);
        assert_eq!(v[0].1, Some((8 * 1024 * page).to_string()));
        assert_eq!(v[1].1, Some(page.to_string()));
        assert_eq!(v[2].1, Some((page / 3).to_string()));
        // No keyword: no bc, the value stays as written (see value.rs).
        assert_eq!(v[3].1.as_deref(), Some("2*2"));
        let e = read("[j]\nsize=$pagesize*(2\n").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("t.fio:2: '$pagesize*(2' is computed as bc"),
            "{e}"
        );
    }

    #[test]
    fn comments_end_a_line_anywhere_as_in_fio() {
        let jobs = read("[global]\nnumjobs=4\t; 4 simultaneous threads\n[a] ; first\nfilename=datafile.tmp\t; or a disk\nsize=5*1024 # 5/8 of memory\n").unwrap();
        assert_eq!(jobs[0].name, "a");
        let v = kv(&jobs[0]);
        assert_eq!(v[0].1.as_deref(), Some("4"));
        assert_eq!(v[1].1.as_deref(), Some("datafile.tmp"));
        assert_eq!(v[2].1.as_deref(), Some("5*1024"));
    }

    #[test]
    fn includes_are_relative_to_the_including_file() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("sub")).unwrap();
        std::fs::write(d.path().join("sub/common.fio"), "[global]\nbs=16k\n").unwrap();
        std::fs::write(
            d.path().join("main.fio"),
            "include sub/common.fio\n[x]\nrw=read\n",
        )
        .unwrap();
        std::fs::write(d.path().join("loop.fio"), "include loop.fio\n").unwrap();
        let mut r = Reader::new();
        r.read_file(&d.path().join("main.fio")).unwrap();
        let j = r.finish();
        assert_eq!(j[0].opts[0].value.as_deref(), Some("16k"));
        assert!(j[0].opts[0].loc.file.ends_with("sub/common.fio"));
        assert_eq!(j[0].opts[0].loc.line, 2);
        let mut r = Reader::new();
        let e = r.read_file(&d.path().join("loop.fio")).unwrap_err();
        assert!(e.msg.contains("nested"), "{e}");
        let mut r = Reader::new();
        let e = r
            .read_text("include nope.fio\n", &d.path().join("m.fio"), 0)
            .unwrap_err();
        assert_eq!(e.loc.line, 1);
        assert!(e.msg.starts_with("include nope.fio"), "{e}");
    }

    #[test]
    fn command_line_form_starts_a_job_per_name() {
        let args: Vec<String> = [
            "--bs=4k",
            "--name=a",
            "--rw=read",
            "--name=b",
            "--rw=write",
            "--direct",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let mut r = Reader::new();
        r.read_args(&args).unwrap();
        let j = r.finish();
        assert_eq!(j.len(), 2);
        assert_eq!((j[0].name.as_str(), j[1].name.as_str()), ("a", "b"));
        assert_eq!(j[1].opts[0].key, "bs");
        assert_eq!(j[1].opts.last().unwrap().key, "direct");
        assert_eq!(j[1].loc.line, 4);
        let mut r = Reader::new();
        let e = r.read_args(&["bs=4k".to_string()]).unwrap_err();
        assert!(e.to_string().starts_with("<command line>:1: "), "{e}");
    }

    #[test]
    fn malformed_lines_name_file_and_line() {
        let e = read("[a]\nbs=4k\n[broken\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "t.fio:3: '[broken': a section header ends with ']'"
        );
        let e = read("[a]\nrw read\n").unwrap_err();
        assert_eq!(e.loc.line, 2);
    }
}
