//! [`GpuTechnique::Ring`](super::GpuTechnique::Ring): each file is read by
//! iolab's io_uring stream (`sys::ring::stream_file`, the whole-file
//! path's engine) with `depth` pieces in flight, O_DIRECT when asked and
//! allowed, straight into the lane's staging memory (huge pages: one
//! segment per request for the disk). Each piece is copied out as it lands
//! and the copy has ended before the ring reads into that buffer again,
//! while the ring's other pieces are still being read: the disk never
//! waits for the copy of more than one piece. Several files (checkpoint
//! shards) are read at once, one ring per thread.

use super::error::GpuError;
use super::options::GpuOptions;
use super::ranges::{spans, Opened, Router};
use super::stats::Counters;
use super::target::{CopyNow, Lane, Target};
use super::workers::{self, Shared};
use iolab::file::OpenSpec;
use iolab::kernel::ring::{self, StreamError};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::time::{Duration, Instant};

/// Moves every file's ranges to `target`, up to `opts.threads` files at
/// once; returns the counts and the threads used.
pub(crate) fn run<T: Target>(
    target: &T,
    files: &[Opened],
    opts: &GpuOptions,
) -> Result<(Counters, usize), GpuError> {
    let busy: Vec<usize> = (0..files.len())
        .filter(|&i| !files[i].ranges.is_empty())
        .collect();
    let threads = opts.threads.clamp(1, busy.len().max(1));
    let c = workers::run(threads, busy.len(), |shared| {
        worker(target, files, &busy, shared, opts)
    })?;
    Ok((c, threads))
}

/// One thread: a lane of `depth` buffers, then files until none are left.
fn worker<T: Target>(
    target: &T,
    files: &[Opened],
    busy: &[usize],
    shared: &Shared,
    opts: &GpuOptions,
) -> Result<Counters, GpuError> {
    let t = Instant::now();
    let depth = opts.depth.max(1) as usize;
    let mut lane = target.lane(depth, opts.piece(), opts.pinned)?;
    let mut c = Counters {
        setup: t.elapsed(),
        pinned: lane.pinned(),
        ..Counters::default()
    };
    let mut r = Ok(());
    while let Some(i) = shared.take() {
        r = one_file(&mut lane, &files[busy[i]], opts, &mut c);
        if r.is_err() {
            shared.stop();
            break;
        }
    }
    let fin = lane.finish();
    r?;
    fin?;
    Ok(c)
}

/// Streams one file's spans through the lane's memory.
fn one_file<L: Lane>(
    lane: &mut L,
    f: &Opened,
    opts: &GpuOptions,
    c: &mut Counters,
) -> Result<(), GpuError> {
    let chunk = opts.piece();
    let depth = opts.depth.max(1) as usize;
    let (fh, unit) = open_for_stream(f, chunk, opts.direct)?;
    c.direct |= fh.is_some();
    let file = fh.as_ref().unwrap_or(&f.file);
    let (mem, copier) = lane.split()?;
    let mem = &mut mem[..depth * chunk];
    let router = Router::new(&f.ranges);
    for (start, end) in spans(&f.ranges, unit) {
        let s = Span {
            file,
            f,
            start,
            end,
            chunk,
            depth: depth as u32,
        };
        s.stream(mem, copier, &router, c)?;
    }
    Ok(())
}

/// The file opened with O_DIRECT when asked for, its file system allows it
/// and its alignment divides the piece size (`None`: read through the
/// page cache), and the unit spans start on.
fn open_for_stream(
    f: &Opened,
    chunk: usize,
    direct: bool,
) -> Result<(Option<File>, u64), GpuError> {
    let align = direct
        .then(|| iolab::file::dio_alignment(&f.path).ok())
        .flatten()
        .map(|a| a.required.max(4096))
        .filter(|u| chunk.is_multiple_of(*u));
    let Some(unit) = align else {
        return Ok((None, 4096));
    };
    let spec = OpenSpec {
        direct: true,
        write: false,
    };
    match iolab::file::open(&f.path, spec) {
        Ok(fh) => Ok((Some(fh), unit as u64)),
        Err(iolab::Error::Unsupported { .. }) => Ok((None, 4096)),
        Err(e) => Err(GpuError::layer(&f.path, e)),
    }
}

/// One span of a file to stream.
struct Span<'a> {
    file: &'a File,
    f: &'a Opened,
    start: u64,
    end: u64,
    chunk: usize,
    depth: u32,
}

impl Span<'_> {
    /// Reads the span into `mem`, copying each piece's wanted bytes out as
    /// it lands; fails if the file ends first.
    fn stream(
        &self,
        mem: &mut [u8],
        copier: &mut dyn CopyNow,
        router: &Router<'_>,
        c: &mut Counters,
    ) -> Result<(), GpuError> {
        let t = Instant::now();
        let mut failed: Option<GpuError> = None;
        let mut copy = Duration::ZERO;
        let mut bytes = 0u64;
        let got = {
            let mut deliver = |off: u64, b: &[u8]| -> bool {
                let t = Instant::now();
                let r = router.each(off, b.len(), |s, n, at| {
                    bytes += n as u64;
                    copier.copy_now(&b[s..s + n], at)
                });
                copy += t.elapsed();
                match r {
                    Ok(()) => true,
                    Err(e) => {
                        failed = Some(e);
                        false
                    }
                }
            };
            self.read(mem, &mut deliver)?
        };
        if let Some(e) = failed {
            return Err(e);
        }
        c.copy += copy;
        c.read += t.elapsed().saturating_sub(copy);
        c.bytes += bytes;
        let want = self.end - self.start;
        if got < want {
            return Err(GpuError::ShortFile {
                path: self.f.path.clone(),
                at: self.start + got,
                missing: want - got,
            });
        }
        Ok(())
    }

    /// The ring, or plain preads where there is no io_uring (or
    /// `IOLAB_FORCE_PREAD=1`); returns the bytes delivered.
    fn read(
        &self,
        mem: &mut [u8],
        deliver: &mut dyn FnMut(u64, &[u8]) -> bool,
    ) -> Result<u64, GpuError> {
        let force = std::env::var_os(crate::whole::FORCE_PREAD_ENV).is_some_and(|v| v != "0");
        if !force {
            let r = ring::stream_file(
                self.file, self.start, self.end, self.chunk, self.depth, mem, false, deliver,
            );
            match r {
                Ok(n) => return Ok(n),
                Err(StreamError::Setup) => {}
                Err(StreamError::Read(o, e)) => {
                    return Err(GpuError::io(&self.f.path, o, self.chunk, e))
                }
            }
        }
        self.preads(&mut mem[..self.chunk], deliver)
    }

    /// In file order, one piece at a time into `buf`.
    fn preads(
        &self,
        buf: &mut [u8],
        deliver: &mut dyn FnMut(u64, &[u8]) -> bool,
    ) -> Result<u64, GpuError> {
        let mut off = self.start;
        while off < self.end {
            let n = match self.file.read_at(buf, off) {
                Ok(0) => break,
                Ok(n) => n.min((self.end - off) as usize),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(GpuError::io(&self.f.path, off, buf.len(), e)),
            };
            if !deliver(off, &buf[..n]) {
                break;
            }
            off += n as u64;
        }
        Ok(off - self.start)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::host::HostTarget;
    use crate::gpu::ranges::{open_all, Range, Source};

    #[test]
    fn without_io_uring_plain_preads_deliver_the_same_bytes() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        let v: Vec<u8> = (0..300_001u32).map(|i| (i % 253) as u8).collect();
        std::fs::write(&p, &v).unwrap();
        let src = Source {
            path: p.clone(),
            ranges: vec![Range {
                offset: 5000,
                len: 295_001,
                at: 1,
            }],
        };
        let opened = open_all(&[src], 300_000).unwrap();
        let mut out = vec![0u8; 300_000];
        let target = HostTarget::new(&mut out);
        let mut lane = target.lane(2, 64 << 10, false).unwrap();
        let (mem, copier) = lane.split().unwrap();
        let router = Router::new(&opened[0].ranges);
        let span = Span {
            file: &opened[0].file,
            f: &opened[0],
            start: 4096,
            end: 300_001,
            chunk: 64 << 10,
            depth: 2,
        };
        let got = {
            let mut deliver = |off: u64, b: &[u8]| {
                router
                    .each::<GpuError>(off, b.len(), |s, n, at| copier.copy_now(&b[s..s + n], at))
                    .is_ok()
            };
            span.preads(&mut mem[..64 << 10], &mut deliver).unwrap()
        };
        drop(lane);
        drop(target);
        assert_eq!(got, 300_001 - 4096);
        assert_eq!(out[0], 0);
        assert!(out[1..295_002] == v[5000..], "bytes differ");
        assert!(out[295_002..].iter().all(|&b| b == 0));
    }
}
