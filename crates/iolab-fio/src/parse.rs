//! The job-file language and fio's command-line form, read into jobs of raw
//! `key[=value]` options that remember where each came from.
//!
//! Job files: `[section]` headers, `key=value` or bare `key` lines, comments
//! from `;` or `#` at the start of a line, `include FILE` (relative to the
//! including file), `$VAR`/`${VAR}` from the environment and fio's
//! built-ins `$ncpus`, `$pagesize`, `$mb_memory`. A job inherits the
//! `[global]` options written before it. The command-line form is the same
//! language: options before the first `--name` are global, each `--name`
//! starts a job.

use super::{FioJobError, Loc};
use std::path::{Path, PathBuf};

/// One option as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawOpt {
    /// Name as written (lower case, trimmed).
    pub key: String,
    /// Value after `=`, variables expanded; `None` for a bare `key`.
    pub value: Option<String>,
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

/// Names fio itself fills in per job or file at run time (left as written).
const RUNTIME_VARS: [&str; 4] = ["jobname", "jobnum", "filenum", "clientuid"];

/// Expands `$VAR`, `${VAR}` and fio's built-ins in one value.
pub fn expand(text: &str, loc: &Loc) -> Result<String, FioJobError> {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let (name, len) = if let Some(b) = after.strip_prefix('{') {
            let end = b
                .find('}')
                .ok_or_else(|| loc.err(format!("'${{' without a closing '}}' in '{text}'")))?;
            (&b[..end], end + 2)
        } else if after.starts_with('(') {
            return Err(loc.err(format!(
                "'$(...)' arithmetic in '{text}' is not supported by iolab; write the number"
            )));
        } else {
            let end = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            (&after[..end], end)
        };
        if name.is_empty() {
            out.push('$');
            rest = &after[len.min(after.len())..];
            continue;
        }
        if RUNTIME_VARS.contains(&name) {
            out.push('$');
            out.push_str(&after[..len]);
        } else if let Some(v) = builtin(name) {
            out.push_str(&v);
        } else if let Ok(v) = std::env::var(name) {
            out.push_str(&v);
        } else {
            return Err(loc.err(format!(
                "${name}: no such environment variable (set it, or write the value)"
            )));
        }
        rest = &after[len..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Splits `key=value` / `key` into a raw option.
fn option(text: &str, loc: Loc) -> Result<RawOpt, FioJobError> {
    let (k, v) = match text.split_once('=') {
        Some((k, v)) => (k.trim(), Some(expand(v.trim(), &loc)?)),
        None => (text.trim(), None),
    };
    if k.is_empty() || k.contains(char::is_whitespace) {
        return Err(loc.err(format!(
            "'{text}' is not an option (write key=value, or a bare key)"
        )));
    }
    Ok(RawOpt {
        key: k.to_ascii_lowercase(),
        value: v,
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
            let line = raw.trim();
            if line.is_empty() || line.starts_with(';') || line.starts_with('#') {
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
                    let inc = expand(inc.trim(), &loc)?;
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
    fn variables_expand_from_the_environment_and_builtins() {
        std::env::set_var("IOLAB_TEST_BS", "64k");
        let jobs = read("[j]\nbs=${IOLAB_TEST_BS}\nsize=$IOLAB_TEST_BS\nnumjobs=$ncpus\niodepth=${pagesize}\nfilename_format=$jobname.$jobnum\n").unwrap();
        let v = kv(&jobs[0]);
        assert_eq!(v[0].1.as_deref(), Some("64k"));
        assert_eq!(v[1].1.as_deref(), Some("64k"));
        let n: usize = v[2].1.as_deref().unwrap().parse().unwrap();
        assert!(n >= 1);
        assert_eq!(
            v[3].1.as_deref(),
            Some(iolab::usage::page_size().to_string().as_str())
        );
        assert_eq!(v[4].1.as_deref(), Some("$jobname.$jobnum"));
        let e = read("[j]\n\nbs=${IOLAB_SURELY_UNSET_VAR}\n").unwrap_err();
        assert_eq!(e.loc.line, 3);
        assert!(e.msg.contains("IOLAB_SURELY_UNSET_VAR"), "{e}");
        let e = read("[j]\nsize=$(1+2)\n").unwrap_err();
        assert!(e.to_string().starts_with("t.fio:2: "), "{e}");
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
