//! Runs a configuration with less memory than the machine has: helper
//! processes lock balloons of memory (mlock, [`iolab::primitives::Balloon`],
//! the one `iolab sys` uses for the file-cache knee) so the page cache
//! keeps only about the room the experiment asks for. Nothing of the
//! system's cgroups is touched.
//!
//! The balloon is made of chunks, added or dropped until the memory
//! available is what was asked for (other processes come and go), and is
//! kept from one configuration to the next (locking ~20 GiB takes minutes
//! on a loaded machine); [`release`] frees it when the experiment ends
//! (including on Ctrl-C), and the helpers die with iolab.

use super::{measure_bench, prepare_in, record, Ctx, Measured};
use iolab::primitives::Balloon;
use iolab_bench::error::Result;
use iolab_bench::record::BenchRecord;
use iolab_bench::spec::WorkloadSpec;
use iolab_sysbench::meminfo_bytes;
use std::cell::RefCell;
use std::sync::atomic::Ordering;

/// The balloon when no room is asked for (smoke scale): small enough to
/// leave the cache alone, big enough to exercise inflate and release.
pub(crate) const TOKEN_BALLOON: u64 = 64 << 20;
/// Never inflate unless at least this much would be locked on top of
/// what is left (a balloon of a few MiB would squeeze nothing).
const MIN_BALLOON: u64 = 256 << 20;
/// The balloon grows by chunks of at most this.
const CHUNK: u64 = 1 << 30;
/// Available memory within this of the target is close enough.
const SLACK: u64 = 96 << 20;

thread_local! {
    /// The chunks held between configurations (on the thread that made
    /// them: a helper dies with the thread that forked it).
    static HELD: RefCell<Vec<Balloon>> = const { RefCell::new(Vec::new()) };
}

/// Frees the balloon (every chunk); called when an experiment ends.
pub(crate) fn release() {
    HELD.with(|h| h.borrow_mut().clear());
}

/// Bytes locked now.
fn held() -> u64 {
    HELD.with(|h| h.borrow().iter().map(Balloon::bytes).sum())
}

/// Adds or drops chunks until `MemAvailable` is about `leave` (or, with
/// `None`, holds one token chunk).
fn adjust(leave: Option<u64>, ctx: &Ctx) -> Result<()> {
    // A chunk whose helper was killed (memory pressure) holds nothing.
    HELD.with(|h| h.borrow_mut().retain(Balloon::alive));
    let Some(leave) = leave else {
        if held() == 0 {
            let b = Balloon::inflate(TOKEN_BALLOON)?;
            HELD.with(|h| h.borrow_mut().push(b));
        }
        return Ok(());
    };
    if held() == 0 {
        let avail = available()?;
        if avail < leave + MIN_BALLOON {
            return Err(unsupported(&format!(
                "only {} MiB of memory available; leaving {} MiB needs at least {} MiB",
                avail >> 20,
                leave >> 20,
                (leave + MIN_BALLOON) >> 20
            )));
        }
    }
    for _ in 0..256 {
        if ctx.stop.load(Ordering::Relaxed) {
            return Err(iolab::Error::Cancelled.into());
        }
        let avail = available()?;
        if avail > leave + SLACK {
            let b = Balloon::inflate((avail - leave).min(CHUNK))?;
            HELD.with(|h| h.borrow_mut().push(b));
        } else if avail + SLACK < leave && held() > 0 {
            // Too little left (others grew): give back the smallest chunk.
            HELD.with(|h| {
                let mut v = h.borrow_mut();
                if let Some(i) = (0..v.len()).min_by_key(|&i| v[i].bytes()) {
                    v.swap_remove(i);
                }
            });
        } else {
            break;
        }
    }
    Ok(())
}

fn available() -> Result<u64> {
    meminfo_bytes("MemAvailable").ok_or_else(|| unsupported("no MemAvailable in /proc/meminfo"))
}

/// Measures `spec` (`repeats` runs) with a balloon leaving `leave` bytes
/// of available memory (`None`: a token balloon), which stays inflated
/// after (see [`release`]). The data file is made
/// first, `file_bytes` long, so a smaller `spec.file_size` reads a region
/// of a shared file. The record's extras gain `room_bytes` (memory
/// available with the balloon in place) and `balloon_bytes`.
pub(crate) fn measure(
    spec: &WorkloadSpec,
    repeats: u32,
    leave: Option<u64>,
    file_bytes: u64,
    ctx: &Ctx,
) -> Result<(Measured, BenchRecord)> {
    // The file is written before the balloon (writing under pressure
    // would only be slower) and is shared by every region size.
    let mut whole = spec.clone();
    whole.file_size = file_bytes.max(spec.file_size);
    prepare_in(&whole, ctx)?;
    adjust(leave, ctx)?;
    let bytes = held();
    let room = available()?;
    let b = measure_bench(spec, repeats, ctx)?;
    if HELD.with(|h| h.borrow().iter().any(|c| !c.alive())) {
        return Err(unsupported(
            "a balloon helper was killed (memory pressure from other processes); measurement dropped",
        ));
    }
    let mut m = record::measured_of(&b);
    let n = b.runs.len();
    m.extra.insert("room_bytes".into(), vec![room as f64; n]);
    m.extra
        .insert("balloon_bytes".into(), vec![bytes as f64; n]);
    m.notes.push(format!(
        "balloon of {} MiB locked ({} chunks): {} MiB of memory available with it",
        bytes >> 20,
        HELD.with(|h| h.borrow().len()),
        room >> 20
    ));
    Ok((m, b))
}

fn unsupported(why: &str) -> iolab_bench::error::BenchError {
    iolab::Error::Unsupported {
        feature: "memory balloon".into(),
        why: why.into(),
    }
    .into()
}
