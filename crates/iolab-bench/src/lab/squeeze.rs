//! Runs a configuration with less memory than the machine has: a helper
//! process locks a balloon of memory (mlock, [`iolab::prim::Balloon`],
//! the one `iolab sys` uses for the file-cache knee) so the page cache
//! keeps only about the room the experiment asks for. Nothing of the
//! system's cgroups is touched; the balloon is freed when the
//! configuration ends, on Ctrl-C, and when iolab dies (the helper dies
//! with it).

use super::{measure_bench, record, Ctx, Measured};
use crate::error::Result;
use crate::prepare::{self, PrepareOpts};
use crate::record::BenchRecord;
use crate::spec::WorkloadSpec;
use crate::system::meminfo_bytes;
use iolab::prim::Balloon;
use std::path::Path;

/// The balloon when no room is asked for (smoke scale): small enough to
/// leave the cache alone, big enough to exercise inflate and release.
pub(crate) const TOKEN_BALLOON: u64 = 64 << 20;
/// Never inflate unless at least this much would be locked on top of
/// what is left (a balloon of a few MiB would squeeze nothing).
const MIN_BALLOON: u64 = 256 << 20;

/// Measures `spec` (`repeats` runs) with a balloon leaving `leave` bytes
/// of available memory (`None`: a token balloon). The data file is made
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
    let mut created = |p: &Path| (ctx.on_created)(p);
    prepare::prepare(
        &whole,
        true,
        PrepareOpts { overwrite: false },
        ctx.stop,
        &mut created,
        &mut |_, _| {},
    )?;
    let avail = meminfo_bytes("MemAvailable").ok_or_else(|| unsupported("no MemAvailable"))?;
    let bytes = match leave {
        None => TOKEN_BALLOON,
        Some(l) if avail >= l + MIN_BALLOON => avail - l,
        Some(l) => {
            return Err(unsupported(&format!(
                "only {} MiB of memory available; leaving {} MiB needs at least {} MiB",
                avail >> 20,
                l >> 20,
                (l + MIN_BALLOON) >> 20
            )))
        }
    };
    // The balloon lives on this thread (its helper dies with the thread
    // that made it) and is dropped on every way out of this function.
    let balloon = Balloon::inflate(bytes)?;
    let room = meminfo_bytes("MemAvailable").unwrap_or(0);
    let b = measure_bench(spec, repeats, ctx)?;
    if !balloon.alive() {
        return Err(unsupported(
            "the balloon's helper was killed (memory pressure from other processes); measurement dropped",
        ));
    }
    drop(balloon);
    let mut m = record::measured_of(&b);
    let n = b.runs.len();
    m.extra.insert("room_bytes".into(), vec![room as f64; n]);
    m.extra
        .insert("balloon_bytes".into(), vec![bytes as f64; n]);
    m.notes.push(format!(
        "balloon of {} MiB locked: {} MiB available before, {} MiB with it",
        bytes >> 20,
        avail >> 20,
        room >> 20
    ));
    Ok((m, b))
}

fn unsupported(why: &str) -> crate::error::BenchError {
    iolab::Error::Unsupported {
        feature: "memory balloon".into(),
        why: why.into(),
    }
    .into()
}
