//! `iolab --help`: the commands grouped by the task each serves. clap lists
//! subcommands in one flat list; this template groups them, and a test
//! keeps the groups and the commands the same set.

/// The groups in the order they are printed: a heading, then each command
/// with what a user would do with it.
pub const GROUPS: &[(&str, &[(&str, &str)])] = &[
    (
        "Start here",
        &[(
            "survey",
            "The main numbers of the storage under a directory, in a minute",
        )],
    ),
    (
        "Measure",
        &[
            (
                "bench",
                "One measurement, or a sweep over comma-separated values (--vs fio: beside fio)",
            ),
            (
                "sys",
                "What the operating system's basic operations cost here",
            ),
            (
                "lab",
                "Experiments that reproduce published studies: lab list, lab run NAME...",
            ),
            ("report", "One self-contained HTML page from records"),
        ],
    ),
    (
        "Speak fio",
        &[(
            "fio",
            "Run fio job files or a fio command line with iolab's engines",
        )],
    ),
    (
        "Read files fast",
        &[
            (
                "cat",
                "Read whole files as fast as this machine can (to stdout or -o OUT)",
            ),
            (
                "xor",
                "XOR of a file's 4-byte words, read the fastest way (0x and 8 hex digits)",
            ),
            (
                "tune",
                "Measure how this machine reads; write the profile the adaptive reader uses",
            ),
            (
                "mixed",
                "One pass of the mixed workload (adaptive against fixed techniques)",
            ),
        ],
    ),
    (
        "What programs read",
        &[
            (
                "record",
                "Record what a program reads (under strace) as a trace",
            ),
            ("trace", "Inspect a trace (trace stats FILE)"),
            ("replay", "Replay a trace against every reading technique"),
        ],
    ),
    (
        "The course's programs",
        &[
            ("run", "run -r|-w FILE BLOCK_SIZE BLOCK_COUNT"),
            ("run2", "Double the block count until one read takes 5 s"),
            (
                "fast",
                "XOR of a whole file, the course's format (8 hex digits)",
            ),
        ],
    ),
    (
        "This command",
        &[
            (
                "completions",
                "Print the shell completion script (bash, zsh, fish, elvish, powershell)",
            ),
            ("man", "Print the manual page (iolab man | man -l -)"),
            (
                "help",
                "Print this message or the help of the given command",
            ),
        ],
    ),
];

/// The top-level help: about, usage, the grouped commands, the options.
pub fn template() -> String {
    let width = GROUPS
        .iter()
        .flat_map(|(_, cmds)| cmds.iter().map(|(name, _)| name.len()))
        .max()
        .unwrap_or(0);
    let mut t = String::from("{about-with-newline}\n{usage-heading} {usage}\n");
    for (heading, cmds) in GROUPS {
        t.push_str(&format!("\n{heading}:\n"));
        for (name, what) in *cmds {
            t.push_str(&format!("  {name:<width$}  {what}\n"));
        }
    }
    t.push_str("\nOptions:\n{options}\n\nDocumentation: README.md and docs/guide/ in the source, or `iolab man`.{after-help}");
    t
}

#[cfg(test)]
mod tests {
    use super::GROUPS;
    use clap::CommandFactory;

    #[test]
    fn every_command_is_in_exactly_one_group_and_no_group_names_a_missing_one() {
        let cmd = crate::Cli::command();
        let mut listed: Vec<&str> = GROUPS
            .iter()
            .flat_map(|(_, cmds)| cmds.iter().map(|(name, _)| *name))
            .collect();
        listed.sort_unstable();
        let before = listed.len();
        listed.dedup();
        assert_eq!(before, listed.len(), "a command is in two groups");
        let mut visible: Vec<String> = cmd
            .get_subcommands()
            .filter(|s| !s.is_hide_set())
            .map(|s| s.get_name().to_string())
            .chain(["help".to_string()])
            .collect();
        visible.sort_unstable();
        assert_eq!(listed, visible);
    }

    #[test]
    fn the_help_prints_each_group_and_command() {
        let help = crate::Cli::command().render_help().to_string();
        for (heading, cmds) in GROUPS {
            assert!(help.contains(&format!("{heading}:")), "{help}");
            for (name, _) in *cmds {
                assert!(
                    help.lines().any(|l| l.trim_start().starts_with(name)),
                    "{name}: {help}"
                );
            }
        }
        assert!(!help.contains("__waker"), "{help}");
    }
}
