//! Files into GPU memory: check the ranges, open the GPU, allocate once,
//! pick the technique, move the bytes, count.

use super::cuda::{cufile, Device, DeviceBuffer, DeviceTarget};
use super::error::GpuError;
use super::options::GpuOptions;
use super::pipeline;
use super::ranges::{self, Opened, Range, Source};
use super::stats::Stats;
use super::technique::{choose, nvidia_fs_loaded, GpuTechnique};
use std::path::Path;
use std::time::Instant;

/// Reads all of `path` into a new allocation on GPU `device`.
///
/// ```no_run
/// use iolab_reader::gpu::{self, GpuOptions};
/// let (buf, st) = gpu::load_file("model.bin".as_ref(), 0, &GpuOptions::default())?;
/// println!("{} bytes at {:#x}, {:.1} GB/s by {}", buf.len(), buf.device_ptr(), st.gb_per_s(), st.technique);
/// # Ok::<(), gpu::GpuError>(())
/// ```
pub fn load_file(
    path: &Path,
    device: usize,
    opts: &GpuOptions,
) -> Result<(DeviceBuffer, Stats), GpuError> {
    load_sources(&[Source::whole(path, 0)?], device, opts)
}

/// Reads byte ranges of `path` into a new allocation on GPU `device`, as
/// large as the furthest range's end.
pub fn load_ranges(
    path: &Path,
    ranges: &[Range],
    device: usize,
    opts: &GpuOptions,
) -> Result<(DeviceBuffer, Stats), GpuError> {
    let src = Source {
        path: path.to_path_buf(),
        ranges: ranges.to_vec(),
    };
    load_sources(&[src], device, opts)
}

/// Reads ranges of several files (checkpoint shards, say) into one new
/// allocation on GPU `device`. The files are checked before the driver is
/// touched, so a bad range or a missing file is reported as such.
pub fn load_sources(
    sources: &[Source],
    device: usize,
    opts: &GpuOptions,
) -> Result<(DeviceBuffer, Stats), GpuError> {
    let len = sources
        .iter()
        .flat_map(|s| s.ranges.iter())
        .map(|r| r.at.saturating_add(r.len))
        .max()
        .unwrap_or(0);
    let opened = ranges::open_all(sources, len)?;
    // Opening the GPU (the driver's start, once per process) is not part
    // of the transfer; the allocation is.
    let dev = Device::open(device)?;
    let t0 = Instant::now();
    let buf = DeviceBuffer::alloc(&dev, len)?;
    let setup = t0.elapsed();
    let mut st = move_opened(&buf, &opened, opts, t0)?;
    st.setup_ns += setup.as_nanos() as u64;
    Ok((buf, st))
}

/// Reads ranges of files into an existing allocation (each range's `at` is
/// an offset in it).
pub fn load_into(
    buf: &DeviceBuffer,
    sources: &[Source],
    opts: &GpuOptions,
) -> Result<Stats, GpuError> {
    let t0 = Instant::now();
    let opened = ranges::open_all(sources, buf.len())?;
    move_opened(buf, &opened, opts, t0)
}

/// The technique, then the transfer. GPUDirect Storage chosen by the
/// policy falls back to the ring if cuFile will not open (nothing has been
/// read then); asked for, its failure is the answer.
fn move_opened(
    buf: &DeviceBuffer,
    opened: &[Opened],
    opts: &GpuOptions,
    t0: Instant,
) -> Result<Stats, GpuError> {
    let asked = opts.technique;
    // Loading libcufile only where it could be chosen.
    let cufile = (asked == Some(GpuTechnique::CuFile) || nvidia_fs_loaded()) && cufile::available();
    let mut technique = choose(asked, &pipeline::facts(opened, true, cufile))?;
    if technique == GpuTechnique::CuFile {
        let t = Instant::now();
        match cufile::Session::open(buf.device(), opened) {
            Ok(s) => {
                let setup = t.elapsed();
                let pieces = ranges::pieces(opened, opts.piece());
                let (mut c, threads) = s.read(buf, opened, &pieces, opts)?;
                drop(s);
                c.setup += setup;
                return Ok(pipeline::stats(c, technique, threads, opts, t0));
            }
            Err(e) if asked.is_some() => return Err(e),
            Err(_) => technique = GpuTechnique::Ring,
        }
    }
    let (c, threads) = pipeline::run(&DeviceTarget::new(buf), opened, opts, technique)?;
    Ok(pipeline::stats(c, technique, threads, opts, t0))
}
