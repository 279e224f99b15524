//! A file that belongs to another user is never replaced. Replacing by
//! rename needs only the directory's permission, so in a world-writable
//! folder without the sticky bit a user could swap root's file for one of
//! their own: iolab checks the file itself. Each case runs as `nobody`
//! (dropped to with `setpriv`) against root's files.

mod common;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::{Command, Output};

/// Runs the binary as user `nobody` in `dir`.
fn as_nobody(args: &[&str], dir: &Path) -> Output {
    Command::new("setpriv")
        .args(["--reuid=nobody", "--regid=nogroup", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_iolab"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

/// Content, owner and mode of `p`.
fn state(p: &Path) -> (Vec<u8>, u32, u32) {
    let m = std::fs::metadata(p).unwrap();
    (std::fs::read(p).unwrap(), m.uid(), m.mode() & 0o7777)
}

#[test]
fn nobody_replaces_no_file_of_roots_with_or_without_overwrite() {
    iolab::require!(
        Command::new("id").arg("-u").output().unwrap().stdout == b"0\n",
        "these checks drop from root to nobody"
    );
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    // World-writable, no sticky bit: anyone may rename over anything here.
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o777)).unwrap();
    let file = |name: &str, body: &[u8], mode: u32| {
        std::fs::write(p.join(name), body).unwrap();
        std::fs::set_permissions(p.join(name), std::fs::Permissions::from_mode(mode)).unwrap();
    };
    file("secret", b"root's secret\n", 0o600);
    file("page.html", b"root's page\n", 0o644);
    file("table.csv", b"root's,table\n", 0o644);
    file("open.csv", b"root's,but writable by all\n", 0o666);
    let o = common::iolab(
        &common::words("bench --engine null --size 64k --jsonl r.jsonl"),
        p,
    );
    assert!(o.status.success(), "{}", common::stderr(&o));
    file(
        "s.log",
        b"1 00:00:00.000001 read(3</etc/hostname>, \"x\", 1) = 1 <0.000001>\n",
        0o644,
    );
    let names = ["secret", "page.html", "table.csv", "open.csv"];
    let before: Vec<_> = names.iter().map(|n| state(&p.join(n))).collect();
    for (args, what) in [
        ("run secret -w 4k 4", "permission denied"),
        ("run secret -w 4k 4 --overwrite", "permission denied"),
        (
            "report r.jsonl -o page.html --overwrite",
            "permission denied",
        ),
        (
            "record --from-strace s.log -o table.csv --overwrite",
            "permission denied",
        ),
        (
            "bench --engine null --size 64k --csv table.csv --overwrite",
            "permission denied",
        ),
        (
            "sys getpid --quick --repeat 1 --csv table.csv --overwrite",
            "permission denied",
        ),
        (
            "run open.csv -w 4k 4 --overwrite",
            "replacing it would make it yours",
        ),
        (
            "report r.jsonl -o open.csv --overwrite",
            "replacing it would make it yours",
        ),
    ] {
        let o = as_nobody(&common::words(args), p);
        let e = common::stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args}: {e}");
        assert!(e.contains(what) && e.lines().count() == 1, "{args}: {e}");
    }
    let after: Vec<_> = names.iter().map(|n| state(&p.join(n))).collect();
    assert_eq!(after, before, "contents, owners and modes as they were");
    // What nobody made, nobody may replace again (iolab made it).
    let o = as_nobody(&common::words("run mine -w 4k 4"), p);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let o = as_nobody(&common::words("run mine -w 4k 2"), p);
    assert!(o.status.success(), "{}", common::stderr(&o));
    assert_eq!(std::fs::metadata(p.join("mine")).unwrap().len(), 8192);
}

#[test]
fn root_replacing_a_users_file_keeps_its_owner_and_mode() {
    iolab::require!(
        Command::new("id").arg("-u").output().unwrap().stdout == b"0\n",
        "this check gives a file to nobody, which needs root"
    );
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("theirs.csv");
    std::fs::write(&f, b"old\n").unwrap();
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o640)).unwrap();
    let ok = Command::new("chown")
        .arg("nobody:nogroup")
        .arg(&f)
        .status()
        .unwrap();
    assert!(ok.success());
    let before = std::fs::metadata(&f).unwrap();
    let o = common::iolab(
        &common::words("bench --engine null --size 64k --csv theirs.csv --overwrite"),
        d.path(),
    );
    assert!(o.status.success(), "{}", common::stderr(&o));
    let after = std::fs::metadata(&f).unwrap();
    assert_eq!(
        (after.uid(), after.gid(), after.mode() & 0o7777),
        (before.uid(), before.gid(), 0o640)
    );
    assert!(std::fs::read_to_string(&f).unwrap().starts_with("label,"));
}

#[test]
fn a_file_this_user_may_not_read_is_bad_input_in_every_command() {
    iolab::require!(
        Command::new("id").arg("-u").output().unwrap().stdout == b"0\n",
        "these checks drop from root to nobody"
    );
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(p.join("secret"), b"file,offset,len\n/a,0,4096\n").unwrap();
    std::fs::set_permissions(p.join("secret"), std::fs::Permissions::from_mode(0o600)).unwrap();
    for args in [
        "xor secret",
        "fast secret",
        "cat secret",
        "run secret -r 4k 1",
        "trace stats secret",
        "replay secret",
        "report secret -o /dev/null",
        "fio secret",
        "bench --file secret --engine null",
    ] {
        let o = as_nobody(&common::words(args), p);
        let e = common::stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args}: {e}");
        assert!(
            e.lines().count() == 1 && e.starts_with("error:"),
            "{args}: {e}"
        );
    }
}
