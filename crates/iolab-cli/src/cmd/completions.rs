//! `iolab completions SHELL`: the completion script for SHELL, generated
//! from the command-line definitions (clap_complete), so it always matches
//! the binary it came from.

use anyhow::Result;
use clap_complete::Shell;

/// Arguments of `iolab completions`.
#[derive(clap::Args, Debug)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell.
    #[arg(value_enum)]
    pub shell: Shell,
}

/// Prints the script on stdout; `cmd` is iolab's whole command line.
pub fn run(a: &CompletionsArgs, mut cmd: clap::Command) -> Result<i32> {
    let mut script = Vec::new();
    clap_complete::generate(a.shell, &mut cmd, "iolab", &mut script);
    crate::export::stdout(&String::from_utf8(script)?)?;
    Ok(0)
}
