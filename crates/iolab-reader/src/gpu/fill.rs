//! Host memory the fastest way: no staging buffers at all, every read
//! lands in the destination itself. Cold files go through one io_uring per
//! file, `depth` pieces in flight, with O_DIRECT wherever the ranges allow
//! it (page-aligned in the file and in memory, with room to round the last
//! read up); warm data is `pread` by several threads out of the page cache
//! straight into place. What the safetensors loader uses for host memory.

use super::error::GpuError;
use super::options::GpuOptions;
use super::pipeline;
use super::ranges::{self, Opened, Piece, Source};
use super::stats::{Counters, Stats};
use super::technique::GpuTechnique;
use super::workers;
use iolab::file::OpenSpec;
use iolab::kernel::ring;
use std::fs::File;
use std::sync::Mutex;
use std::time::Instant;

/// O_DIRECT's unit here: offsets, addresses and lengths in whole pages.
const PAGE: u64 = 4096;

/// Reads every range of `sources` straight into `buf` (each range's `at`
/// is an offset in it). [`GpuTechnique::Ring`] for cold data,
/// [`GpuTechnique::Threads`] for warm, unless `opts` names one.
pub fn fill_host(buf: &mut [u8], sources: &[Source], opts: &GpuOptions) -> Result<Stats, GpuError> {
    let t0 = Instant::now();
    let opened = ranges::open_all(sources, buf.len() as u64)?;
    let technique = match opts.technique {
        Some(GpuTechnique::CuFile) => {
            return Err(GpuError::Unavailable {
                technique: "cufile",
                why: "cuFile reads into GPU memory only, and the destination is host memory".into(),
            })
        }
        Some(t) => t,
        None if pipeline::facts(&opened, false, false).warm => GpuTechnique::Threads,
        None => GpuTechnique::Ring,
    };
    let pieces = ranges::pieces(&opened, opts.piece());
    if pieces.is_empty() {
        return Ok(pipeline::stats(Counters::default(), technique, 0, opts, t0));
    }
    let (c, threads) = match technique {
        GpuTechnique::Threads => threads(buf, &opened, &pieces, opts)?,
        _ => rings(buf, &opened, &pieces, opts)?,
    };
    Ok(pipeline::stats(c, technique, threads, opts, t0))
}

/// Per file: whether it may be read with O_DIRECT into `buf`: every piece
/// starts on a page in the file and in memory, and is a whole number of
/// pages or ends the file, with room in `buf` before the next piece for
/// the read rounded up to whole pages.
fn direct_ok(buf: &[u8], opened: &[Opened], pieces: &[Piece]) -> Vec<bool> {
    let base = buf.as_ptr() as u64;
    let mut ok = vec![true; opened.len()];
    let mut order: Vec<usize> = (0..pieces.len()).collect();
    order.sort_unstable_by_key(|&i| pieces[i].at);
    for (k, &i) in order.iter().enumerate() {
        let p = pieces[i];
        let end = p.offset + p.len as u64;
        let room = order.get(k + 1).map_or(buf.len() as u64, |&j| pieces[j].at);
        let fits = p.offset.is_multiple_of(PAGE)
            && (base + p.at).is_multiple_of(PAGE)
            && ((p.len as u64).is_multiple_of(PAGE) || end == opened[p.src].len)
            && p.at + (p.len as u64).div_ceil(PAGE) * PAGE <= room;
        ok[p.src] &= fits;
    }
    ok
}

/// A piece and the part of the destination it is read into (rounded up to
/// whole pages for O_DIRECT).
type Placed<'b> = (Piece, &'b mut [u8]);

/// Cuts `buf` into one slice per piece (pieces never overlap in `buf`);
/// a piece of a file in `round` gets its length rounded up to whole pages.
fn place<'b>(buf: &'b mut [u8], pieces: &[Piece], round: &[bool]) -> Vec<Placed<'b>> {
    let mut order: Vec<usize> = (0..pieces.len()).collect();
    order.sort_unstable_by_key(|&i| pieces[i].at);
    let mut rest = buf;
    let mut cursor = 0u64;
    let mut out = Vec::with_capacity(pieces.len());
    for i in order {
        let p = pieces[i];
        let len = if round[p.src] {
            (p.len as u64).div_ceil(PAGE) * PAGE
        } else {
            p.len as u64
        };
        let tail = std::mem::take(&mut rest);
        let (_, tail) = tail.split_at_mut((p.at - cursor) as usize);
        let (mine, tail) = tail.split_at_mut(len as usize);
        rest = tail;
        cursor = p.at + len;
        out.push((p, mine));
    }
    out
}

/// Warm: threads take the pieces in turn and `pread` each into place.
fn threads(
    buf: &mut [u8],
    opened: &[Opened],
    pieces: &[Piece],
    opts: &GpuOptions,
) -> Result<(Counters, usize), GpuError> {
    let placed: Vec<Option<Placed<'_>>> = place(buf, pieces, &vec![false; opened.len()])
        .into_iter()
        .map(Some)
        .collect();
    let n = placed.len();
    let queue = Mutex::new(placed);
    let threads = opts.threads.clamp(1, n);
    let c = workers::run(threads, n, |shared| {
        let mut c = Counters::default();
        while let Some(i) = shared.take() {
            let item = queue.lock().unwrap_or_else(|p| p.into_inner())[i].take();
            let Some((p, dst)) = item else { continue };
            let t = Instant::now();
            let f = &opened[p.src];
            let got = crate::backend::pread_full(&f.file, &f.path, p.offset, dst)?;
            c.read += t.elapsed();
            short(f, p, got)?;
            c.bytes += p.len as u64;
        }
        Ok(c)
    })?;
    Ok((c, threads))
}

/// Fails unless a piece got all its bytes.
fn short(f: &Opened, p: Piece, got: usize) -> Result<(), GpuError> {
    if got >= p.len {
        return Ok(());
    }
    Err(GpuError::ShortFile {
        path: f.path.clone(),
        at: p.offset + got as u64,
        missing: (p.len - got) as u64,
    })
}

/// A slice of the destination lent to the ring.
struct Slot<'b>(&'b mut [u8]);

impl ring::Dest for Slot<'_> {
    fn dest(&mut self) -> &mut [u8] {
        self.0
    }
}

/// Cold: one ring per file (several files at once), reading into place.
fn rings(
    buf: &mut [u8],
    opened: &[Opened],
    pieces: &[Piece],
    opts: &GpuOptions,
) -> Result<(Counters, usize), GpuError> {
    let direct: Vec<bool> = direct_ok(buf, opened, pieces)
        .into_iter()
        .map(|ok| ok && opts.direct)
        .collect();
    let mut by_file: Vec<Option<Vec<Placed<'_>>>> =
        (0..opened.len()).map(|_| Some(Vec::new())).collect();
    for (p, dst) in place(buf, pieces, &direct) {
        if let Some(v) = by_file[p.src].as_mut() {
            v.push((p, dst));
        }
    }
    by_file.retain(|v| v.as_ref().is_some_and(|v| !v.is_empty()));
    let n = by_file.len();
    let queue = Mutex::new(by_file);
    let threads = opts.threads.clamp(1, n.max(1));
    let c = workers::run(threads, n, |shared| {
        let mut c = Counters::default();
        while let Some(i) = shared.take() {
            let item = queue.lock().unwrap_or_else(|p| p.into_inner())[i].take();
            let Some(mut group) = item else { continue };
            group.sort_unstable_by_key(|(p, _)| p.offset);
            let src = group[0].0.src;
            let t = Instant::now();
            let used_direct = one_file(&opened[src], group, direct[src], opts)?;
            c.read += t.elapsed();
            c.direct |= used_direct;
        }
        Ok(c)
    })?;
    let bytes = pieces.iter().map(|p| p.len as u64).sum();
    Ok((Counters { bytes, ..c }, threads))
}

/// One file's pieces through its ring (O_DIRECT when `direct` and the file
/// system allows it), or preads where there is no io_uring. Returns whether
/// O_DIRECT was used.
fn one_file(
    f: &Opened,
    group: Vec<Placed<'_>>,
    direct: bool,
    opts: &GpuOptions,
) -> Result<bool, GpuError> {
    let fh = if direct { open_direct(f)? } else { None };
    let file = fh.as_ref().unwrap_or(&f.file);
    let (pieces, slots): (Vec<Piece>, Vec<&mut [u8]>) = group.into_iter().unzip();
    let mut dests: Vec<Slot<'_>> = slots.into_iter().map(Slot).collect();
    let force = std::env::var_os(crate::whole::FORCE_PREAD_ENV).is_some_and(|v| v != "0");
    if force || !read_ring(file, f, &pieces, &mut dests, opts.depth)? {
        // No ring here: one pread per piece, in file order.
        for (p, d) in pieces.iter().zip(dests.iter_mut()) {
            let got = read_at_least(file, f, *p, d.0)?;
            short(f, *p, got)?;
        }
    }
    Ok(fh.is_some())
}

/// `f` opened with O_DIRECT, or `None` where its file system refuses it.
fn open_direct(f: &Opened) -> Result<Option<File>, GpuError> {
    let spec = OpenSpec {
        direct: true,
        write: false,
    };
    match iolab::file::open(&f.path, spec) {
        Ok(fh) => Ok(Some(fh)),
        Err(iolab::Error::Unsupported { .. }) => Ok(None),
        Err(e) => Err(GpuError::layer(&f.path, e)),
    }
}

/// Reads every piece into its slot through this thread's ring, `depth` in
/// flight; `Ok(false)` when there is no io_uring here (nothing was read).
fn read_ring(
    file: &File,
    f: &Opened,
    pieces: &[Piece],
    dests: &mut [Slot<'_>],
    depth: u32,
) -> Result<bool, GpuError> {
    let plan: Vec<ring::Piece> = dests
        .iter_mut()
        .zip(pieces)
        .enumerate()
        .map(|(i, (d, p))| ring::Piece {
            offset: p.offset,
            segs: vec![ring::Seg {
                req: i,
                start: 0,
                len: d.0.len(),
            }],
        })
        .collect();
    let mut failed: Option<GpuError> = None;
    let r = ring::read_plan(file, dests, &plan, depth.max(1), &mut |i, _, res| {
        if failed.is_none() {
            let p = pieces[i];
            failed = match res {
                Ok(n) => short(f, p, n).err(),
                Err(e) => Some(GpuError::io(&f.path, p.offset, p.len, e)),
            };
        }
    });
    match (r, failed) {
        (Err(_), _) => Ok(false),
        (Ok(()), Some(e)) => Err(e),
        (Ok(()), None) => Ok(true),
    }
}

/// Reads piece `p` into `dst` (which may be longer: rounded up for
/// O_DIRECT) until it has the piece's bytes or the file ends; never reads
/// on from an unaligned offset after the piece is complete.
fn read_at_least(file: &File, f: &Opened, p: Piece, dst: &mut [u8]) -> Result<usize, GpuError> {
    use std::os::unix::fs::FileExt;
    let mut done = 0usize;
    while done < p.len {
        let at = p.offset + done as u64;
        match file.read_at(&mut dst[done..], at) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(GpuError::io(&f.path, at, dst.len() - done, e)),
        }
    }
    Ok(done)
}
