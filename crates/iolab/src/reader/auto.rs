//! `Auto`: decides per request with [`policy::decide`](super::policy::decide)
//! from the request, what this reader has seen of the file (a sequential
//! stream detector, the fraction read so far, re-reads), the file's state
//! (its length against available memory, residency sampled with mincore)
//! and the profile; then reads with the chosen technique. The state is
//! atomics only: no lock on the hot path.

use super::buffered::Buffered;
use super::direct::Direct;
use super::many::ReadReq;
use super::mapped::Mapped;
use super::policy::{self, Choice, Situation};
use super::profile::Profile;
use super::stream::Stream;
use super::uring::UringReader;
use super::{Backend, Options, Result, Src};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, OnceLock};

/// Environment variable that makes `Auto` log each decision on stderr.
pub const TRACE_ENV: &str = "IOLAB_TRACE_POLICY";

/// Most bits of the "touched" map (one per chunk of the file).
const TOUCH_BITS: u64 = 1 << 16;

struct State {
    last_end: AtomicU64,
    run: AtomicU32,
    chunk_shift: u32,
    touched: Vec<AtomicU64>,
    touched_n: AtomicU64,
    chunks: u64,
    requests: AtomicU64,
    refresh_every: u64,
    resident: AtomicU64,
    available: AtomicU64,
}

/// The adaptive technique.
pub(crate) struct Auto {
    src: Arc<Src>,
    profile: Arc<Profile>,
    mapped: Option<Mapped>,
    stream: Stream,
    buffered: OnceLock<Buffered>,
    uring_seq: UringReader,
    uring_rand: UringReader,
    direct: OnceLock<Option<Direct>>,
    budget: Option<u64>,
    trace: bool,
    st: State,
}

impl Auto {
    pub(crate) fn new(src: Arc<Src>, opts: &Options) -> Result<Self> {
        let profile = opts
            .profile
            .clone()
            .unwrap_or_else(super::profile::process_profile);
        if let Some(w) = profile.device_warning(&src.path) {
            static ONCE: std::sync::Once = std::sync::Once::new();
            ONCE.call_once(|| eprintln!("{w}"));
        }
        // A file too large to map on this machine is simply never mapped.
        let mapped = Mapped::new(src.clone()).ok();
        let mut chunk_shift = 20u32;
        while (src.len >> chunk_shift) > TOUCH_BITS {
            chunk_shift += 1;
        }
        let chunks = (src.len >> chunk_shift) + 1;
        let pages = src.len / 4096 + 1;
        let st = State {
            last_end: AtomicU64::new(u64::MAX),
            run: AtomicU32::new(0),
            chunk_shift,
            touched: (0..chunks.div_ceil(64))
                .map(|_| AtomicU64::new(0))
                .collect(),
            touched_n: AtomicU64::new(0),
            chunks,
            requests: AtomicU64::new(0),
            // mincore costs about one byte per page: sample it every so
            // many requests that its cost stays a small share.
            refresh_every: (pages / 256).clamp(64, 1 << 16),
            resident: AtomicU64::new(0f64.to_bits()),
            available: AtomicU64::new(0),
        };
        let a = Auto {
            stream: Stream::new(src.clone()),
            uring_seq: UringReader::new(src.clone(), profile.seq_depth),
            uring_rand: UringReader::new(src.clone(), profile.random_depth),
            buffered: OnceLock::new(),
            direct: OnceLock::new(),
            budget: opts.memory_budget,
            trace: std::env::var_os(TRACE_ENV).is_some_and(|v| v != "0"),
            mapped,
            profile,
            src,
            st,
        };
        a.refresh();
        Ok(a)
    }

    fn refresh(&self) {
        let r = match &self.mapped {
            Some(m) => m.mapping().and_then(|m| m.residency().ok()).map(|(r, t)| {
                if t == 0 {
                    1.0
                } else {
                    r as f64 / t as f64
                }
            }),
            None => crate::cache::residency(&self.src.path, self.src.len)
                .ok()
                .map(|r| r.fraction()),
        };
        self.st.resident.store(r.unwrap_or(0.0).to_bits(), Relaxed);
        let avail = self
            .budget
            .or_else(super::mem_available)
            .unwrap_or(u64::MAX);
        self.st.available.store(avail, Relaxed);
    }

    /// Updates what this reader has seen with one request and describes it.
    fn observe(&self, off: u64, len: usize, batch: usize) -> Situation {
        let st = &self.st;
        let n = st.requests.fetch_add(1, Relaxed);
        if n > 0 && n.is_multiple_of(st.refresh_every) {
            self.refresh();
        }
        let end = off.saturating_add(len as u64);
        let prev = st.last_end.swap(end, Relaxed);
        let run = if prev == off {
            st.run.fetch_add(1, Relaxed) + 1
        } else {
            st.run.store(0, Relaxed);
            0
        };
        let mut reread = false;
        if len > 0 {
            let first = off >> st.chunk_shift;
            let last = ((end - 1) >> st.chunk_shift).min(st.chunks - 1);
            // Mark at most 64 chunks per request: enough to see re-reads.
            for c in first..=last.min(first + 63) {
                let bit = 1u64 << (c % 64);
                let old = st.touched[(c / 64) as usize].fetch_or(bit, Relaxed);
                if old & bit != 0 {
                    reread = true;
                } else {
                    st.touched_n.fetch_add(1, Relaxed);
                }
            }
        }
        Situation {
            len,
            offset: off,
            file_len: self.src.len,
            sequential: run >= 2,
            fraction_read: st.touched_n.load(Relaxed) as f64 / st.chunks as f64,
            reread,
            resident: f64::from_bits(st.resident.load(Relaxed)),
            available: st.available.load(Relaxed),
            batch,
        }
    }

    fn choose(&self, off: u64, len: usize, batch: usize) -> Choice {
        let s = self.observe(off, len, batch);
        let d = policy::decide(&s, &self.profile);
        if self.trace {
            eprintln!(
                "policy: {} offset {off} len {len}: {:?} ({}) [seq {} read {:.2} reread {} resident {:.2}]",
                self.src.path.display(),
                d.choice,
                d.reason,
                s.sequential,
                s.fraction_read,
                s.reread,
                s.resident
            );
        }
        d.choice
    }

    fn backend(&self, c: Choice) -> &dyn Backend {
        match c {
            Choice::Mapped => match &self.mapped {
                Some(m) => m,
                None => &self.stream,
            },
            Choice::Pread => &self.stream,
            Choice::Buffered { block } => self
                .buffered
                .get_or_init(|| Buffered::new(self.src.clone(), block)),
            Choice::Uring { depth } if depth == self.profile.random_depth => &self.uring_rand,
            Choice::Uring { .. } => &self.uring_seq,
            Choice::Direct => match self
                .direct
                .get_or_init(|| Direct::new(self.src.clone()).ok())
            {
                Some(d) => d,
                None => &self.uring_seq,
            },
        }
    }
}

impl Backend for Auto {
    fn read_at(&self, off: u64, buf: &mut [u8]) -> Result<usize> {
        let c = self.choose(off, buf.len(), 1);
        self.backend(c).read_at(off, buf)
    }

    fn read_many(&self, reqs: &mut [ReadReq<'_>], done: &mut dyn FnMut(usize, &ReadReq<'_>)) {
        let batch = reqs.len();
        let choices: Vec<Choice> = reqs
            .iter()
            .map(|r| self.choose(r.offset, r.buf.len(), batch))
            .collect();
        // Cheap choices (copies out of memory) inline; the rest grouped by
        // technique and handed over as batches.
        let mut groups: Vec<(Choice, Vec<usize>)> = Vec::new();
        for (i, c) in choices.iter().enumerate() {
            match c {
                Choice::Mapped | Choice::Pread | Choice::Buffered { .. } => {
                    let r = &mut reqs[i];
                    r.result = Some(self.backend(*c).read_at(r.offset, r.buf));
                    done(i, &reqs[i]);
                }
                _ => match groups.iter_mut().find(|(g, _)| g == c) {
                    Some((_, v)) => v.push(i),
                    None => groups.push((*c, vec![i])),
                },
            }
        }
        for (c, idx) in groups {
            let mut sub: Vec<ReadReq<'_>> = idx
                .iter()
                .map(|&i| ReadReq::new(reqs[i].offset, std::mem::take(&mut reqs[i].buf)))
                .collect();
            self.backend(c).read_many(&mut sub, &mut |_, _| {});
            for (k, &i) in idx.iter().enumerate() {
                let s = &mut sub[k];
                reqs[i].buf = std::mem::take(&mut s.buf);
                reqs[i].result = s.result.take();
                done(i, &reqs[i]);
            }
        }
    }
}
