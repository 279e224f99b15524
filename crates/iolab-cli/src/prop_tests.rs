//! Property tests (proptest, 10,000 cases each) of every
//! parser of the command line and of the one file iolab reads back (a
//! `--jsonl` file it is asked to append to). None may panic on any input,
//! and valid inputs round-trip.

use crate::export::target::{is_iolab_jsonl, Mode, OutputTarget};
use crate::parse;
use iolab::engine::EngineKind;
use iolab_bench::spec::{AccessPattern, CacheMode};
use proptest::prelude::*;
use std::time::Duration;

/// One directory for every case, in memory where the machine has it:
/// the cases test the reader, not the disk, and on ext4 10,000 small files
/// cost half a minute.
static JSONL_DIR: std::sync::LazyLock<tempfile::TempDir> = std::sync::LazyLock::new(|| {
    let shm = std::path::Path::new("/dev/shm");
    if shm.is_dir() {
        if let Ok(d) = tempfile::tempdir_in(shm) {
            return d;
        }
    }
    tempfile::tempdir().unwrap()
});

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 10_000,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Strings that look like what people type: digits, units, signs, dots,
/// spaces, commas, and now and then anything at all.
fn typed() -> impl Strategy<Value = String> {
    prop_oneof![
        "[-+ 0-9.,eE]{0,8}[ ]?(k|m|g|t|p|e|ki|mi|gi|KiB|MiB|GiB|b|B|s|ms|us|ns|m|h|d|min|sec|parsec|)[ ]?",
        "[0-9]{1,30}[kmgtpe]?",
        ".{0,24}",
        any::<String>(),
    ]
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn size_never_panics_and_errors_say_what_a_size_is(s in typed()) {
        if let Err(e) = parse::size(&s) {
            prop_assert!(e.contains("not a size"));
            prop_assert!(!e.contains('\n') || s.contains('\n'));
        }
    }

    #[test]
    fn sizes_round_trip(n in 0u64..(1 << 40), unit in 0usize..5) {
        let (suffix, mult) = [("", 1u64), ("k", 1 << 10), ("m", 1 << 20), ("g", 1 << 30), ("t", 1 << 40)][unit];
        if let Some(want) = n.checked_mul(mult) {
            prop_assert_eq!(parse::size(&format!("{n}{suffix}")), Ok(want));
        }
    }

    #[test]
    fn duration_never_panics(s in typed()) {
        if let Err(e) = parse::duration(&s) {
            prop_assert!(e.contains("duration"));
        }
    }

    #[test]
    fn durations_round_trip(n in 0u64..10_000_000, unit in 0usize..4) {
        let (suffix, d) = [
            ("ms", Duration::from_millis(n)),
            ("s", Duration::from_secs(n)),
            ("us", Duration::from_micros(n)),
            ("", Duration::from_secs(n)),
        ][unit];
        prop_assert_eq!(parse::duration(&format!("{n}{suffix}")), Ok(d));
    }

    #[test]
    fn count_never_panics_and_round_trips(s in typed(), n in 0u64..u64::MAX / 1000) {
        let _ = parse::count(&s);
        prop_assert_eq!(parse::count(&n.to_string()), Ok(n));
        prop_assert_eq!(parse::count(&format!("{}k", n / 1000)), Ok(n / 1000 * 1000));
    }

    #[test]
    fn labels_never_panic_and_names_round_trip(s in typed(), i in 0usize..10) {
        let _ = s.parse::<EngineKind>();
        let _ = s.parse::<AccessPattern>();
        let _ = s.parse::<CacheMode>();
        let k = EngineKind::ALL[i];
        prop_assert_eq!(k.to_string().parse::<EngineKind>(), Ok(k));
        for p in [AccessPattern::Seq, AccessPattern::Rand, AccessPattern::Shuffle] {
            prop_assert_eq!(p.to_string().parse::<AccessPattern>(), Ok(p));
        }
        for c in [CacheMode::Cold, CacheMode::Warm, CacheMode::AsIs] {
            prop_assert_eq!(c.name().parse::<CacheMode>(), Ok(c));
        }
    }

    /// Any sequence of flags and values: the parser, and bench's checks
    /// before measuring, answer without panicking, and a refusal is one
    /// line.
    #[test]
    fn command_lines_never_panic(args in proptest::collection::vec(prop_oneof![
        Just("--bs".to_string()), Just("--qd".to_string()), Just("--size".to_string()),
        Just("--time".to_string()), Just("--ops".to_string()), Just("--threads".to_string()),
        Just("--engine".to_string()), Just("--pattern".to_string()), Just("--batch".to_string()),
        Just("--batch-complete".to_string()), Just("--interval".to_string()),
        Just("--read-pct".to_string()), Just("--op".to_string()), Just("--io-size".to_string()),
        Just("--direct".to_string()), Just("--verify".to_string()), Just("--repeat".to_string()),
        Just("uring".to_string()), Just("rw".to_string()), Just("4k".to_string()),
        Just("0".to_string()), Just("-1".to_string()), Just("1e30".to_string()),
        typed(),
    ], 0..8)) {
        let mut argv = vec!["iolab".to_string(), "bench".to_string()];
        argv.extend(args);
        argv.extend(["--dir".into(), "/nonexistent-iolab-dir".into()]);
        match crate::argv::parse_from::<crate::Cli, _, _>(&argv) {
            Ok(cli) => {
                if let Some(crate::Cmd::Bench(a)) = cli.cmd {
                    if let Err(e) = crate::cmd::bench::plan(&a) {
                        prop_assert_eq!(crate::error::exit_code(&e), 2);
                        prop_assert!(!crate::error::one_line(&e).contains('\n'));
                    }
                }
            }
            Err(line) => prop_assert!(!line.contains('\n'), "{}", line),
        }
    }

    /// The `--jsonl` reader: any bytes in the file are accepted exactly
    /// when they are iolab records, and never panic either reader.
    #[test]
    fn jsonl_files_are_accepted_iff_they_hold_records(body in prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..64),
        "(\\{\"schema_version\":[0-9]{1,3}(,\"x\":\"[a-z]{0,3}\")?\\}\n){0,3}".prop_map(String::into_bytes),
        "(\\{\"schema_version\":(-1|1.5|\"1\"|null)\\}\n?){1,2}".prop_map(String::into_bytes),
        "[\\[\\]{}\"a-z0-9:,\n\r ]{0,40}".prop_map(String::into_bytes),
    ]) {
        // A new name each case: rewriting one file makes ext4 flush it
        // on close (5 ms a case here).
        static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let p = JSONL_DIR.path().join(format!("runs{n}.jsonl"));
        std::fs::write(&p, &body).unwrap();
        let ok = OutputTarget::check("--jsonl", &p, false, Mode::Append, &[]).is_ok();
        prop_assert_eq!(ok, is_iolab_jsonl(&body), "{:?}", String::from_utf8_lossy(&body));
        prop_assert_eq!(std::fs::read(&p).unwrap(), body, "checking changed the file");
        std::fs::remove_file(&p).unwrap();
    }
}
