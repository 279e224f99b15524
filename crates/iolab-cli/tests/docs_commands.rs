//! Every `$ iolab ...` example in README.md and docs/guide/*.md runs, and
//! does what its page shows: it exits as documented (0, or the status
//! written after it as `# exit status N`) and prints the headers shown
//! under it. A flag renamed or dropped makes its example fail here.
//!
//! Each page's examples run in order in one folder of their own (with
//! `examples/` of the repository beside them), as a reader typing them
//! would: a file one example makes, the next may read. They run at the
//! smallest scale: sizes, times, pairs and lab scales are shrunk
//! (`small`). Figures differ from run to run, so the output is not
//! compared literally: the first word of the first line must match (or,
//! when it is a figure, be a figure too), and every line shown that holds
//! no figure, has at least three words and is not a sentence (table
//! headers, lists, fixed notes) must be printed as shown.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// One `$ iolab ...` line of a page, with what the page shows under it.
#[derive(Debug)]
struct Example {
    /// Where it is (`README.md:42`).
    at: String,
    /// The command as written, without the `$ ` and any `# ...` comment.
    command: String,
    /// The exit status the page documents (0 unless it says otherwise).
    status: i32,
    /// The lines shown under it, up to the next command or the block's end.
    shown: Vec<String>,
}

/// The examples of a Markdown page: `$ iolab` lines inside fenced blocks.
fn examples(page: &Path) -> Vec<Example> {
    let text = std::fs::read_to_string(page).unwrap();
    let name = page
        .strip_prefix(root())
        .unwrap_or(page)
        .display()
        .to_string();
    let mut out: Vec<Example> = Vec::new();
    let mut fenced = false;
    let mut current: Option<usize> = None;
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            current = None;
            continue;
        }
        if !fenced {
            continue;
        }
        if let Some(cmd) = line.strip_prefix("$ ") {
            current = None;
            if !cmd.starts_with("iolab ") {
                continue;
            }
            let (command, comment) = match cmd.split_once("  #") {
                Some((c, k)) => (c.trim_end(), k.trim()),
                None => (cmd.trim_end(), ""),
            };
            let status = comment
                .strip_prefix("exit status ")
                .map(|s| s.trim().parse().expect("a number after 'exit status'"))
                .unwrap_or(0);
            out.push(Example {
                at: format!("{name}:{}", i + 1),
                command: command.to_string(),
                status,
                shown: Vec::new(),
            });
            current = Some(out.len() - 1);
        } else if let Some(k) = current {
            out[k].shown.push(line.to_string());
        }
    }
    out
}

/// The command at the smallest scale that still runs every code path it
/// names: files of 4 MiB, runs of 100 ms, one pair, smoke-scale
/// experiments, one repeat where the command repeats by default.
fn small(command: &str) -> String {
    let mut w: Vec<String> = command.split(' ').map(str::to_string).collect();
    let sub = w.get(1).cloned().unwrap_or_default();
    let value_of = |flag: &str| -> Option<&str> {
        match flag {
            "--size" | "--region" => Some("4m"),
            "--time" | "--ramp" | "--interval" => Some("100ms"),
            "--pairs" => Some("1"),
            "--scale" => Some("smoke"),
            _ => None,
        }
    };
    let mut i = 0;
    while i < w.len() {
        if let Some(v) = value_of(&w[i]) {
            if i + 1 < w.len() {
                w[i + 1] = v.to_string();
            }
            i += 2;
            continue;
        }
        // fio's --key=value form.
        for (key, v) in [("--size=", "4m"), ("--runtime=", "100ms")] {
            if w[i].starts_with(key) {
                w[i] = format!("{key}{v}");
            }
        }
        i += 1;
    }
    let has = |w: &[String], f: &str| w.iter().any(|x| x == f);
    match sub.as_str() {
        "survey" => {
            for (f, v) in [("--size", "16m"), ("--time", "50ms")] {
                if !has(&w, f) {
                    w.extend([f.to_string(), v.to_string()]);
                }
            }
        }
        "bench" if has(&w, "--vs") && !has(&w, "--pairs") => {
            w.extend(["--pairs".to_string(), "1".to_string()]);
        }
        "lab" if w.get(2).is_some_and(|x| x == "run") && !has(&w, "--scale") => {
            w.extend(["--scale".to_string(), "smoke".to_string()]);
        }
        "replay" | "sys" if !has(&w, "--repeat") && w.get(2).is_none_or(|x| x != "list") => {
            w.extend(["--repeat".to_string(), "1".to_string()]);
        }
        _ => {}
    }
    w.join(" ")
}

/// What a command needs beyond iolab, if anything this machine lacks.
fn lacking(command: &str) -> Option<&'static str> {
    let needs: [(&str, &str, &'static str); 3] = [
        ("--vs fio", "fio", "fio is not installed"),
        ("iolab record", "strace", "strace is not installed"),
        ("python3", "python3", "python3 is not installed"),
    ];
    needs
        .iter()
        .find(|(word, tool, _)| command.contains(word) && !common::has(tool))
        .map(|(_, _, why)| *why)
}

/// Whether an example reads into GPU memory.
fn needs_gpu(command: &str) -> bool {
    command.contains("--gpu") || command.contains("--mem cuda")
}

/// Whether this machine has an NVIDIA GPU with its driver.
fn has_gpu() -> bool {
    Path::new("/dev/nvidiactl").exists()
}

/// Runs `command` with bash in `dir`, the `iolab` under test first on PATH.
fn run(command: &str, dir: &Path) -> Output {
    let bin = Path::new(env!("CARGO_BIN_EXE_iolab")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    Command::new("bash")
        .args(["-o", "pipefail", "-c", command])
        .env("PATH", path)
        .env_remove("IOLAB_PROFILE")
        // No profile, as on a machine where `iolab tune` never ran.
        .env("XDG_CONFIG_HOME", dir)
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run bash")
}

fn words(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

/// A word that is a figure: it starts with a digit once leading brackets
/// and signs are set aside (`4`, `0x1af4`, `(3.2`, `+11.9`; not `p99`), or
/// it sets a key to one (`min=128,`, `--size=256m`: the test shrinks those).
fn figure(word: &str) -> bool {
    let digit = |w: &str| w.starts_with(|c: char| c.is_ascii_digit());
    digit(word.trim_start_matches(|c: char| "([{<'\"+-~".contains(c)))
        || word.split('=').skip(1).any(digit)
}

/// Whether a shown line must be printed as it is: no figure in it, at least
/// three words, not a sentence (results are told in sentences), not a
/// warning or note (those depend on the machine), not an ellipsis.
fn fixed(line: &str) -> bool {
    let w = words(line);
    w.len() >= 3
        && !w.iter().any(|x| figure(x))
        && !line.trim_end().ends_with('.')
        && !matches!(w[0], "warning:" | "note:" | "...")
        && !line.contains('…')
}

/// Whether what `ex` printed has the headers its page shows; the reason if not.
fn headers_differ(ex: &Example, o: &Output) -> Option<String> {
    let out = format!("{}{}", common::stdout(o), common::stderr(o));
    let first = |t: &str| t.lines().find(|l| !l.trim().is_empty()).map(str::to_string);
    let shown_first = first(&ex.shown.join("\n"))?;
    let real_first = first(&common::stdout(o))
        .or_else(|| first(&out))
        .unwrap_or_default();
    let a0 = words(&shown_first).first().copied().unwrap_or("");
    let b0 = words(&real_first).first().copied().unwrap_or("");
    if (figure(a0) && !figure(b0)) || (!figure(a0) && a0 != b0) {
        return Some(format!("first line starts {b0:?}, the page shows {a0:?}"));
    }
    let printed: Vec<Vec<&str>> = out.lines().map(words).collect();
    ex.shown
        .iter()
        .find(|l| fixed(l) && !printed.contains(&words(l)))
        .map(|l| format!("the page shows {l:?}, which it did not print"))
}

/// Runs every example of `page` (relative to the repository).
fn check_page(page: &str) {
    let path = root().join(page);
    let all = examples(&path);
    assert!(!all.is_empty(), "{page}: no `$ iolab` example found");
    // On the build's own storage: /tmp may be tmpfs, which has no O_DIRECT
    // and no device to report.
    let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    std::os::unix::fs::symlink(root().join("examples"), d.path().join("examples")).unwrap();
    let mut failures = Vec::new();
    for ex in &all {
        if let Some(why) = lacking(&ex.command) {
            iolab::testing::unmet(&format!("{}: {why}", ex.at));
            return;
        }
        let cmd = small(&ex.command);
        let o = run(&cmd, d.path());
        let code = o.status.code().unwrap_or(-1);
        if needs_gpu(&ex.command) && !has_gpu() {
            // Without a GPU the example cannot run: its flags must still
            // parse, so it ends with iolab's own refusal, not clap's.
            let last = common::stderr(&o).lines().last().unwrap_or("").to_string();
            let clap = [
                "unexpected argument",
                "invalid value",
                "a value is required",
            ];
            if code != 2 || !last.starts_with("error:") || clap.iter().any(|c| last.contains(c)) {
                failures.push(format!(
                    "{}: `{cmd}` without a GPU: exit {code}, {last}",
                    ex.at
                ));
            }
            continue;
        }
        if code != ex.status {
            failures.push(format!(
                "{}: `{cmd}` exited {code}, the page says {}: {}",
                ex.at,
                ex.status,
                common::stderr(&o).lines().last().unwrap_or("")
            ));
        } else if let Some(why) = headers_differ(ex, &o) {
            failures.push(format!("{}: `{cmd}`: {why}", ex.at));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_readme_examples_run_as_shown() {
    check_page("README.md");
}

/// One test per guide page, so that they run side by side.
macro_rules! guide_pages {
    ($($test:ident => $page:literal,)*) => {
        $(
            #[test]
            fn $test() {
                check_page(concat!("docs/guide/", $page));
            }
        )*

        /// The pages above are every page of the guide with an example.
        #[test]
        fn every_guide_page_with_an_example_is_checked() {
            let checked = [$($page),*];
            for e in std::fs::read_dir(root().join("docs/guide")).unwrap() {
                let p = e.unwrap().path();
                let name = p.file_name().unwrap().to_string_lossy().to_string();
                if p.extension().is_some_and(|x| x == "md") && !examples(&p).is_empty() {
                    assert!(checked.contains(&name.as_str()), "docs/guide/{name} has examples: add it to guide_pages!");
                }
            }
        }
    };
}

guide_pages! {
    the_survey_guide_examples_run_as_shown => "survey.md",
    the_bench_guide_examples_run_as_shown => "bench.md",
    the_fio_guide_examples_run_as_shown => "fio.md",
    the_reader_guide_examples_run_as_shown => "reader.md",
    the_traces_guide_examples_run_as_shown => "traces.md",
    the_lab_guide_examples_run_as_shown => "lab.md",
    the_sys_guide_examples_run_as_shown => "sys.md",
    the_safety_guide_examples_run_as_shown => "safety.md",
    the_gpu_guide_examples_parse_as_shown => "gpu.md",
}

#[test]
fn small_shrinks_what_takes_time_and_keeps_the_rest() {
    assert_eq!(
        small("iolab bench --engine pread --file F --size 2g --time 5s --vs fio"),
        "iolab bench --engine pread --file F --size 4m --time 100ms --vs fio --pairs 1"
    );
    assert_eq!(
        small("iolab fio --name=r --size=1g --runtime=10 --rw=read"),
        "iolab fio --name=r --size=4m --runtime=100ms --rw=read"
    );
    assert_eq!(
        small("iolab lab run readers"),
        "iolab lab run readers --scale smoke"
    );
    assert_eq!(small("iolab sys list"), "iolab sys list");
    assert_eq!(small("iolab replay t.csv"), "iolab replay t.csv --repeat 1");
    assert_eq!(small("iolab bench --repeat 3"), "iolab bench --repeat 3");
}

#[test]
fn only_lines_without_figures_or_sentences_are_compared() {
    assert!(fixed(
        "metric            iolab          fio  iolab/fio    noise"
    ));
    assert!(fixed(
        "label  engine  pattern  bs  qd  p50  p99  p99.9  cpu%"
    ));
    assert!(fixed(
        "  rand = uniform with replacement = fio --norandommap"
    ));
    assert!(!fixed(
        "PD  pread read rand 4 KiB threads 1 O_DIRECT cache cold"
    ));
    assert!(!fixed(
        "storage: ext4 on vda (vendor 0x1af4), scheduler mq-deadline"
    ));
    assert!(!fixed(
        "iolab and fio agree within the noise between pairs."
    ));
    assert!(!fixed(
        "warning: no profile at /root/.config/iolab/profile.json; using the built-in defaults"
    ));
    assert!(!fixed("advice:"));
    assert!(figure("(3.2") && figure("0x1af4") && figure("+11.9") && !figure("p99"));
    assert!(figure("--size=256m") && figure("min=128,") && !figure("--ioengine=psync"));
    assert!(!fixed(
        "fio command: fio --name=iolab --filename=F --size=256m --runtime=1s"
    ));
}

#[test]
fn examples_are_read_with_their_status_and_output() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("page.md");
    std::fs::write(
        &p,
        "text\n$ iolab outside a block\n```\n$ iolab bench --qd 0   # exit status 2\nerror: --qd 0\n$ cat x\n$ iolab xor F\n0x1234abcd\n```\n",
    )
    .unwrap();
    let ex = examples(&p);
    assert_eq!(ex.len(), 2, "{ex:?}");
    assert_eq!(ex[0].command, "iolab bench --qd 0");
    assert_eq!(ex[0].status, 2);
    assert_eq!(ex[0].shown, ["error: --qd 0"]);
    assert_eq!(ex[1].shown, ["0x1234abcd"]);
}

/// The relative links of a Markdown page (`[text](target)` outside code),
/// without their `#fragment`; web addresses and in-page anchors are left out.
fn relative_links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        for (k, part) in line.split('`').enumerate() {
            if k % 2 == 1 {
                continue; // a code span
            }
            for piece in part.split("](").skip(1) {
                let Some(target) = piece.split(')').next() else {
                    continue;
                };
                let target = target.split('#').next().unwrap_or("").trim();
                if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                out.push(target.to_string());
            }
        }
    }
    out
}

/// Every Markdown file of the repository's documentation.
fn pages(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            pages(&p, out);
        } else if p.extension().is_some_and(|x| x == "md") {
            out.push(p);
        }
    }
}

#[test]
fn every_relative_link_of_the_documentation_leads_to_a_file() {
    let root = root();
    let mut all = vec![root.join("README.md"), root.join("CHANGELOG.md")];
    pages(&root.join("docs"), &mut all);
    let mut broken = Vec::new();
    for page in &all {
        let text = std::fs::read_to_string(page).unwrap();
        for link in relative_links(&text) {
            if !page.parent().unwrap().join(&link).exists() {
                let rel = page
                    .strip_prefix(&root)
                    .unwrap_or(page)
                    .display()
                    .to_string();
                broken.push(format!("{rel}: ({link}) leads nowhere"));
            }
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

#[test]
fn links_are_read_outside_code_only() {
    assert_eq!(
        relative_links(
            "see [a](a.md#x) and [w](https://x.org) `[c](c.md)`\n```\n[d](d.md)\n```\n[e](../e/)"
        ),
        ["a.md", "../e/"]
    );
}
