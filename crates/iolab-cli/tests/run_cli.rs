//! `iolab run` and `run2`, the course's programs, against a
//! small C reference written the assignment's way (`read` of BLOCK_SIZE
//! bytes, `xorbuf(buf, bytes_read / 4)`), compiled with gcc into a
//! temporary directory.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const C_REFERENCE: &str = r#"
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static unsigned int xorbuf(unsigned int *buffer, int size) {
    unsigned int result = 0;
    for (int i = 0; i < size; i++) result ^= buffer[i];
    return result;
}

int main(int argc, char **argv) {
    if (argc != 5) return 2;
    long block_size = atol(argv[3]), block_count = atol(argv[4]);
    int fd = open(argv[1], O_RDONLY);
    if (fd < 0) return 1;
    unsigned int *buf = malloc(block_size + 4);
    unsigned int x = 0;
    for (long i = 0; i < block_count; i++) {
        ssize_t n = read(fd, buf, block_size);
        if (n <= 0) break;
        x ^= xorbuf(buf, n / 4);
    }
    printf("%08x\n", x);
    return 0;
}
"#;

fn iolab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(args)
        .env("IOLAB_PROFILE", "/nonexistent/profile.json")
        .output()
        .expect("run iolab")
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Builds the C reference; None (after `require!`'s notice) without gcc.
fn reference(dir: &Path) -> Option<PathBuf> {
    let src = dir.join("run.c");
    std::fs::write(&src, C_REFERENCE).unwrap();
    let bin = dir.join("run-c");
    let ok = Command::new("gcc")
        .args(["-O2", "-o"])
        .arg(&bin)
        .arg(&src)
        .status()
        .is_ok_and(|s| s.success());
    ok.then_some(bin)
}

fn c_run(bin: &Path, file: &Path, bs: usize, count: u64) -> String {
    let o = Command::new(bin)
        .arg(file)
        .arg("-r")
        .arg(bs.to_string())
        .arg(count.to_string())
        .output()
        .unwrap();
    assert!(o.status.success(), "C reference failed");
    out(&o)
}

fn data(len: usize) -> Vec<u8> {
    (0..len as u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 11) as u8)
        .collect()
}

#[test]
fn run_r_matches_the_c_reference_at_any_block_size() {
    let d = tempfile::tempdir().unwrap();
    let Some(c) = reference(d.path()) else {
        iolab::require!(false, "gcc is missing (scripts/setup.sh installs it)");
        return;
    };
    // An odd length: the last read ends inside a word at most block sizes.
    let f = d.path().join("data");
    std::fs::write(&f, data(300_007)).unwrap();
    let fs = f.to_str().unwrap();
    let mut differ = 0;
    for bs in [4usize, 6, 7, 1000, 1001, 4096, 4097, 65536, 1 << 20] {
        for count in [1u64, 3, 1_000_000] {
            let o = iolab(&["run", fs, "-r", &bs.to_string(), &count.to_string()]);
            assert!(o.status.success(), "bs {bs} count {count}: {}", err(&o));
            let got = out(&o);
            assert_eq!(got.len(), 9, "8 hex digits and a newline: {got:?}");
            assert!(got[..8]
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
            let want = c_run(&c, &f, bs, count);
            assert_eq!(got, want, "bs {bs} count {count}");
            if bs % 4 != 0 && count > 1 {
                // Dropping each read's partial word matters here.
                let first4 = iolab(&["run", fs, "-r", "4", &count.to_string()]);
                differ += (out(&first4) != got) as u32;
            }
        }
    }
    assert!(
        differ > 0,
        "block sizes not a multiple of 4 never changed the answer"
    );
    // `fast` equals `run` with any block size that is a multiple of 4 over
    // the whole file; `iolab xor` and `cat --xor` zero-pad the last word.
    let fast = out(&iolab(&["fast", fs]));
    assert_eq!(fast, c_run(&c, &f, 4096, 1_000_000));
    assert_eq!(fast, c_run(&c, &f, 4, 1_000_000));
    let xor = out(&iolab(&["xor", fs]));
    assert_eq!(out(&iolab(&["cat", "--xor", fs])), xor);
    assert!(xor.starts_with("0x") && xor.len() == 11, "{xor:?}");
    assert_ne!(&xor[2..], fast, "300007 bytes end inside a word");
}

#[test]
fn run_w_creates_or_truncates_a_regular_file_and_refuses_the_rest() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("w");
    let fs = f.to_str().unwrap();
    let o = iolab(&["run", fs, "-w", "1000", "7"]);
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(std::fs::metadata(&f).unwrap().len(), 7000);
    assert!(!err(&o).contains("replaced"), "{}", err(&o));
    assert!(out(&o).is_empty());
    // Written data reads back as the C reference reads it.
    if let Some(c) = reference(d.path()) {
        let o = iolab(&["run", fs, "-r", "1000", "7"]);
        assert_eq!(out(&o), c_run(&c, &f, 1000, 7));
    }
    // Again, shorter: truncated, and said on stderr.
    let o = iolab(&["run", fs, "-w", "512", "2"]);
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(std::fs::metadata(&f).unwrap().len(), 1024);
    assert!(
        err(&o).contains("replaced the existing file"),
        "{}",
        err(&o)
    );
    // Not a regular file: refused, one line, exit 2, nothing changed.
    let fifo = d.path().join("fifo");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let link = d.path().join("link");
    std::os::unix::fs::symlink(&f, &link).unwrap();
    let sub = d.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    for p in [&fifo, &link, &sub, &PathBuf::from("/dev/null")] {
        let o = iolab(&["run", p.to_str().unwrap(), "-w", "4096", "1"]);
        assert_eq!(o.status.code(), Some(2), "{}: {}", p.display(), err(&o));
        let e = err(&o);
        assert_eq!(e.lines().count(), 1, "{e}");
        assert!(
            e.contains("run -w") && e.contains(p.to_str().unwrap()),
            "{e}"
        );
    }
    assert_eq!(std::fs::metadata(&f).unwrap().len(), 1024);
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::symlink_metadata(&fifo)
        .unwrap()
        .file_type()
        .is_fifo());
    let mut names: Vec<_> = std::fs::read_dir(d.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    let want: Vec<&str> = vec!["fifo", "link", "run-c", "run.c", "sub", "w"];
    let have: Vec<&str> = names.iter().map(String::as_str).collect();
    assert!(
        have == want || have == ["fifo", "link", "sub", "w"],
        "no temporary files left: {have:?}"
    );
}

#[test]
fn run2_stops_when_the_count_outgrows_the_file() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("small");
    std::fs::write(&f, data(1 << 20)).unwrap();
    let fs = f.to_str().unwrap();
    for extra in [&[][..], &["--warm"][..]] {
        let mut args = vec!["run2", fs, "64k"];
        args.extend(extra);
        let o = iolab(&args);
        assert!(o.status.success(), "{}", err(&o));
        let s = out(&o);
        // 1 MiB is read in far less than 5 s: 16 blocks is the longest.
        assert!(s.contains("16 blocks (1048576 bytes)"), "{s}");
        assert!(s.contains("5 s would need a file of about"), "{s}");
        // Counts 1, 2, 4, 8, 16 were tried, then 32 outgrew the file.
        assert_eq!(err(&o).matches("run2: ").count(), 5, "{}", err(&o));
    }
    assert_eq!(
        std::fs::metadata(&f).unwrap().len(),
        1 << 20,
        "never extended"
    );
    let o = iolab(&["run2", fs, "2m"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("less than one block"), "{}", err(&o));
}

#[test]
fn bad_run_command_lines_say_what_is_wrong_in_one_line() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("f");
    std::fs::write(&f, b"12345678").unwrap();
    let fs = f.to_str().unwrap();
    for (args, names) in [
        (vec!["run", fs, "4096", "1"], "-r"),
        (vec!["run", fs, "-r", "-w", "4096", "1"], "-w"),
        (vec!["run", fs, "-r", "0", "1"], "BLOCK_SIZE"),
        (vec!["run", fs, "-r", "abc", "1"], "BLOCK_SIZE"),
        (vec!["run", fs, "-r", "-1", "1"], "BLOCK_SIZE"),
        (vec!["run", fs, "-r", "4096", "0"], "BLOCK_COUNT"),
        (vec!["run", fs, "-r", "4096"], "BLOCK_COUNT"),
        (
            vec!["run", "/nonexistent/x", "-r", "4", "1"],
            "no such file",
        ),
        (vec!["run", fs, "-w", "1g", "100m"], "do not fit"),
        (vec!["run2", fs, "4x"], "BLOCK_SIZE"),
    ] {
        let o = iolab(&args);
        let e = err(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
        assert_eq!(e.trim_end().lines().count(), 1, "{args:?}: {e}");
        assert!(e.contains(names), "{args:?}: {e}");
        assert!(out(&o).is_empty());
    }
    assert_eq!(std::fs::read(&f).unwrap(), b"12345678");
}

#[test]
fn cat_writes_every_byte_of_warm_and_cold_files_in_order() {
    let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    // Not multiples of the page or of a piece: tails are where bytes go missing.
    let a: Vec<u8> = (0..(3 << 20) + 123).map(|i| (i * 7 % 251) as u8).collect();
    let b: Vec<u8> = (0..5000u32).map(|i| (i % 13) as u8).collect();
    let (fa, fb) = (d.path().join("a"), d.path().join("b"));
    std::fs::write(&fa, &a).unwrap();
    std::fs::write(&fb, &b).unwrap();
    let want = [a.clone(), b.clone()].concat();
    let (sa, sb) = (fa.to_str().unwrap(), fb.to_str().unwrap());
    // Warm (just written: the page-cache path) ...
    let o = iolab(&["cat", "-v", sa, sb]);
    assert!(o.status.success(), "{}", err(&o));
    assert!(o.stdout == want, "warm: bytes differ");
    assert!(err(&o).contains("pread buffered"), "{}", err(&o));
    // ... and cold (evicted: O_DIRECT where the file system allows it).
    iolab::cache::evict(&fa).unwrap();
    let out = d.path().join("out");
    let o = iolab(&["cat", "-v", sa, sb, "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", err(&o));
    assert!(std::fs::read(&out).unwrap() == want, "cold: bytes differ");
    let first = err(&o)
        .lines()
        .find(|l| l.contains("/a: "))
        .unwrap_or("")
        .to_string();
    assert!(
        !first.contains("pread buffered"),
        "cold read as warm: {first}"
    );
}
