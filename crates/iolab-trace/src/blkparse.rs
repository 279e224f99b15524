//! `blkparse` default text output (block-level traces).
//!
//! Each event line is `MAJ,MIN CPU SEQ SECS.NANOS PID ACTION RWBS ...`;
//! only completions (`C`) of reads (`R` in RWBS) are taken, as
//! `SECTOR + COUNT` in 512-byte sectors. The file of a read is the device,
//! named `dev-MAJ-MIN`: replay it against a file (or a device image) of the
//! recorded size. The summary blkparse prints at the end (from the first
//! line starting with `CPU` or `Total`) is ignored.

use super::{Trace, TraceBuilder, TraceError, TraceFormat, TraceOp};

/// Whether `line` looks like a blkparse event line.
pub fn looks_like(line: &str) -> bool {
    event(line).is_some()
}

/// The fields of an event line: device, seconds (as ns), pid, action,
/// RWBS and the rest.
struct Event<'a> {
    dev: (u32, u32),
    t_ns: u64,
    action: &'a str,
    rwbs: &'a str,
    rest: Vec<&'a str>,
}

fn event(line: &str) -> Option<Event<'_>> {
    let f: Vec<&str> = line.split_whitespace().collect();
    if f.len() < 6 {
        return None;
    }
    let (maj, min) = f[0].split_once(',')?;
    let dev = (maj.parse().ok()?, min.parse().ok()?);
    f[1].parse::<u32>().ok()?;
    f[2].parse::<u64>().ok()?;
    let (s, frac) = f[3].split_once('.')?;
    let secs: u64 = s.parse().ok()?;
    if frac.is_empty() || frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let nanos: u64 = format!("{frac:0<9}").parse().ok()?;
    f[4].parse::<u64>().ok()?;
    Some(Event {
        dev,
        t_ns: secs * 1_000_000_000 + nanos,
        action: f[5],
        rwbs: f.get(6).copied().unwrap_or(""),
        rest: f.get(7..).map(|r| r.to_vec()).unwrap_or_default(),
    })
}

/// Parses blkparse text.
pub fn parse(text: &str, name: &str) -> Result<Trace, TraceError> {
    let mut b = TraceBuilder::new(TraceFormat::Blkparse);
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let l = line.trim();
        if l.is_empty() {
            continue;
        }
        if l.starts_with("CPU") || l.starts_with("Total") {
            break;
        }
        let ev = event(l).ok_or_else(|| {
            TraceError::at(
                name,
                n,
                format!("'{l}': expected a blkparse event line (MAJ,MIN CPU SEQ SECS.NANOS PID ACTION RWBS ...)"),
            )
        })?;
        if ev.action != "C" || !ev.rwbs.contains('R') {
            continue;
        }
        completed_read(&mut b, &ev, l, name, n)?;
    }
    let mut t = b.finish();
    // Block traces are relative to the trace start already; make the first 0.
    if let Some(t0) = t.reads.iter().filter_map(|r| r.t_ns).min() {
        for r in &mut t.reads {
            r.t_ns = r.t_ns.map(|x| x - t0);
        }
    }
    Ok(t)
}

/// A completed read (`SECTOR + COUNT [ERR]`) added to the trace; a failed
/// one is counted as skipped.
fn completed_read(
    b: &mut TraceBuilder,
    ev: &Event,
    l: &str,
    name: &str,
    n: usize,
) -> Result<(), TraceError> {
    let [sector, "+", count, ..] = ev.rest.as_slice() else {
        return Err(TraceError::at(
            name,
            n,
            format!("'{l}': a completed read needs SECTOR + COUNT"),
        ));
    };
    let bad = |what: &str, v: &str| {
        TraceError::at(
            name,
            n,
            format!("{what} '{v}' is not a non-negative integer"),
        )
    };
    let sector: u64 = sector.parse().map_err(|_| bad("sector", sector))?;
    let count: u64 = count.parse().map_err(|_| bad("sector count", count))?;
    if ev.rest.get(3).copied().unwrap_or("[0]") != "[0]" {
        b.skip("failed");
        return Ok(());
    }
    let (Some(offset), Some(len)) = (sector.checked_mul(512), count.checked_mul(512)) else {
        return Err(TraceError::at(name, n, format!("'{l}': beyond 2^64 bytes")));
    };
    if offset.checked_add(len).is_none() {
        return Err(TraceError::at(name, n, format!("'{l}': beyond 2^64 bytes")));
    }
    let dev = format!("dev-{}-{}", ev.dev.0, ev.dev.1);
    b.read(&dev, offset, len, TraceOp::Block, 0, Some(ev.t_ns));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str =
        "  8,0    3        1     0.000000000   697  Q  RM 4159512 + 8 [jbd2/sda1-8]
  8,0    3        2     0.000002000   697  G  RM 4159512 + 8 [jbd2/sda1-8]
  8,0    3        3     0.000003000   697  P   N [jbd2/sda1-8]
  8,0    3        4     0.000004000   697  I  RM 4159512 + 8 [jbd2/sda1-8]
  8,0    3        5     0.000005000   697  D  RM 4159512 + 8 [jbd2/sda1-8]
  8,0    1        6     0.000123000     0  C  RM 4159512 + 8 [0]
  8,0    1        7     0.000200000   812  Q   W 100 + 16 [kworker]
  8,0    1        8     0.000300000     0  C   W 100 + 16 [0]
  8,16   0        9     0.001000000     0  C   R 2048 + 256 [0]
  8,16   0       10     0.001100000     0  C   R 4096 + 8 [-5]
  8,0    1       11     0.001200000     0  C  FWS 0 [0]
  8,0    0        0     0.001300000     0  m   N cfq697 slice expired
CPU0 (sda):
 Reads Queued:           1,        4KiB\t Writes Queued:           0,        0KiB
Total (sda):
";

    #[test]
    fn only_completed_reads_are_taken() {
        let t = parse(SAMPLE, "b.txt").unwrap();
        assert_eq!(t.reads.len(), 2, "{:?}", t.reads);
        assert_eq!(t.files, vec!["dev-8-0".to_string(), "dev-8-16".to_string()]);
        assert_eq!((t.reads[0].offset, t.reads[0].len), (4159512 * 512, 4096));
        assert_eq!((t.reads[1].offset, t.reads[1].len), (2048 * 512, 256 * 512));
        assert_eq!(t.reads[0].t_ns, Some(0));
        assert_eq!(t.reads[1].t_ns, Some(1_000_000 - 123_000));
        assert_eq!(t.skipped.get("failed"), Some(&1));
    }

    #[test]
    fn detects_and_reports_malformed_lines() {
        assert!(looks_like(SAMPLE.lines().next().unwrap()));
        let e = parse(
            "  8,0 1 1 0.1 0 C R 10 + 8 [0]\n  8,0 1 2 0.2 0 C R ten + 8 [0]\n",
            "b",
        )
        .unwrap_err();
        assert!(e.to_string().starts_with("b:2:"), "{e}");
        let e = parse("  8,0 1 1 0.1 0 C R 10 + 8 [0]\ngarbage here\n", "b").unwrap_err();
        assert!(e.to_string().starts_with("b:2:"), "{e}");
        // A sector past 2^64 bytes is refused, not wrapped.
        let e = parse("  8,0 1 1 0.1 0 C R 36028797018963968 + 8 [0]\n", "b").unwrap_err();
        assert!(e.to_string().contains("beyond 2^64 bytes"), "{e}");
    }
}
