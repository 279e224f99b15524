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
