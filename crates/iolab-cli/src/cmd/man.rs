//! `iolab man`: the manual page, in roff, generated from the command-line
//! definitions (clap_mangen): the top-level synopsis and options, then a
//! section per command with its synopsis and options, then exit status,
//! environment and where the rest of the documentation is.

use anyhow::Result;
use clap_mangen::roff::{bold, roman, Roff};
use clap_mangen::Man;
use std::io::Write;

/// Arguments of `iolab man` (none: the page goes to stdout).
#[derive(clap::Args, Debug)]
pub struct ManArgs {}

/// Prints the page on stdout; `cmd` is iolab's whole command line.
pub fn run(_a: &ManArgs, cmd: clap::Command) -> Result<i32> {
    crate::export::stdout(&String::from_utf8(page(cmd)?)?)?;
    Ok(0)
}

/// The whole page.
pub fn page(cmd: clap::Command) -> Result<Vec<u8>> {
    // The package's description names the binary in Markdown; a manual
    // page's NAME line is plain.
    let mut cmd = cmd.about("measure, compare and explain file I/O on this machine");
    cmd.build();
    let mut out = Vec::new();
    let top = Man::new(cmd.clone());
    top.render_title(&mut out)?;
    top.render_name_section(&mut out)?;
    top.render_synopsis_section(&mut out)?;
    top.render_options_section(&mut out)?;
    commands_section(&cmd).to_writer(&mut out)?;
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        command_section(&mut out, sub)?;
    }
    closing_sections().to_writer(&mut out)?;
    top.render_version_section(&mut out)?;
    Ok(out)
}

/// One command's section: `.SH IOLAB BENCH`, what it does, and its
/// synopsis, options and subcommands as subsections.
fn command_section(out: &mut Vec<u8>, sub: &clap::Command) -> Result<()> {
    let name = format!("iolab {}", sub.get_name());
    let man = Man::new(sub.clone().bin_name(name.clone()));
    let mut part = Vec::new();
    man.render_description_section(&mut part)?;
    man.render_synopsis_section(&mut part)?;
    if sub.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(&mut part)?;
    }
    if sub.has_subcommands() {
        man.render_subcommands_section(&mut part)?;
    }
    writeln!(out, ".SH \"{}\"", name.to_uppercase())?;
    // Its sections become subsections of the command's; its own
    // DESCRIPTION heading is dropped (the text stays).
    for line in String::from_utf8(part)?.lines() {
        match line.strip_prefix(".SH ") {
            Some(h) if h.trim_matches('"') == "DESCRIPTION" => {}
            Some(h) => writeln!(out, ".SS {h}")?,
            None => writeln!(out, "{line}")?,
        }
    }
    Ok(())
}

/// COMMANDS: each command with its one line, by the name its section
/// below has (clap_mangen's list names a page per command, iolab-bench(1),
/// which this one page does not install).
fn commands_section(cmd: &clap::Command) -> Roff {
    let mut r = Roff::new();
    r.control("SH", ["COMMANDS"]);
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let about = sub.get_about().map(|a| a.to_string()).unwrap_or_default();
        r.control("TP", [])
            .text([bold(format!("iolab {}", sub.get_name()))])
            .text([roman(about)]);
    }
    r
}

/// EXIT STATUS, ENVIRONMENT and SEE ALSO.
fn closing_sections() -> Roff {
    let mut r = Roff::new();
    r.control("SH", ["EXIT STATUS"]);
    for (code, what) in [
        ("0", "success"),
        ("1", "a run failed (an I/O error, a verify mismatch, a stalled op, named with file and offset); what was measured is printed and written first"),
        ("2", "bad input: one line on stderr names the flag and what would be right; nothing was measured or written"),
        ("130, 143", "stopped by SIGINT or SIGTERM, after printing and writing what was measured and removing temporary files"),
    ] {
        r.control("TP", []).text([bold(code)]).text([roman(what)]);
    }
    r.control("SH", ["ENVIRONMENT"]);
    for (var, what) in [
        ("IOLAB_PROFILE", "the profile the adaptive reader uses and iolab tune writes (default $XDG_CONFIG_HOME/iolab/profile.json)"),
        ("IOLAB_TRACE_POLICY", "1: log each decision of the adaptive reader, and why, on stderr"),
        ("IOLAB_FORCE_PREAD", "1: whole-file reads use plain preads instead of io_uring"),
        ("IOLAB_NO_SIBLINGS", "1: the adaptive reader does not read a directory's next files ahead"),
        ("IOLAB_LAB_TRACE", "a trace for the lab's replay experiment to replay too"),
    ] {
        r.control("TP", []).text([bold(var)]).text([roman(what)]);
    }
    r.control("SH", ["SEE ALSO"]);
    r.text([roman(
        "fio(1). In the source: README.md, docs/guide/ (one page per command), docs/methodology.md (what each figure is), docs/studies.md (what the lab reproduces).",
    )]);
    r
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn the_page_has_a_section_per_command_and_every_flag_of_bench() {
        let page = String::from_utf8(super::page(crate::Cli::command()).unwrap()).unwrap();
        for c in ["SURVEY", "BENCH", "FIO", "LAB", "COMPLETIONS", "MAN"] {
            assert!(page.contains(&format!(".SH \"IOLAB {c}\"")), "{c}");
        }
        for flag in ["vs", "sqpoll-wait", "placement", "waker", "jsonl"] {
            // roff writes every hyphen of an option as `\-`.
            let roff = format!("\\-\\-{}", flag.replace('-', "\\-"));
            assert!(page.contains(&roff), "--{flag} missing");
        }
        assert!(page.contains(".SH \"EXIT STATUS\"") || page.contains(".SH EXIT STATUS"));
        assert!(!page.contains("__waker"));
        assert!(page.contains(".SH COMMANDS"), "the list of commands");
        assert!(
            !page.contains("iolab\\-bench(1)"),
            "no page per command is named"
        );
    }
}
