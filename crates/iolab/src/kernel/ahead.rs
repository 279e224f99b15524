//! A sequential reader that keeps the device busy ahead of its caller:
//! `depth` pieces of `chunk` bytes of an `O_DIRECT` file in flight through
//! its own io_uring, each handed out by copies as the caller's requests
//! reach it and then queued again for the piece `depth` further on. What
//! `Auto` reads a large cold file with when a program reads it in order in
//! small requests (`tar` asks for 10 KiB at a time): one copy per byte, no
//! page cache, and the device's queue never drains between requests.
//!
//! Piece `k` of the file (bytes `k * chunk ..`) lives in slot `k % depth`;
//! the window is pieces `base .. base + depth`. A request below or past
//! the window starts it again there (after every op in flight has landed).

use io_uring::{opcode, types, IoUring};
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

use super::hugebuf::HugeBuf;

/// What one slot holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    /// Nothing (past the end of the file).
    Empty,
    /// A read is in flight; `got` bytes of the piece have landed.
    Busy,
    /// The piece is complete (`got` bytes: short only at the file's end).
    Ready,
    /// The read failed with this errno.
    Failed(i32),
}

/// See the module's documentation.
pub struct Ahead {
    ring: IoUring,
    file: File,
    len: u64,
    chunk: usize,
    depth: usize,
    /// Held for `base_ptr`: never borrowed while ops are in flight.
    _bufs: HugeBuf,
    base_ptr: *mut u8,
    base: u64,
    slot: Vec<Slot>,
    got: Vec<usize>,
    inflight: usize,
    failures: u32,
}

impl Ahead {
    /// Reads `file` (opened with `O_DIRECT`; `len` bytes long) ahead in
    /// `chunk`-byte pieces (a multiple of its alignment), `depth` at a time.
    /// Nothing is read until the first [`Ahead::read_at`].
    pub fn new(file: File, len: u64, chunk: usize, depth: usize) -> io::Result<Ahead> {
        let depth = depth.clamp(1, 64);
        let chunk = chunk.max(4096);
        let mut bufs = HugeBuf::new(chunk * depth).map_err(io::Error::other)?;
        let base_ptr = bufs.as_mut_slice().as_mut_ptr();
        let ring = IoUring::new((depth as u32).next_power_of_two())?;
        Ok(Ahead {
            ring,
            file,
            len,
            chunk,
            depth,
            _bufs: bufs,
            base_ptr,
            base: 0,
            slot: vec![Slot::Empty; depth],
            got: vec![0; depth],
            inflight: 0,
            failures: 0,
        })
    }

    /// Queues the (rest of the) read of piece `k` into its slot.
    fn submit(&mut self, k: u64) {
        let s = (k % self.depth as u64) as usize;
        let at = k * self.chunk as u64 + self.got[s] as u64;
        if k * self.chunk as u64 >= self.len {
            self.slot[s] = Slot::Empty;
            return;
        }
        let ptr = self.base_ptr.wrapping_add(s * self.chunk + self.got[s]);
        let sqe = opcode::Read::new(
            types::Fd(self.file.as_raw_fd()),
            ptr,
            (self.chunk - self.got[s]) as u32,
        )
        .offset(at)
        .build()
        .user_data(k);
        // SAFETY: slot s (s*chunk .. (s+1)*chunk of `bufs`, owned by self)
        // belongs to this op until its completion is reaped: a Busy slot is
        // neither read nor queued again, and neither `restart` nor `drop`
        // lets the buffer go while ops are in flight.
        while unsafe { self.ring.submission().push(&sqe) }.is_err() {
            // The submission queue is as deep as the slots: full only with
            // entries not yet handed to the kernel.
            let _ = self.ring.submit();
        }
        self.slot[s] = Slot::Busy;
        self.inflight += 1;
    }

    /// Waits for at least one completion and records every one there is.
    fn reap(&mut self) {
        for (k, res) in super::ring::wait_some(&mut self.ring, &mut self.failures) {
            let k = k as u64;
            let s = (k % self.depth as u64) as usize;
            self.inflight -= 1;
            if res == -libc::EAGAIN || res == -libc::EINTR {
                self.submit(k);
            } else if res < 0 {
                self.slot[s] = Slot::Failed(-res);
            } else {
                self.got[s] += res as usize;
                let end = k * self.chunk as u64 + self.got[s] as u64;
                if res > 0 && self.got[s] < self.chunk && end < self.len {
                    self.submit(k); // short: the rest
                } else {
                    self.slot[s] = Slot::Ready;
                }
            }
        }
    }

    /// Waits until nothing is in flight.
    fn drain(&mut self) {
        while self.inflight > 0 {
            self.reap();
        }
    }

    /// Starts the window again at piece `k`.
    fn restart(&mut self, k: u64) {
        self.drain();
        self.base = k;
        for j in k..k + self.depth as u64 {
            self.got[(j % self.depth as u64) as usize] = 0;
            self.submit(j);
        }
        let _ = self.ring.submit();
    }

    /// Moves the window's start to piece `k` (base < k < base + depth):
    /// the slots of the pieces passed are queued for the pieces after the
    /// window.
    fn advance(&mut self, k: u64) {
        for j in self.base..k {
            let s = (j % self.depth as u64) as usize;
            while self.slot[s] == Slot::Busy {
                self.reap();
            }
            self.got[s] = 0;
            self.submit(j + self.depth as u64);
        }
        self.base = k;
        let _ = self.ring.submit();
    }

    /// Reads up to `buf.len()` bytes at `off`; 0 at the end of the file.
    pub fn read_at(&mut self, off: u64, buf: &mut [u8]) -> io::Result<usize> {
        let chunk = self.chunk as u64;
        let mut done = 0usize;
        while done < buf.len() {
            let pos = off + done as u64;
            if pos >= self.len {
                break;
            }
            let k = pos / chunk;
            if !self.in_window(k) || !self.is_loaded(k) {
                self.restart(k);
            } else if k > self.base {
                self.advance(k);
            }
            match self.copy_out(k, pos, &mut buf[done..])? {
                0 => break, // end of file
                n => done += n,
            }
        }
        Ok(done)
    }

    /// Reads `buf.len()` bytes at `off` (fewer at the end of the file) only
    /// if all of them lie in pieces the window holds, without moving it:
    /// a read out of order inside the stream's window (a database's
    /// interior page a little ahead of its scan) is served from what the
    /// stream read, and the stream goes on where it was. None otherwise.
    pub fn read_within(&mut self, off: u64, buf: &mut [u8]) -> io::Result<Option<usize>> {
        let chunk = self.chunk as u64;
        let end = off.saturating_add(buf.len() as u64).min(self.len);
        if buf.is_empty() || off >= end {
            return Ok(None);
        }
        if !(off / chunk..=(end - 1) / chunk).all(|k| self.in_window(k) && self.is_loaded(k)) {
            return Ok(None);
        }
        let mut done = 0usize;
        while off + (done as u64) < end {
            let pos = off + done as u64;
            match self.copy_out(pos / chunk, pos, &mut buf[done..])? {
                0 => break,
                n => done += n,
            }
        }
        Ok(Some(done))
    }

    /// Whether piece `k` is in the window.
    fn in_window(&self, k: u64) -> bool {
        k >= self.base && k < self.base + self.depth as u64
    }

    /// Copies from piece `k` (in the window, loaded), from file offset
    /// `pos` on, as much of `out` as the piece holds, once it has landed;
    /// 0 past the end of the file.
    fn copy_out(&mut self, k: u64, pos: u64, out: &mut [u8]) -> io::Result<usize> {
        let s = (k % self.depth as u64) as usize;
        while self.slot[s] == Slot::Busy {
            self.reap();
        }
        if let Slot::Failed(e) = self.slot[s] {
            // Read it again from here next time.
            self.slot[s] = Slot::Empty;
            self.got[s] = 0;
            return Err(io::Error::from_raw_os_error(e));
        }
        let inner = (pos - k * self.chunk as u64) as usize;
        let avail = self.got[s];
        if inner >= avail {
            return Ok(0);
        }
        let n = (avail - inner).min(out.len());
        // SAFETY: slot s is Ready: no op in flight writes it (ops in
        // flight write other slots, through the same base pointer, so
        // no reference to the whole buffer is made here); from + n is
        // inside it (inner + n <= got[s] <= chunk).
        unsafe {
            std::ptr::copy_nonoverlapping(
                self.base_ptr.add(s * self.chunk + inner),
                out.as_mut_ptr(),
                n,
            );
        }
        Ok(n)
    }

    /// Whether piece `k`'s slot holds it (in flight or landed).
    fn is_loaded(&self, k: u64) -> bool {
        let s = (k % self.depth as u64) as usize;
        matches!(self.slot[s], Slot::Busy | Slot::Ready)
    }
}

// SAFETY: `base_ptr` points into `_bufs`, owned by this value and moved
// with it (the mapping does not move); only `&mut self` methods use it.
unsafe impl Send for Ahead {}

impl Drop for Ahead {
    fn drop(&mut self) {
        // The buffers must outlive every read the kernel may still write.
        self.drain();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::OpenOptionsExt;

    fn data(n: usize) -> Vec<u8> {
        (0..n as u64)
            .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
            .collect()
    }

    #[test]
    fn reads_in_order_skips_seeks_back_and_ends_at_the_files_end() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("f");
        let len = (5 << 16) + 1234;
        let want = data(len);
        std::fs::write(&path, &want).unwrap();
        let open = || {
            std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_DIRECT)
                .open(&path)
        };
        // tmpfs and some others refuse O_DIRECT: then a plain descriptor
        // shows the same logic.
        let f = open().or_else(|_| File::open(&path)).unwrap();
        let mut a = Ahead::new(f, len as u64, 1 << 16, 3).unwrap();
        // In order, 10,000 bytes at a time (requests span pieces).
        let mut got = Vec::new();
        let mut buf = vec![0u8; 10_000];
        loop {
            let n = a.read_at(got.len() as u64, &mut buf).unwrap();
            if n == 0 {
                break;
            }
            got.extend_from_slice(&buf[..n]);
        }
        assert_eq!(got.len(), len);
        assert!(got == want, "bytes differ");
        // A jump forward past the window, back to the start, and a read
        // running over the end.
        for (off, n) in [(4 << 16, 5000usize), (0, 70_000), (len as u64 - 10, 100)] {
            let mut b = vec![0u8; n];
            let k = a.read_at(off, &mut b).unwrap();
            let end = (off as usize + n).min(len);
            assert_eq!(k, end - off as usize, "at {off}");
            assert!(b[..k] == want[off as usize..end], "at {off}");
        }
        assert_eq!(a.read_at(len as u64, &mut buf).unwrap(), 0);
    }

    #[test]
    fn a_read_out_of_order_inside_the_window_leaves_it_where_it_was() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("f");
        let len = 6 << 16;
        let want = data(len);
        std::fs::write(&path, &want).unwrap();
        let f = File::open(&path).unwrap();
        let mut a = Ahead::new(f, len as u64, 1 << 16, 3).unwrap();
        let mut b = vec![0u8; 4096];
        assert_eq!(a.read_at(0, &mut b).unwrap(), 4096);
        // Pieces 0..3 are held: a read spanning pieces 1 and 2 is served
        // and the window stays at piece 0.
        let mut c = vec![0u8; 70_000];
        let at = (1 << 16) + 100;
        assert_eq!(a.read_within(at, &mut c).unwrap(), Some(70_000));
        assert!(c[..] == want[at as usize..at as usize + 70_000]);
        assert_eq!(a.base, 0);
        // Past the window: not served, nothing moved.
        assert_eq!(a.read_within(4 << 16, &mut b).unwrap(), None);
        assert_eq!(a.base, 0);
        // The stream goes on from where it was.
        assert_eq!(a.read_at(4096, &mut b).unwrap(), 4096);
        assert!(b[..] == want[4096..8192]);
    }
}
