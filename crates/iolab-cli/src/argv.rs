//! Parsing the command line into the binary's `Cli` (any clap parser: the
//! caller names it, so this file needs nothing from `main.rs`), with bad input reported on
//! one line that names the flag: clap's own first line, except for a
//! negative number, which clap takes for an unknown flag (`-1`) and
//! reports without the flag it was given to.

use std::ffi::OsString;

/// Parses `args` (the program name first).
pub fn parse_from<C, I, T>(args: I) -> Result<C, String>
where
    C: clap::Parser,
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    let res = C::command()
        .try_get_matches_from(&args)
        .and_then(|m| C::from_arg_matches(&m));
    res.map_err(|e| {
        if e.kind() == clap::error::ErrorKind::UnknownArgument {
            if let Some(line) = negative_value(&args) {
                return line;
            }
        }
        crate::error::clean(&one_line(&e))
    })
}

/// Whether clap's error is one to let clap print itself (help, version).
pub fn is_display(e: &clap::Error) -> bool {
    use clap::error::ErrorKind::*;
    matches!(
        e.kind(),
        DisplayHelp | DisplayVersion | DisplayHelpOnMissingArgumentOrSubcommand
    )
}

/// Clap's first line (it names the flag and the problem), with the values
/// the flag takes where clap lists them on a line of their own.
fn one_line(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let first = lines.next().unwrap_or("error: bad arguments").to_string();
    let rest: Vec<&str> = lines.map(str::trim).collect();
    // "the following required arguments were not provided:" names them on
    // the next lines: bring the first of them up.
    if let Some(next) = rest.first().filter(|_| first.ends_with(':')) {
        return format!("{first} {next}");
    }
    match rest.iter().find(|l| l.starts_with("[possible values:")) {
        Some(values) => format!("{first} {values}"),
        None => first,
    }
}

/// `--flag -N...`: a negative number given to a flag that takes a value.
fn negative_value(args: &[OsString]) -> Option<String> {
    for w in args.windows(2) {
        let (flag, val) = (w[0].to_str()?, w[1].to_str()?);
        let mut c = val.chars();
        let negative =
            c.next() == Some('-') && c.next().is_some_and(|d| d.is_ascii_digit() || d == '.');
        if flag.starts_with("--") && !flag.contains('=') && negative {
            return Some(crate::error::clean(&format!(
                "error: {flag} {val}: negative values are not accepted (e.g. {flag} {})",
                &val[1..]
            )));
        }
    }
    None
}
