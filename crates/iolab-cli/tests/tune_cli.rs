//! `iolab tune` end to end: it measures a real file under
//! `--dir`, writes a profile the reading library then loads without a
//! warning, refuses a missing directory, and does not replace a file that
//! is not a profile. One scenario: the quick tune takes ~15 s of real I/O.

mod common;

use common::{iolab, stderr, stdout, words};
use std::process::Command;

#[test]
fn quick_tune_writes_a_profile_that_cat_then_uses() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();

    // A --dir that is not there: one line naming it, exit 2, nothing written.
    let o = iolab(
        &words("tune --quick --dir nowhere/deeper --out prof.json"),
        p,
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("--dir nowhere/deeper: no such directory"), "{e}");
    assert_eq!(e.trim_end().lines().count(), 1, "{e}");
    assert!(!p.join("prof.json").exists());

    // --out naming a file that is not a profile: refused without --overwrite.
    std::fs::write(p.join("mine.json"), "not a profile").unwrap();
    std::fs::create_dir(p.join("data")).unwrap();
    let o = iolab(&words("tune --quick --dir data --out mine.json"), p);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(p.join("mine.json")).unwrap(),
        "not a profile"
    );

    let o = iolab(&words("tune --quick --dir data --out prof.json"), p);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    // Without a GPU the host → device part is skipped in one line.
    if !std::path::Path::new("/dev/nvidia0").exists() {
        let e = stderr(&o);
        let said: Vec<&str> = e.lines().filter(|l| l.contains("host → device")).collect();
        assert_eq!(said.len(), 1, "{e}");
        assert!(
            said[0].starts_with("tune: host → device not measured: no NVIDIA"),
            "{e}"
        );
    }
    assert!(out.contains("Pareto front"), "{out}");
    assert!(out.contains("Recommendations:"), "{out}");
    // The profile says what it was measured on and what to do.
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(p.join("prof.json")).unwrap()).unwrap();
    for key in ["machine", "device", "measurements", "recommendations"] {
        assert!(!v[key].is_null(), "no {key} in {v}");
    }
    if !std::path::Path::new("/dev/nvidia0").exists() {
        assert!(
            v["gpu"].is_null(),
            "a gpu section without a GPU: {}",
            v["gpu"]
        );
    }
    // Where the warm copy lands was measured (one of the two offsets), and said.
    let at = v["whole"]["warm_offset"].as_u64();
    assert!(matches!(at, Some(0) | Some(16)), "{}", v["whole"]);
    assert!(out.contains("B past a page here"), "{out}");
    // tune removes the file it measured with.
    assert_eq!(std::fs::read_dir(p.join("data")).unwrap().count(), 0);

    // The reading library loads it: no fallback warning, correct bytes.
    let data: Vec<u8> = (0..(3 << 20) + 5).map(|i| (i * 7 + 3) as u8).collect();
    std::fs::write(p.join("f.bin"), &data).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(words("cat f.bin -o copy.bin"))
        .env("IOLAB_PROFILE", p.join("prof.json"))
        .current_dir(p)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stderr(&o).contains("warning"), "{}", stderr(&o));
    assert_eq!(std::fs::read(p.join("copy.bin")).unwrap(), data);
}
