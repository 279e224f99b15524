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

/// The error and its causes on one line.
pub fn one_line(e: &anyhow::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for c in e.chain() {
        let s = c.to_string();
        if !parts.iter().any(|p| p.contains(&s)) {
            parts.push(s);
        }
    }
    parts.join(": ").replace('\n', " ")
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
