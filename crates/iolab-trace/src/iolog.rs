//! fio's `read_iolog` trace format, versions 2 and 3.
//!
//! Version 2: a first line `fio version 2 iolog`, then `FILE ACTION` (add,
//! open, close) or `FILE ACTION OFFSET LENGTH` (read, write, sync,
//! datasync, trim, wait; `wait` waits OFFSET microseconds). Version 3
//! prefixes every line with a timestamp in microseconds since the start
//! (what fio 3.33 writes) and has no `wait`. Only reads are taken; every
//! other action is checked and then left out (counted as skipped).

use super::{num, Trace, TraceBuilder, TraceError, TraceFormat, TraceOp};

/// Parses a v2 or v3 iolog.
pub fn parse(text: &str, name: &str) -> Result<Trace, TraceError> {
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let (_, first) = lines
        .next()
        .ok_or_else(|| TraceError::at(name, 1, "empty file; expected 'fio version 2 iolog'"))?;
    let first = first.trim_start_matches('\u{feff}').trim();
    let v3 = match first {
        "fio version 2 iolog" => false,
        "fio version 3 iolog" => true,
        _ => {
            return Err(TraceError::at(
                name,
                1,
                format!(
                "'{first}': the first line must be 'fio version 2 iolog' or 'fio version 3 iolog'"
            ),
            ))
        }
    };
    let mut st = Iolog {
        name,
        v3,
        b: TraceBuilder::new(TraceFormat::Iolog),
        clock_us: 0,
        added: Default::default(),
        open: Default::default(),
    };
    for (i, line) in lines {
        st.line(i + 1, line)?;
    }
    Ok(st.b.finish())
}

/// What parsing an iolog keeps between lines.
struct Iolog<'a> {
    /// The file's name, for errors.
    name: &'a str,
    /// Version 3 (a timestamp starts each line) rather than 2.
    v3: bool,
    b: TraceBuilder,
    /// v2: time advanced by `wait`, µs.
    clock_us: u64,
    /// Files added, and those open now.
    added: std::collections::HashSet<String>,
    open: std::collections::HashSet<String>,
}

impl Iolog<'_> {
    /// One line, numbered `n`.
    fn line(&mut self, n: usize, line: &str) -> Result<(), TraceError> {
        let name = self.name;
        let mut f: Vec<&str> = line.split_whitespace().collect();
        let t_us = if self.v3 {
            let ts = f.first().copied().unwrap_or("");
            let t = num(ts).ok_or_else(|| {
                TraceError::at(
                    name,
                    n,
                    format!("'{ts}': a version 3 line starts with a timestamp (µs)"),
                )
            })?;
            f.remove(0);
            Some(t)
        } else {
            None
        };
        let (file, action) = match f.as_slice() {
            [file, action, ..] => (*file, *action),
            _ => {
                return Err(TraceError::at(
                    name,
                    n,
                    format!("'{}': expected FILE ACTION [OFFSET LENGTH]", line.trim()),
                ))
            }
        };
        self.act(n, file, action, &f[2..], t_us)
    }

    // Long on purpose: one flat match over fio's iolog actions, each arm
    // that action's rule as fio documents it; split, the table would be lost.
    /// Line `n`'s `action` on `file` with its numbers `args` (`t_us`: its
    /// version 3 timestamp).
    fn act(
        &mut self,
        n: usize,
        file: &str,
        action: &str,
        args: &[&str],
        t_us: Option<u64>,
    ) -> Result<(), TraceError> {
        let name = self.name;
        let want = |k: usize| -> Result<(), TraceError> {
            if args.len() != k {
                Err(TraceError::at(
                    name,
                    n,
                    format!(
                        "{action} takes {k} number(s) after the file name, found {}",
                        args.len()
                    ),
                ))
            } else {
                Ok(())
            }
        };
        let arg = |k: usize| -> Result<u64, TraceError> {
            num(args[k]).ok_or_else(|| {
                TraceError::at(
                    name,
                    n,
                    format!("'{}' is not a non-negative integer", args[k]),
                )
            })
        };
        match action {
            "add" => {
                want(0)?;
                self.added.insert(file.to_string());
            }
            "open" | "close" => {
                want(0)?;
                if !self.added.contains(file) {
                    return Err(TraceError::at(
                        name,
                        n,
                        format!("{action} of {file}, which was never added"),
                    ));
                }
                if action == "open" {
                    self.open.insert(file.to_string());
                } else {
                    self.open.remove(file);
                }
            }
            "wait" if self.v3 => {
                return Err(TraceError::at(name, n, "version 3 iologs have no 'wait' action (timestamps replace it)"))
            }
            "wait" => {
                want(2)?;
                self.clock_us += arg(0)?;
            }
            "read" | "write" | "trim" | "sync" | "datasync" => {
                want(2)?;
                let (off, len) = (arg(0)?, arg(1)?);
                if !self.open.contains(file) {
                    return Err(TraceError::at(
                        name,
                        n,
                        format!("{action} of {file}, which is not open (add and open it first)"),
                    ));
                }
                if action == "read" {
                    let t = t_us.unwrap_or(self.clock_us);
                    self.b.read(file, off, len, TraceOp::Block, 0, Some(t * 1000));
                } else {
                    self.b.skip(action);
                }
            }
            _ => {
                return Err(TraceError::at(
                    name,
                    n,
                    format!("unknown action '{action}'; expected add, open, close, read, write, sync, datasync, trim{}", if self.v3 { "" } else { " or wait" }),
                ))
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v2_every_action() {
        let t = parse(
            "fio version 2 iolog\n/f add\n/f open\n/f read 0 4096\n/f wait 500 0\n/f write 4096 4096\n/f sync 0 0\n/f datasync 0 0\n/f trim 0 4096\n/f read 8192 512\n/f close\n",
            "x",
        )
        .unwrap();
        assert_eq!(t.reads.len(), 2);
        assert_eq!((t.reads[1].offset, t.reads[1].len), (8192, 512));
        assert_eq!(t.reads[0].t_ns, Some(0));
        assert_eq!(t.reads[1].t_ns, Some(500_000));
        assert_eq!(t.skipped.get("write"), Some(&1));
        assert_eq!(t.skipped.get("trim"), Some(&1));
    }

    #[test]
    fn v3_timestamps_are_microseconds() {
        let t = parse(
            "fio version 3 iolog\n18 f add\n217 f open\n222 f read 61440 4096\n20600 f read 774144 4096\n20700 f write 0 1\n1019012 f close\n",
            "x",
        )
        .unwrap();
        assert_eq!(t.files, vec!["f".to_string()]);
        assert_eq!(t.reads[1].t_ns, Some(20_600_000));
        assert_eq!(t.reads[0].offset, 61440);
    }

    #[test]
    fn malformed_lines_are_reported_with_their_number() {
        let e = parse(
            "fio version 2 iolog\n/f add\n/f open\n/f read x 1\n",
            "l.log",
        )
        .unwrap_err();
        assert!(e.to_string().starts_with("l.log:4:"), "{e}");
        let e = parse("fio version 2 iolog\n/f read 0 1\n", "l.log").unwrap_err();
        assert!(e.to_string().starts_with("l.log:2:"), "{e}");
        let e = parse("fio version 3 iolog\n1 /f add\n2 /f wait 1 0\n", "l.log").unwrap_err();
        assert!(e.to_string().starts_with("l.log:3:"), "{e}");
        let e = parse(
            "fio version 2 iolog\n/f add\n/f open\n/f fly 0 1\n",
            "l.log",
        )
        .unwrap_err();
        assert!(e.to_string().contains("unknown action"), "{e}");
        let e = parse("fio version 4 iolog\n", "l.log").unwrap_err();
        assert!(e.to_string().starts_with("l.log:1:"), "{e}");
    }
}
