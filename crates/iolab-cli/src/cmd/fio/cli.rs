//! `iolab fio`'s command line: fio's own flags (`--output-format`,
//! `--section`, `--showcmd`, `--status-interval`, ...), iolab's few
//! (`--parse-only`, `--overwrite`, `--list-options`, `--placement`,
//! `--waker`), job files, and the `--key=value` job options.

use crate::error::usage;
use crate::export::fio::{by_name, FioFormat, FIO_FORMATS};
use anyhow::Result;
use std::path::PathBuf;

/// What the command line asks for besides running the jobs.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Run the jobs.
    #[default]
    Run,
    /// Check and print the jobs, run nothing (`--parse-only`).
    ParseOnly,
    /// The job files as one fio command line (`--showcmd`).
    ShowCmd,
    /// Which of fio's options iolab runs (`--list-options`).
    ListOptions,
    /// The version (`--version`).
    Version,
}

/// The command line split into flags, job files and fio options.
#[derive(Debug, Default)]
pub struct Cli {
    pub files: Vec<PathBuf>,
    pub options: Vec<String>,
    pub action: Action,
    pub overwrite: bool,
    pub formats: Vec<&'static FioFormat>,
    pub output: Option<PathBuf>,
    /// `--section`: only these jobs of the job files.
    pub sections: Vec<String>,
    /// `--warnings-fatal`: an option accepted with a note is refused.
    pub warnings_fatal: bool,
    /// `--readonly`: a job that writes is refused.
    pub readonly: bool,
    /// `--bandwidth-log`: fio's aggregate bandwidth logs.
    pub bandwidth_log: bool,
    /// `--cmdhelp=OPTION`: what iolab does with one option.
    pub cmdhelp: Option<String>,
    /// Where jobs without `cpus_allowed` run (`--placement`).
    pub placement: iolab_bench::spec::Placement,
    /// `--waker`; None: fio's 10 ms.
    pub waker: Option<crate::waker::WakerArg>,
    /// Notes about flags that change nothing in iolab (`--eta`, ...).
    pub notes: Vec<String>,
}

/// fio's flags that iolab refuses, and why.
fn refused(flag: &str) -> Option<&'static str> {
    Some(match flag {
        "--server" | "--client" | "--daemonize" | "--remote-config" => {
            "iolab runs jobs on this machine only (no fio client/server)"
        }
        "--merge-blktrace-only" => "merging blktraces is not iolab's (`iolab trace` reads them)",
        "--crctest" | "--cpuclock-test" => {
            "iolab has no built-in self-tests of checksums or clocks"
        }
        "--idle-prof" => "iolab reports CPU use per job, not idleness profiles",
        "--inflate-log" => "iolab writes no compressed logs",
        "--trigger-file" | "--trigger-timeout" | "--trigger" | "--trigger-remote" => {
            "iolab runs no trigger commands"
        }
        _ => return None,
    })
}

/// fio's flags that change nothing iolab does: a note each.
fn noted(flag: &str) -> Option<&'static str> {
    Some(match flag {
        "--eta" | "--eta-newline" | "--eta-interval" => "iolab shows no progress while it measures",
        "--status-interval" => "iolab prints its output once, when the jobs end",
        "--debug" => "iolab has no debug log; --parse-only prints how each job was read",
        "--alloc-size" | "--max-jobs" | "--aux-path" => "iolab needs no fixed pools or state paths",
        _ => return None,
    })
}

/// Splits the command line.
pub fn split(args: &[std::ffi::OsString]) -> Result<Cli> {
    let args = utf8(args)?;
    let mut c = Cli::default();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let (k, v) = match a.split_once('=') {
            Some((k, v)) => (k, Some(v.to_string())),
            None => (a.as_str(), None),
        };
        let mut value = |flag: &str| -> Result<String> {
            match &v {
                Some(v) => Ok(v.clone()),
                None => it
                    .next()
                    .cloned()
                    .ok_or_else(|| usage(format!("{flag} needs a value ({flag}=...)"))),
            }
        };
        if !flag(&mut c, k, &mut value)? {
            if k.starts_with("--") {
                c.options.push(a.clone());
            } else {
                c.files.push(PathBuf::from(a));
            }
        }
    }
    if c.formats.iter().any(|f| f.name == "json") && c.formats.iter().any(|f| f.name == "json+") {
        c.formats.retain(|f| f.name != "json");
    }
    if c.formats.is_empty() {
        c.formats.extend(by_name("normal"));
    }
    Ok(c)
}

/// fio's job files and options are text: a name that is not UTF-8 is
/// refused here, naming it.
fn utf8(args: &[std::ffi::OsString]) -> Result<Vec<String>> {
    args.iter()
        .map(|a| {
            a.to_str().map(str::to_string).ok_or_else(|| {
                usage(format!(
                    "job file or option {}: not valid UTF-8 (give fio job files and options as text)",
                    a.to_string_lossy()
                ))
            })
        })
        .collect()
}

/// Takes one flag of iolab's or fio's into `c`; false when `k` is not a
/// flag (a job option or a job file).
fn flag(c: &mut Cli, k: &str, value: &mut dyn FnMut(&str) -> Result<String>) -> Result<bool> {
    match k {
        "--parse-only" => c.action = Action::ParseOnly,
        "--showcmd" => c.action = Action::ShowCmd,
        "--list-options" => c.action = Action::ListOptions,
        "--version" => c.action = Action::Version,
        "--lenient" => {}
        "--overwrite" => c.overwrite = true,
        "--readonly" => c.readonly = true,
        "--warnings-fatal" => c.warnings_fatal = true,
        "--bandwidth-log" => c.bandwidth_log = true,
        "--minimal" => c.formats.extend(by_name("terse")),
        "--output-format" => {
            for f in value("--output-format")?.split(',') {
                let Some(format) = by_name(f.trim()) else {
                    let names: Vec<&str> = FIO_FORMATS.iter().map(|f| f.name).collect();
                    return Err(usage(format!(
                        "--output-format={f}: one of {}",
                        names.join(", ")
                    )));
                };
                c.formats.push(format);
            }
        }
        "--terse-version" => {
            let v = value("--terse-version")?;
            if v.trim() != "3" {
                return Err(usage(format!(
                    "--terse-version={v}: iolab writes fio's terse version 3 (its default)"
                )));
            }
        }
        "--output" => c.output = Some(PathBuf::from(value("--output")?)),
        "--section" => c.sections.push(value("--section")?),
        "--cmdhelp" => c.cmdhelp = Some(value("--cmdhelp")?),
        "--placement" => {
            c.placement = value("--placement")?
                .parse()
                .map_err(|e| usage(format!("--placement: {e}")))?
        }
        "--waker" => {
            c.waker = Some(
                crate::waker::parse_arg(&value("--waker")?)
                    .map_err(|e| usage(format!("--waker: {e}")))?,
            )
        }
        k if refused(k).is_some() => {
            return Err(usage(format!("{k}: {}", refused(k).unwrap_or_default())))
        }
        k if noted(k).is_some() => {
            c.notes
                .push(format!("{k}: {}", noted(k).unwrap_or_default()));
        }
        _ => return Ok(false),
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<std::ffi::OsString> {
        v.iter().map(std::ffi::OsString::from).collect()
    }

    #[test]
    fn command_line_splits_into_flags_files_and_options() {
        let c = split(&s(&[
            "--output-format=json+",
            "a.fio",
            "--name=x",
            "--bs=4k",
            "--output",
            "o.json",
            "--lenient",
            "--eta=never",
            "--section",
            "x",
            "--status-interval=1",
            "--debug=io",
        ]))
        .unwrap();
        assert_eq!(c.formats, vec![by_name("json+").unwrap()]);
        assert_eq!(c.files, vec![PathBuf::from("a.fio")]);
        assert_eq!(c.options, vec!["--name=x", "--bs=4k"]);
        assert_eq!(c.output, Some(PathBuf::from("o.json")));
        assert_eq!(c.sections, vec!["x"]);
        assert_eq!(c.notes.len(), 3, "{:?}", c.notes);
        assert_eq!(c.action, Action::Run);
        assert!(split(&s(&["--output-format=xml"])).is_err());
        assert!(split(&s(&["--terse-version=5"]))
            .unwrap_err()
            .to_string()
            .contains("version 3"));
        assert!(split(&s(&["--client=h"]))
            .unwrap_err()
            .to_string()
            .contains("this machine"));
        assert_eq!(split(&s(&["--showcmd"])).unwrap().action, Action::ShowCmd);
        assert_eq!(
            split(&s(&[])).unwrap().formats,
            vec![by_name("normal").unwrap()]
        );
    }
}
