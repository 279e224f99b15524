//! The binary's own error kinds. Lower modules (output, parse) use these, and
//! the commands re-export them, so no module reaches up into `cmd`.

/// Bad input found by the command line itself (exit status 2).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// Shorthand for a usage error as an `anyhow::Error`.
pub fn usage(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(UsageError(msg.into()))
}

/// The error and its causes on one line, fit for a terminal (see [`clean`]).
pub fn one_line(e: &anyhow::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for c in e.chain() {
        let s = c.to_string();
        if !parts.iter().any(|p| p.contains(&s)) {
            parts.push(s);
        }
    }
    clean(&parts.join(": ").replace('\n', " "))
}

/// The longest run of non-blank characters a message quotes whole (a
/// value, a path, a field of a file); longer ones are cut to their start.
const QUOTE_MAX: usize = 80;
/// The longest message line: the start and end of a longer one are kept.
const LINE_MAX: usize = 900;

/// A message as it may reach a terminal: control characters (escape
/// sequences, carriage returns, bytes of a binary file) written as `\x1b`,
/// `\r`..., each run of more than [`QUOTE_MAX`] non-blank characters cut
/// to its start with its length said, and the line cut to [`LINE_MAX`]
/// bytes. What the user gave is quoted, never replayed.
pub fn clean(msg: &str) -> String {
    let mut out = String::with_capacity(msg.len().min(LINE_MAX + 64));
    for (i, word) in msg.split(' ').enumerate() {
        if i > 0 {
            out.push(' ');
        }
        let escaped: String = word
            .chars()
            .map(|c| {
                if c.is_control() || ('\u{202a}'..='\u{202e}').contains(&c) {
                    c.escape_default().to_string()
                } else {
                    c.to_string()
                }
            })
            .collect();
        if escaped.chars().count() > QUOTE_MAX {
            let head: String = escaped.chars().take(QUOTE_MAX - 20).collect();
            out.push_str(&format!("{head}...({} bytes)", word.len()));
        } else {
            out.push_str(&escaped);
        }
        if out.len() > 4 * LINE_MAX {
            break;
        }
    }
    if out.len() > LINE_MAX {
        let head = floor(&out, LINE_MAX - 200);
        let tail = &out[ceil(&out, out.len() - 150)..];
        return format!("{} ... {tail}", &out[..head]);
    }
    out
}

/// The largest char boundary of `s` at or below `i`.
fn floor(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// The smallest char boundary of `s` at or above `i`.
fn ceil(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// Maps an error to the exit status.
pub fn exit_code(e: &anyhow::Error) -> i32 {
    for c in e.chain() {
        if let Some(b) = c.downcast_ref::<iolab_bench::BenchError>() {
            return b.exit_code();
        }
        if let Some(u) = c.downcast_ref::<UsageError>() {
            let _ = u;
            return 2;
        }
        if let Some(i) = c.downcast_ref::<iolab::Error>() {
            return iolab_bench::BenchError::exit_code_of(i);
        }
        if let Some(io) = c.downcast_ref::<std::io::Error>() {
            match io.kind() {
                std::io::ErrorKind::BrokenPipe => return 0,
                // A file this user may not read or write is bad input, as
                // the library's errors say too: name another file.
                std::io::ErrorKind::PermissionDenied => return 2,
                _ => {}
            }
        }
    }
    1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_quote_input_short_and_escaped() {
        let m = clean("trace t:3: '\x1b[31mred\x1b]0;title\x07' is not a number");
        assert!(!m.contains('\x1b') && !m.contains('\x07'), "{m}");
        assert!(m.contains("\\u{1b}[31mred"), "{m}");
        let long = "A".repeat(50 << 20);
        let m = clean(&format!("field '{long}' is bad"));
        assert!(m.len() < 200, "{}", m.len());
        assert!(m.contains(&format!("({} bytes)", long.len() + 2)), "{m}");
        assert!(m.ends_with("is bad"), "{m}");
        let spaced = "word ".repeat(1 << 20);
        let m = clean(&spaced);
        assert!(m.len() <= LINE_MAX, "{}", m.len());
        let m = clean(&"é".repeat(2000));
        assert!(m.len() < 200, "{m}");
    }
}
