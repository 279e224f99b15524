//! The engine, the direction of I/O, its sizes and the order of its
//! offsets, the queue, and caching.

use super::given::Given;
use crate::parse::RawJob;
use crate::value;
use crate::FioJobError;
use iolab::engine::{EngineKind, EngineOpts};
use iolab_bench::sizes::{BlockSizes, SizeLaw};
use iolab_bench::spec::{AccessPattern, CacheMode, OpMix, TrimMix};

/// fio's name of an engine (iolab's own name for one fio lacks).
pub(super) fn fio_name(e: EngineKind) -> &'static str {
    e.desc().fio.unwrap_or(e.name())
}

fn engine_of(name: &str) -> Result<EngineKind, String> {
    if let Some(k) = EngineKind::of_fio(name) {
        return Ok(k);
    }
    if name == super::gpu::LIBCUFILE {
        // fio's synchronous engine: pread, then the copy (map/gpu.rs).
        return Ok(EngineKind::Pread);
    }
    if matches!(name, "vsync" | "pvsync") {
        return Err(format!(
            "'{name}' (readv/preadv of one buffer) is not an iolab engine; pvsync2 (preadv2) or psync (pread) are"
        ));
    }
    let ours: Vec<&str> = iolab::engine::ENGINES
        .iter()
        .filter_map(|d| d.fio.ok())
        .collect();
    Err(format!(
        "'{name}' is not an engine iolab has ({})",
        ours.join(", ")
    ))
}

/// The job's `ioengine` (fio's default psync), read before any other
/// option so that an engine iolab lacks is blamed at its own line.
pub(super) fn engine_named(job: &RawJob) -> Result<EngineKind, FioJobError> {
    match job.opts.iter().rev().find(|o| o.key == "ioengine") {
        None => Ok(EngineKind::Pread),
        Some(o) => {
            let v = o.value.as_deref().unwrap_or("").trim();
            // fio's ioengine=NAME:/path loads an external engine.
            engine_of(v).map_err(|e| o.loc.err(format!("ioengine={v}: {e}")))
        }
    }
}

/// The options of the job's engine.
pub(super) fn engine_opts(g: &Given, engine: EngineKind) -> Result<EngineOpts, FioJobError> {
    let mut opts = EngineOpts::default();
    for k in [
        "fixedbufs",
        "registerfiles",
        "sqthread_poll",
        "sqthread_poll_cpu",
    ] {
        if g.get(k).is_some() && engine != EngineKind::Uring {
            return Err(g.refuse(k, "an io_uring option; this job's ioengine is not io_uring"));
        }
    }
    opts.uring.fixed_bufs = g.flag("fixedbufs", false)?;
    opts.uring.reg_files = g.flag("registerfiles", false)?;
    opts.uring.sqpoll = g.flag("sqthread_poll", false)?;
    if let Some(c) = g.int("sqthread_poll_cpu")? {
        opts.uring.sqpoll_cpu = Some(c as u32);
        if !opts.uring.sqpoll {
            return Err(g.refuse("sqthread_poll_cpu", "needs sqthread_poll=1"));
        }
    }
    if g.flag("hipri", false)? {
        match engine {
            EngineKind::Preadv2 => opts.hipri = true,
            EngineKind::Uring => opts.uring.iopoll = true,
            _ => return Err(g.refuse("hipri", "only pvsync2 and io_uring take hipri")),
        }
    }
    if let Some((v, _)) = g.val("mem") {
        use iolab::mem::MemKind;
        opts.mem = match v.split(':').next().unwrap_or("").trim() {
            "malloc" | "shm" | "mmap" | "mmapshared" => MemKind::Malloc,
            "mmaphuge" | "shmhuge" => MemKind::Hugetlb,
            "cudamalloc" => return Err(g.refuse("mem", "fio's buffers in GPU memory are for GPUDirect RDMA with ioengine=rdma, which iolab does not run; to read files into a GPU, use ioengine=libcufile")),
            _ => return Err(g.refuse("mem", "iolab's buffers are malloc, shm or mmap (ordinary pages) or mmaphuge/shmhuge (huge pages)")),
        };
    } else {
        // fio's default.
        opts.mem = iolab::mem::MemKind::Malloc;
    }
    Ok(opts)
}

/// What `rw`, the size options and the random options decide.
pub(super) struct Direction {
    pub op: OpMix,
    pub random: bool,
    /// The offsets' unit: the block size, or with sizes that vary the
    /// alignment (fio's `blockalign`, the smallest size by default).
    pub bs: u64,
    /// Sizes that vary per I/O.
    pub sizes: Option<BlockSizes>,
    pub pattern: AccessPattern,
    pub trim: Option<TrimMix>,
}

/// `rw` into (ops, random, trims, its `:N`: the bytes skipped after each
/// sequential I/O (negative: moved back), or the I/Os per random offset,
/// 0 when not given).
fn rw_of(v: &str) -> Result<(OpMix, bool, Option<TrimMix>, i64), String> {
    let (mode, suffix) = match v.split_once(':') {
        Some((m, s)) => (m.trim(), Some(s.trim())),
        None => (v.trim(), None),
    };
    let trim = |only| Some(TrimMix { only });
    let (op, random, t) = match mode {
        "read" => (OpMix::Read, false, None),
        "write" => (OpMix::Write, false, None),
        "randread" => (OpMix::Read, true, None),
        "randwrite" => (OpMix::Write, true, None),
        "rw" | "readwrite" => (OpMix::Rw { read_pct: 50 }, false, None),
        "randrw" => (OpMix::Rw { read_pct: 50 }, true, None),
        "trim" => (OpMix::Write, false, trim(true)),
        "randtrim" => (OpMix::Write, true, trim(true)),
        "trimwrite" => (OpMix::Write, false, trim(false)),
        "randtrimwrite" => (OpMix::Write, true, trim(false)),
        _ => {
            return Err(format!(
                "'{mode}' is not an I/O pattern (read, write, randread, randwrite, rw, randrw, trim, randtrim, trimwrite, randtrimwrite)"
            ))
        }
    };
    let n = match suffix {
        None => 0,
        Some(n) if random => n
            .parse::<u32>()
            .map_err(|_| format!("':{n}': the I/Os per random offset, a number (e.g. :8)"))?
            .into(),
        Some(n) => match n.strip_prefix('-') {
            Some(back) => -(value::bytes(back).map_err(|e| format!(":{n}: {e}"))? as i64),
            None => value::bytes(n).map_err(|e| format!(":{n}: {e}"))? as i64,
        },
    };
    Ok((op, random, t, n))
}

/// A `bs`-like list `R,W,T` of one kind of law per direction: empty
/// fields keep the default; a single value sets every direction; a
/// second without a third sets trims like writes.
fn per_direction(
    v: &str,
    one: impl Fn(&str) -> Result<SizeLaw, String>,
) -> Result<[Option<SizeLaw>; 3], String> {
    if v.trim().is_empty() {
        return Err("no value: a size is needed (e.g. 4k)".into());
    }
    let parts: Vec<&str> = v.split(',').map(str::trim).collect();
    let law = |s: &str| {
        if s.is_empty() {
            Ok(None)
        } else {
            one(s).map(Some)
        }
    };
    let r = law(parts[0])?;
    let w = match parts.get(1) {
        Some(s) => law(s)?,
        None => r.clone(),
    };
    let t = match parts.get(2) {
        Some(s) => law(s)?,
        None => w.clone(),
    };
    Ok([r, w, t])
}

/// `bsrange=lo-hi`: uniform in the range.
fn range_of(s: &str, unaligned: bool) -> Result<SizeLaw, String> {
    let (lo, hi) = s
        .split_once('-')
        .or_else(|| s.split_once(':'))
        .ok_or_else(|| format!("'{s}': a range is LOW-HIGH (e.g. 4k-16k)"))?;
    let (lo, hi) = (value::bytes(lo)?, value::bytes(hi)?);
    let (lo, hi) = (lo.min(hi), lo.max(hi));
    Ok(if lo == hi {
        SizeLaw::Fixed(lo)
    } else {
        SizeLaw::Range { lo, hi, unaligned }
    })
}

/// `bssplit=4k/10:64k/50:32k/40`: sizes with weights; a size without a
/// weight shares what the others leave.
fn split_of(s: &str) -> Result<SizeLaw, String> {
    let mut v: Vec<(u64, Option<u32>)> = Vec::new();
    for part in s.split(':').filter(|p| !p.trim().is_empty()) {
        let (b, w) = match part.split_once('/') {
            Some((b, w)) if !w.trim().is_empty() => {
                let w: u32 = w
                    .trim()
                    .parse()
                    .map_err(|_| format!("'{part}': a bssplit entry is SIZE/PERCENT"))?;
                (value::bytes(b)?, Some(w))
            }
            Some((b, _)) => (value::bytes(b)?, None),
            None => (value::bytes(part)?, None),
        };
        v.push((b, w));
    }
    let given: u32 = v.iter().filter_map(|(_, w)| *w).sum();
    if given > 100 {
        return Err(format!(
            "'{s}': the weights add up to {given}%, more than 100"
        ));
    }
    let open = v.iter().filter(|(_, w)| w.is_none()).count() as u32;
    let share = (100 - given).checked_div(open).unwrap_or(0);
    let out: Vec<(u64, u32)> = v
        .into_iter()
        .map(|(b, w)| (b, w.unwrap_or(share)))
        .filter(|(_, w)| *w > 0)
        .collect();
    if out.is_empty() {
        return Err(format!("'{s}': no size with a weight above 0"));
    }
    Ok(match out.as_slice() {
        [(b, _)] => SizeLaw::Fixed(*b),
        _ => SizeLaw::Split(out),
    })
}

/// The sizes of each direction: `bs`, `bsrange` and `bssplit`, the last
/// given winning (fio's order of precedence: bssplit over bsrange over bs).
fn sizes_of(g: &Given) -> Result<[SizeLaw; 3], FioJobError> {
    let unaligned = g.flag("bs_unaligned", false)?;
    let mut laws: [SizeLaw; 3] = [
        SizeLaw::Fixed(4096),
        SizeLaw::Fixed(4096),
        SizeLaw::Fixed(4096),
    ];
    let mut apply = |set: [Option<SizeLaw>; 3]| {
        for (l, s) in laws.iter_mut().zip(set) {
            if let Some(s) = s {
                *l = s;
            }
        }
    };
    if let Some(v) = g.parse("bs", |v| {
        per_direction(v, |s| value::bytes(s).map(SizeLaw::Fixed))
    })? {
        apply(v);
    }
    if let Some(v) = g.parse("bsrange", |v| per_direction(v, |s| range_of(s, unaligned)))? {
        apply(v);
    }
    if let Some(v) = g.parse("bssplit", |v| per_direction(v, split_of))? {
        apply(v);
    }
    for (k, l) in ["bs", "bsrange", "bssplit"].iter().zip(&laws) {
        if l.min() == 0 && g.get(k).is_some() {
            return Err(g.refuse(k, "a block size of 0 bytes"));
        }
    }
    Ok(laws)
}

/// Direction, sizes and the offsets' order.
pub(super) fn direction(g: &Given, notes: &mut Vec<String>) -> Result<Direction, FioJobError> {
    let (mut op, random, trim, gap) = match g.val("rw") {
        Some((v, loc)) => rw_of(v).map_err(|e| loc.err(format!("rw={v}: {e}")))?,
        None => (OpMix::Read, false, None, 0),
    };
    if let OpMix::Rw { read_pct } = &mut op {
        if let Some(r) = g.int("rwmixread")? {
            *read_pct = r.min(100) as u8;
        }
        if let Some(w) = g.int("rwmixwrite")? {
            if g.pos("rwmixread") < g.pos("rwmixwrite") {
                *read_pct = 100 - w.min(100) as u8;
            }
        }
    }
    let laws = sizes_of(g)?;
    // The directions the job does.
    let used: Vec<usize> = match (op, trim) {
        (_, Some(TrimMix { only: true })) => vec![2],
        (_, Some(_)) => vec![1, 2],
        (OpMix::Read, _) => vec![0],
        (OpMix::Write, _) => vec![1],
        (OpMix::Rw { .. }, _) => vec![0, 1],
    };
    let fixed = used
        .iter()
        .map(|&d| match &laws[d] {
            SizeLaw::Fixed(b) => Some(*b),
            _ => None,
        })
        .collect::<Option<Vec<u64>>>()
        .filter(|v| v.windows(2).all(|w| w[0] == w[1]));
    let (bs, sizes) = match fixed {
        Some(v) => (v[0], None),
        None => {
            let min = used.iter().map(|&d| laws[d].min()).min().unwrap_or(4096);
            let align = g.parse("ba", |v| {
                per_direction(v, |s| value::bytes(s).map(SizeLaw::Fixed))
            })?;
            let align = align
                .and_then(|a| used.iter().find_map(|&d| a[d].as_ref().map(SizeLaw::min)))
                .unwrap_or(min);
            let [read, write, trim] = laws;
            notes.push(format!(
                "sizes vary per I/O: offsets aligned to {align} bytes, buffers as long as the largest size"
            ));
            (align.max(1), Some(BlockSizes { read, write, trim }))
        }
    };
    let pattern = pattern_of(g, random, gap, notes)?;
    Ok(Direction {
        op,
        random,
        bs,
        sizes,
        pattern,
        trim,
    })
}

/// The offsets' pattern: `rw`'s order (and its `:N`: a gap, a step back,
/// or I/Os per random offset), the random map and `random_distribution`.
pub(super) fn pattern_of(
    g: &Given,
    random: bool,
    gap: i64,
    notes: &mut Vec<String>,
) -> Result<AccessPattern, FioJobError> {
    if random && gap > 1 {
        return run_pattern(g, gap as u64, notes);
    }
    let mut pattern = if !random {
        if gap < 0 {
            notes.push(format!(
                "rw=...:{gap}: {} bytes back after each I/O, wrapping to the end as fio does (iolab pattern back:{})",
                -gap, -gap
            ));
            AccessPattern::Back(gap.unsigned_abs())
        } else if gap > 0 {
            notes.push(format!(
                "rw=...:{gap}: {gap} bytes skipped after each I/O (iolab pattern stride:{gap})"
            ));
            AccessPattern::Stride(gap as u64)
        } else {
            AccessPattern::Seq
        }
    } else if g.flag("norandommap", false)? {
        notes.push(
            "norandommap: uniformly random offsets with replacement (iolab pattern rand)".into(),
        );
        AccessPattern::Rand
    } else {
        notes.push("random map: every block once in random order (iolab pattern shuffle)".into());
        AccessPattern::Shuffle
    };
    if let Some((v, loc)) = g.val("random_distribution") {
        if let Some(p) = table_law(g, v, random, notes)? {
            return Ok(p);
        }
        match iolab_bench::skew::Skew::parse(v) {
            _ if v == "random" => {}
            Some(Ok(k)) if random => {
                // fio turns its random map off for these laws, as iolab draws.
                notes.push(format!("random_distribution={v}: iolab pattern {k}"));
                pattern = AccessPattern::Skewed(k);
            }
            Some(Ok(_)) => {}
            Some(Err(e)) => return Err(loc.err(format!("random_distribution={v}: {e}"))),
            None => {
                return Err(loc.err(format!(
                    "random_distribution={v}: iolab draws random, zipf:THETA, pareto:H, normal:DEV, zoned and zoned_abs"
                )))
            }
        }
    }
    Ok(pattern)
}

/// `random_distribution=zoned:A/S:...` and `sequence:I,J,...` (with
/// `random_sequence_stride`): the laws given as tables. `zoned_abs` is
/// resolved against the region once it is known ([`zoned_abs`]).
fn table_law(
    g: &Given,
    v: &str,
    random: bool,
    notes: &mut Vec<String>,
) -> Result<Option<AccessPattern>, FioJobError> {
    use iolab_bench::zones::{BlockSeq, Zones};
    if !random {
        return Ok(None);
    }
    if let Some(z) = v.strip_prefix("zoned:") {
        let zones = Zones::parse_percent(z).map_err(|e| g.refuse("random_distribution", &e))?;
        notes.push(format!("random_distribution={v}: each zone takes its share of accesses, uniformly inside it (iolab pattern zoned)"));
        return Ok(Some(AccessPattern::Zoned(zones)));
    }
    if v.starts_with("zoned_abs:") {
        // A placeholder until the region is known.
        return Ok(Some(AccessPattern::Rand));
    }
    if let Some(q) = v.strip_prefix("sequence:") {
        let idx: Vec<u32> = q
            .split(',')
            .map(|x| x.trim().parse::<u32>())
            .collect::<Result<_, _>>()
            .map_err(|_| {
                g.refuse(
                    "random_distribution",
                    "sequence:I,J,... takes block indices",
                )
            })?;
        let stride = g.flag("random_sequence_stride", false)?;
        let seq = BlockSeq::new(&idx, stride).map_err(|e| g.refuse("random_distribution", &e))?;
        notes.push(format!(
            "random_distribution={v}: blocks {q} in that order{}",
            if stride {
                ", then the next group of as many"
            } else {
                ", repeated"
            }
        ));
        return Ok(Some(AccessPattern::Sequence(seq)));
    }
    Ok(None)
}

/// `random_distribution=zoned_abs:A/SIZE:...`: zones of absolute sizes,
/// out of a region of `region` bytes.
pub(super) fn zoned_abs(
    g: &Given,
    region: u64,
    random: bool,
) -> Result<Option<AccessPattern>, FioJobError> {
    let Some((v, _)) = g.val("random_distribution") else {
        return Ok(None);
    };
    let Some(z) = v.strip_prefix("zoned_abs:").filter(|_| random) else {
        return Ok(None);
    };
    let mut pairs = Vec::new();
    for part in z.split(':').filter(|p| !p.is_empty()) {
        let (a, s) = part
            .split_once('/')
            .ok_or_else(|| g.refuse("random_distribution", "a zone is ACCESS%/SIZE"))?;
        let a: f64 = a
            .trim()
            .parse()
            .map_err(|_| g.refuse("random_distribution", "a zone is ACCESS%/SIZE"))?;
        let s = value::bytes(s).map_err(|e| g.refuse("random_distribution", &e))?;
        pairs.push((a, s as f64));
    }
    iolab_bench::zones::Zones::from_shares(&pairs, region.max(1) as f64)
        .map(|z| Some(AccessPattern::Zoned(z)))
        .map_err(|e| g.refuse("random_distribution", &e))
}

/// `rw=randread:N` (N > 1): N I/Os per random offset, the ones between
/// sequential (fio's default `rw_sequencer=sequential`).
fn run_pattern(g: &Given, n: u64, notes: &mut Vec<String>) -> Result<AccessPattern, FioJobError> {
    let n = u32::try_from(n).map_err(|_| g.refuse("rw", "too many I/Os per random offset"))?;
    if let Some((v, _)) = g.val("rw_sequencer") {
        if v.trim() == "identical" {
            return Err(g.refuse(
                "rw_sequencer",
                "iolab issues the I/Os between random offsets in sequence (rw_sequencer=sequential), not at the same offset",
            ));
        }
    }
    if g.val("random_distribution")
        .is_some_and(|(v, _)| v != "random")
    {
        return Err(g.refuse(
            "random_distribution",
            "iolab draws runs of rw=...:N from the uniform law only (random_distribution=random)",
        ));
    }
    Ok(if g.flag("norandommap", false)? {
        notes.push(format!("rw=...:{n} with norandommap: {n} blocks in order from each uniformly random one (iolab pattern rand-run:{n})"));
        AccessPattern::RandRun(n)
    } else {
        notes.push(format!("rw=...:{n} with the random map: the file in runs of {n} blocks, every run once in random order (iolab pattern shuffle-run:{n}; fio's runs start at any free block, iolab's at multiples of {n})"));
        AccessPattern::ShuffleRun(n)
    })
}

/// Queue depth and batches.
pub(super) struct Queue {
    pub qd: u32,
    pub batch_submit: u32,
    pub batch_complete: u32,
    /// `iodepth_low`, when below the depth.
    pub low: Option<u32>,
    /// `io_submit_mode=offload`.
    pub offload: bool,
}

/// `iodepth`, the batch options, `iodepth_low` and `io_submit_mode`.
pub(super) fn queue(
    g: &Given,
    engine: EngineKind,
    notes: &mut Vec<String>,
) -> Result<Queue, FioJobError> {
    // fio's minimum is 1; iolab's rings hold at most 65536 entries.
    let qd = g.int("iodepth")?.unwrap_or(1);
    if !(1..=65536).contains(&qd) {
        return Err(g.refuse("iodepth", "must be 1..=65536"));
    }
    let mut qd = qd as u32;
    if engine.is_sync() && qd > 1 {
        notes.push(format!(
            "iodepth={qd} with the synchronous engine {}: one I/O in flight, as fio does",
            fio_name(engine)
        ));
        qd = 1;
    }
    // fio clamps the batches to the depth.
    let mut clamp = |k: &str, v: u64| -> u32 {
        if v > qd as u64 {
            notes.push(format!(
                "{k}={v} above iodepth={qd}: {qd}, as fio clamps it"
            ));
        }
        v.clamp(1, qd as u64) as u32
    };
    let batch_submit = match g.int("iodepth_batch")? {
        Some(v) => clamp("iodepth_batch", v),
        None => 1,
    };
    let batch_complete = match g.int("iodepth_batch_complete_min")? {
        Some(v) => clamp("iodepth_batch_complete_min", v),
        None => 1,
    };
    if g.get("iodepth_batch_complete_max").is_some() {
        notes.push(
            "iodepth_batch_complete_max: iolab reaps every completion available, up to iodepth"
                .into(),
        );
    }
    let low = g.int("iodepth_low")?.map(|l| l as u32).filter(|l| *l < qd);
    if let Some(l) = low {
        notes.push(format!(
            "iodepth_low={l}: once {qd} I/Os are in flight, the next goes when {l} are left"
        ));
    }
    let offload = offload(g, notes)?;
    Ok(Queue {
        qd,
        batch_submit,
        batch_complete,
        low,
        offload,
    })
}

/// `io_submit_mode`: whether I/O is offloaded (fio's `offload`).
fn offload(g: &Given, notes: &mut Vec<String>) -> Result<bool, FioJobError> {
    match g.val("io_submit_mode") {
        None => Ok(false),
        Some((v, _)) => match v.trim() {
            "inline" => Ok(false),
            "offload" => {
                notes.push("io_submit_mode=offload: I/O is still submitted from the job's thread, but a rate no longer waits for the I/O in flight, as fio's offload mode".into());
                Ok(true)
            }
            _ => Err(g.refuse("io_submit_mode", "one of inline, offload")),
        },
    }
}

/// `direct`/`buffered`, `invalidate`, `pre_read` and `fadvise_hint`.
pub(super) fn caching(
    g: &Given,
    notes: &mut Vec<String>,
) -> Result<(bool, CacheMode), FioJobError> {
    let mut direct = g.flag("direct", false)?;
    if let Some(b) = g.get("buffered") {
        let buffered = value::boolean(b.value.as_deref()).map_err(|e| super::given::bad(b, &e))?;
        if g.pos("direct") < g.pos("buffered") {
            direct = !buffered;
        }
    }
    let cache = if g.flag("pre_read", false)? {
        notes.push(
            "pre_read: the files are read into the page cache before the job (iolab cache warm)"
                .into(),
        );
        CacheMode::Warm
    } else if g.flag("invalidate", true)? {
        CacheMode::Cold
    } else {
        CacheMode::AsIs
    };
    if let Some((v, _)) = g.val("fadvise_hint") {
        if !matches!(v.trim(), "1" | "true" | "") {
            notes.push(format!(
                "fadvise_hint={v}: iolab advises the kernel of the pattern's order (sequential or random) in every job"
            ));
        }
    }
    Ok((direct, cache))
}

/// The offsets' seed: `randseed`, or fio's fixed seed (`randrepeat=1`,
/// the default) made distinct per clone as fio's thread numbers make it.
pub(super) fn seed(g: &Given, jobnum: u32) -> Result<u64, FioJobError> {
    let base = match g.int("randseed")? {
        Some(s) => s,
        None if g.flag("randrepeat", true)? => 42,
        None => iolab_bench::record::unix_ms(),
    };
    Ok(base ^ (jobnum as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15))
}
