//! Every measurement at smoke scale, with relations that hold on any machine.

use super::*;
use std::collections::HashMap;
use std::sync::atomic::AtomicBool;

fn smoke_all() -> HashMap<String, Entry> {
    smoke(&[])
}

/// The named measurements (all when empty) at smoke scale, two repeats.
fn smoke(names: &[&str]) -> HashMap<String, Entry> {
    let stop = AtomicBool::new(false);
    // The crate directory is on a real file system (O_DIRECT, eviction);
    // /tmp may be tmpfs. The measurements make and remove their own
    // hidden temporary directory inside it.
    let dir = std::env::current_dir().unwrap();
    let cfg = Config {
        scale: Scale::Smoke,
        repeat: 2,
        dir,
        stop: &stop,
    };
    let mut out = HashMap::new();
    let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    run(&select(&names).unwrap(), &cfg, &mut |m, r| match r {
        Ok(e) => {
            out.insert(m.name.to_string(), e.clone());
        }
        Err(SysError::Unsupported(why)) => eprintln!("skipped {}: {why}", m.name),
        Err(e) => panic!("{} failed: {e}", m.name),
    })
    .unwrap();
    out
}

/// The best of the repeats: relations between measurements are checked on
/// best cases, because a median of two repeats on a shared, loaded machine
/// can swing by more than the gap between, say, a thread and a fork.
fn best(r: &HashMap<String, Entry>, name: &str) -> f64 {
    let e = r
        .get(name)
        .unwrap_or_else(|| panic!("no result for {name}"));
    e.headline().unwrap().1.min
}

#[test]
fn every_measurement_at_smoke_scale() {
    let r = smoke_all();
    values_are_finite_and_positive(&r);
    relations_hold(&r);
    report_round_trips(r);
}

/// Every headline and series point is a finite number, positive except
/// for context switches.
fn values_are_finite_and_positive(r: &HashMap<String, Entry>) {
    for m in MEASUREMENTS {
        let Some(e) = r.get(m.name) else { continue };
        assert_eq!(e.schema_version, SCHEMA_VERSION);
        let (_, s) = e
            .headline()
            .unwrap_or_else(|| panic!("{} has no value", m.name));
        assert!(
            s.median.is_finite() && s.min.is_finite() && s.max.is_finite(),
            "{}: {s:?}",
            m.name
        );
        // A context switch is computed as a difference and may come out
        // near zero on an idle machine; everything else must be positive.
        if !m.name.starts_with("ctx_") {
            assert!(s.median > 0.0, "{}: {s:?}", m.name);
        }
        for ser in &e.series {
            for p in &ser.points {
                assert!(
                    p.y.is_finite() && p.y > 0.0,
                    "{} {}: {p:?}",
                    m.name,
                    ser.name
                );
            }
        }
    }
}

/// The relations the brief asks for.
fn relations_hold(r: &HashMap<String, Entry>) {
    let must = [
        "getpid",
        "call0",
        "thread",
        "fork",
        "fault_minor",
        "fault_major",
        "mem_latency",
        "tcp_rtt",
    ];
    for n in must {
        assert!(r.contains_key(n), "{n} did not run");
    }
    assert!(best(r, "getpid") > best(r, "call0"), "syscall vs call");
    fork_costs_more_than_a_thread(r);
    assert!(
        best(r, "fault_major") > best(r, "fault_minor"),
        "major vs minor fault"
    );
    let lat = &r["mem_latency"];
    let l1 = lat
        .plateaus
        .iter()
        .find(|p| p.name == "L1")
        .map(|p| p.latency_ns);
    let first = lat.series[0].points[0].y;
    let l1 = l1.unwrap_or(first);
    assert!(best(r, "mem_latency") > l1, "RAM vs L1: {:?}", lat.plateaus);
    for n in ["tcp_rtt", "udp_rtt", "unix_rtt", "pipe_rtt"] {
        if let Some(e) = r.get(n) {
            let pts = &e.series[0].points;
            let (small, big) = (pts[0], pts[pts.len() - 1]);
            // No ordering between sizes holds on a loaded machine: the ends
            // are not pinned, so a small round trip can pay cross-CPU
            // wake-ups that a large one does not (seen: pipe 64 B 49 µs,
            // 64 KiB 14.5 µs). What must hold is that the bytes moved: a
            // round trip carries the message both ways, which cannot go
            // faster than 1,000 bytes per nanosecond (1 TB/s) here.
            assert!(small.x < big.x, "{n}: sizes {small:?} {big:?}");
            assert!(
                2.0 * big.x / big.y_min < 1000.0,
                "{n}: {big:?} moved its bytes impossibly fast"
            );
        }
    }
}

/// Under heavy load a thread's creation can come out dearer than a fork in
/// two repeats (it happened at load 15): both are measured again, up to
/// three times, before concluding; a fork never gets cheaper than a thread
/// on a machine that is not descheduling every thread it makes.
fn fork_costs_more_than_a_thread(r: &HashMap<String, Entry>) {
    let (mut fork, mut thread) = (best(r, "fork"), best(r, "thread"));
    for _ in 0..3 {
        if fork > thread {
            break;
        }
        let again = smoke(&["fork", "thread"]);
        fork = fork.min(best(&again, "fork"));
        thread = thread.min(best(&again, "thread"));
    }
    assert!(fork > thread, "fork {fork} vs thread {thread}");
}

/// The report's CSV rows and JSON carry every entry.
fn report_round_trips(r: HashMap<String, Entry>) {
    let rep = SysReport {
        schema_version: SCHEMA_VERSION,
        scale: "smoke".into(),
        repeat: 2,
        environment: iolab_bench::env::Environment::capture(std::path::Path::new(".")),
        entries: r.into_values().collect(),
    };
    let rows = rep.csv_rows();
    assert!(rows.iter().any(|r| r.series == "mem_latency"));
    assert!(rows
        .iter()
        .any(|r| r.series == "mem_latency.cache_boundary"));
    let back: SysReport = serde_json::from_str(&serde_json::to_string(&rep).unwrap()).unwrap();
    assert_eq!(back.entries.len(), rep.entries.len());
}

#[test]
fn selection_by_name_and_group() {
    assert_eq!(select(&["getpid".into()]).unwrap().len(), 1);
    assert_eq!(select(&["timing".into()]).unwrap().len(), 4);
    assert!(matches!(select(&["nope".into()]), Err(SysError::Unknown(n)) if n == "nope"));
    assert_eq!(select(&[]).unwrap().len(), MEASUREMENTS.len());
}

#[test]
fn cancelled_run_stops() {
    let stop = AtomicBool::new(true);
    let cfg = Config {
        scale: Scale::Smoke,
        repeat: 1,
        dir: std::env::temp_dir(),
        stop: &stop,
    };
    let r = run(&select(&[]).unwrap(), &cfg, &mut |_, _| {});
    assert!(matches!(r, Err(SysError::Cancelled)));
}
