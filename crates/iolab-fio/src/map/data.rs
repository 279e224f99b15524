//! What a job's writes carry and what is checked: the buffer options
//! (`refill_buffers`, `zero_buffers`, `scramble_buffers`, `buffer_pattern`,
//! `buffer_compress_*`), the `verify` family, and the syncs (`sync`,
//! `fsync`, `fdatasync`), with the layout options that only say how files
//! are made (`fallocate`, `overwrite`, `openfiles`).

use super::given::Given;
use super::io::Direction;
use crate::FioJobError;
use iolab_bench::content::WriteContent;
use iolab_bench::spec::{OpenSync, SyncEvery};

/// Verification of a job, as fio's `verify` options ask.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verify {
    /// fio's checksum or pattern name (`crc32c`, `md5`, `pattern`, ...).
    pub kind: String,
    /// A write job reads back and checks what it wrote when its writes end
    /// (`do_verify=1`, the default).
    pub after_writes: bool,
    /// Only the reading back runs (`verify_only`): the writes are not made.
    pub only: bool,
    /// An error stops the job at once (`verify_fatal`).
    pub fatal: bool,
}

/// What [`data`] decides.
pub(super) struct Data {
    pub content: WriteContent,
    pub write_once: bool,
    /// Reads are checked against the pattern as they complete.
    pub read_verify: bool,
    pub verify: Option<Verify>,
    pub sync_every: Option<SyncEvery>,
    pub open_sync: Option<OpenSync>,
}

/// Buffer contents, verification and syncs.
pub(super) fn data(
    g: &Given,
    dir: &Direction,
    notes: &mut Vec<String>,
) -> Result<Data, FioJobError> {
    let verify = verify(g, dir, notes)?;
    let (content, write_once) = content(g, verify.is_some(), dir.op.writes(), notes)?;
    let open_sync = open_sync(g, notes)?;
    layout_notes(g, notes)?;
    Ok(Data {
        read_verify: verify.is_some() && !dir.op.writes(),
        verify,
        content,
        write_once,
        sync_every: if dir.op.writes() {
            sync_every(g)?
        } else {
            None
        },
        open_sync,
    })
}

/// The buffer options: what writes carry, and whether each buffer is
/// filled once (fio's default) or for every write (`refill_buffers`, and
/// always when verifying, as fio fills verified writes).
fn content(
    g: &Given,
    verifying: bool,
    writes: bool,
    notes: &mut Vec<String>,
) -> Result<(WriteContent, bool), FioJobError> {
    let refill = g.flag("refill_buffers", false)? || verifying;
    let mut content = WriteContent::Pattern;
    if g.flag("zero_buffers", false)? {
        content = WriteContent::Zero;
    }
    if let Some((v, _)) = g.val("buffer_pattern") {
        content =
            WriteContent::Bytes(pattern_bytes(v).map_err(|e| g.refuse("buffer_pattern", &e))?);
    }
    if let Some(pct) = g.int("buffer_compress_percentage")? {
        if pct > 100 {
            return Err(g.refuse("buffer_compress_percentage", "a percentage, 0 to 100"));
        }
        let chunk = g
            .parse("buffer_compress_chunk", crate::value::bytes)?
            .unwrap_or(512);
        content = WriteContent::Compressible {
            pct: pct as u8,
            chunk: chunk.clamp(1, u32::MAX as u64) as u32,
        };
    }
    if verifying && !content.keeps_pattern() {
        notes.push("verify: writes carry iolab's pattern (the buffer options are set aside, as fio sets them aside for verified writes)".into());
        content = WriteContent::Pattern;
    }
    let once = !refill;
    if writes && once {
        notes.push(if g.flag("scramble_buffers", true)? {
            "writes: each buffer is filled once and reused, as fio does by default (fio also scrambles a few bytes per write; iolab does not)"
        } else {
            "writes: each buffer is filled once and reused (scramble_buffers=0)"
        }.into());
    } else if writes && g.flag("refill_buffers", false)? {
        notes.push("refill_buffers: every write is filled afresh".into());
    }
    Ok((content, once))
}

/// `buffer_pattern`: a number (`0xdeadface`, `123`), a quoted string, or
/// several joined by `|`.
fn pattern_bytes(v: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    for part in v.split('|').map(str::trim) {
        if let Some(s) = part.strip_prefix('"').and_then(|p| p.strip_suffix('"')) {
            out.extend_from_slice(s.as_bytes());
        } else if let Some(h) = part.strip_prefix("0x").or_else(|| part.strip_prefix("0X")) {
            let h = if h.len() % 2 == 1 {
                format!("0{h}")
            } else {
                h.to_string()
            };
            for i in (0..h.len()).step_by(2) {
                out.push(
                    u8::from_str_radix(&h[i..i + 2], 16)
                        .map_err(|_| format!("'{part}': not hexadecimal"))?,
                );
            }
        } else {
            let n: u64 = part
                .parse()
                .map_err(|_| format!("'{part}': a number, 0x hex, or a \"string\""))?;
            out.extend(
                n.to_le_bytes()
                    .iter()
                    .take(((64 - n.leading_zeros()).div_ceil(8) as usize).max(1)),
            );
        }
    }
    Ok(out)
}

/// The `verify` family.
fn verify(
    g: &Given,
    dir: &Direction,
    notes: &mut Vec<String>,
) -> Result<Option<Verify>, FioJobError> {
    let kind = match g.val("verify") {
        None => return Ok(None),
        Some((v, _)) => v.trim().to_string(),
    };
    if matches!(kind.as_str(), "0" | "none" | "") {
        return Ok(None);
    }
    if !KINDS.contains(&kind.as_str()) {
        return Err(g.refuse(
            "verify",
            &format!("one of fio's kinds ({})", KINDS.join(", ")),
        ));
    }
    let v = Verify {
        after_writes: dir.op.writes() && g.flag("do_verify", true)?,
        only: g.flag("verify_only", false)?,
        fatal: g.flag("verify_fatal", false)?,
        kind,
    };
    if dir.op.writes() && !v.after_writes && !v.only {
        notes.push(
            "verify with do_verify=0: writes carry iolab's pattern, read back by a later job"
                .into(),
        );
    } else {
        notes.push(format!(
            "verify={}: every byte read back is checked against iolab's pattern (a pure function of seed and offset) rather than a stored {} checksum{}",
            v.kind,
            v.kind,
            if dir.op.writes() { "; the written region is read back once the writes end" } else { "" }
        ));
    }
    if g.get("verify_backlog").is_some() {
        notes.push(
            "verify_backlog: iolab reads back once the writes end, not every N writes".into(),
        );
    }
    Ok(Some(v))
}

/// fio's `verify` kinds.
const KINDS: &[&str] = &[
    "md5",
    "crc64",
    "crc32c",
    "crc32c-intel",
    "crc32",
    "crc16",
    "crc7",
    "sha256",
    "sha512",
    "sha1",
    "sha3-224",
    "sha3-256",
    "sha3-384",
    "sha3-512",
    "xxhash",
    "meta",
    "pattern",
    "null",
];

/// `sync`: `1`/`sync` opens with O_SYNC, `dsync` with O_DSYNC.
fn open_sync(g: &Given, notes: &mut Vec<String>) -> Result<Option<OpenSync>, FioJobError> {
    let Some((v, _)) = g.val("sync") else {
        return Ok(None);
    };
    let s = match v.trim() {
        "0" | "none" | "false" => return Ok(None),
        "" | "1" | "sync" | "true" => OpenSync::Sync,
        "dsync" => OpenSync::Dsync,
        _ => return Err(g.refuse("sync", "one of 0, 1 (sync), dsync")),
    };
    notes.push(format!(
        "sync={v}: files opened with {} (every write returns once stable), as fio opens them",
        if s == OpenSync::Sync {
            "O_SYNC"
        } else {
            "O_DSYNC"
        }
    ));
    Ok(Some(s))
}

/// `fsync=N` or `fdatasync=N` (0: none; both at once refused).
fn sync_every(g: &Given) -> Result<Option<SyncEvery>, FioJobError> {
    let fsync = g.int("fsync")?.filter(|n| *n > 0);
    let fdatasync = g.int("fdatasync")?.filter(|n| *n > 0);
    let pick = |n: u64, data_only| {
        u32::try_from(n)
            .map(|writes| Some(SyncEvery { writes, data_only }))
            .map_err(|_| {
                g.refuse(
                    if data_only { "fdatasync" } else { "fsync" },
                    "too many writes per sync",
                )
            })
    };
    match (fsync, fdatasync) {
        (Some(_), Some(_)) => Err(g.refuse(
            "fdatasync",
            "iolab takes fsync=N or fdatasync=N, not both in one job",
        )),
        (Some(n), None) => pick(n, false),
        (None, Some(n)) => pick(n, true),
        (None, None) => Ok(None),
    }
}

/// Options that say how files are made or held, and `kb_base`.
fn layout_notes(g: &Given, notes: &mut Vec<String>) -> Result<(), FioJobError> {
    if let Some((v, _)) = g.val("kb_base") {
        if v.trim() != "1024" {
            return Err(g.refuse(
                "kb_base",
                "iolab reads sizes in binary units (kb_base=1024)",
            ));
        }
    }
    if let Some((v, _)) = g.val("unified_rw_reporting") {
        if !matches!(v.trim(), "0" | "none" | "false") {
            return Err(g.refuse(
                "unified_rw_reporting",
                "iolab reports reads and writes apart (none)",
            ));
        }
    }
    if let Some((v, _)) = g.val("fallocate") {
        let v = v.trim();
        if !matches!(
            v,
            "none" | "native" | "posix" | "keep" | "truncate" | "0" | "1"
        ) {
            return Err(g.refuse("fallocate", "one of none, native, posix, keep, truncate"));
        }
        notes.push(format!(
            "fallocate={v}: iolab lays out a missing file by writing it in full before the job, so every mode leaves blocks allocated, as native does"
        ));
    }
    if g.get("overwrite").is_some() {
        notes.push("overwrite: iolab lays out a missing file in full before writing to it, as overwrite=1 does".into());
    }
    if let Some(n) = g.int("openfiles")? {
        notes.push(format!(
            "openfiles={n}: iolab opens each of the job's files once, before it is measured (fio opens and closes them as it goes when more than {n})"
        ));
    }
    Ok(())
}
