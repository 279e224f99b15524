//! fio's file → GPU engine, `ioengine=libcufile`, on iolab's pipeline:
//! each read (pread, one at a time, as fio's synchronous engine issues
//! them) lands in page-locked host memory and is copied into the job's GPU
//! inside the op, so its latency covers the read and the copy
//! (`WorkloadSpec::copy_to_gpu`). fio's `gpu_dev_ids` picks the GPU, round
//! robin over a section's clones as fio does; `cuda_io=posix` is that very
//! path in fio, and `cuda_io=cufile` (GPUDirect Storage) runs on it with a
//! note, since iolab has no per-op cuFile engine. Writes from GPU memory
//! are refused.

use super::given::Given;
use crate::parse::RawJob;
use crate::FioJobError;

/// fio's name of its file → GPU engine.
pub(super) const LIBCUFILE: &str = "libcufile";

/// Whether the job's last `ioengine` is libcufile.
pub(super) fn is_libcufile(job: &RawJob) -> bool {
    job.opts
        .iter()
        .rev()
        .find(|o| o.key == "ioengine")
        .is_some_and(|o| o.value.as_deref().map(str::trim) == Some(LIBCUFILE))
}

/// The GPU each read of this clone (`jobnum` of its section) is copied
/// into, or None for a job of another engine. libcufile's options on a job
/// of another engine, a malformed `gpu_dev_ids`, an unknown `cuda_io`,
/// `cuda_io=cufile` without `direct=1`, and writes are refused; what runs
/// differently from fio is noted.
pub(super) fn gpu(
    job: &RawJob,
    g: &Given,
    (jobnum, writes, direct): (u32, bool, bool),
    notes: &mut Vec<String>,
) -> Result<Option<u32>, FioJobError> {
    if !is_libcufile(job) {
        for k in ["gpu_dev_ids", "cuda_io"] {
            if g.get(k).is_some() {
                return Err(g.refuse(
                    k,
                    "an option of ioengine=libcufile; this job's ioengine is another",
                ));
            }
        }
        return Ok(None);
    }
    let ids = match g.val("gpu_dev_ids") {
        None => vec![0],
        Some((v, _)) => dev_ids(v).map_err(|e| g.refuse("gpu_dev_ids", &e))?,
    };
    let n = ids[jobnum as usize % ids.len()];
    let mode = g.val("cuda_io").map_or("cufile", |(v, _)| v.trim());
    let how = match mode {
        "posix" => "as fio's posix mode does: pread into host memory, then the copy",
        "cufile" if direct => "as cuFile's compatibility mode does: pread with O_DIRECT into page-locked memory, then the copy; GPUDirect Storage's direct path is not taken",
        "cufile" => {
            let why = "ioengine=libcufile with cuda_io=cufile (its default) needs direct=1, as in fio; or give cuda_io=posix";
            return Err(refuse(job, g, "cuda_io", why));
        }
        other => {
            let why = format!("'{other}' is not a cuda_io mode (cufile or posix)");
            return Err(refuse(job, g, "cuda_io", &why));
        }
    };
    if writes {
        let why = format!("ioengine=libcufile: iolab copies what is read into GPU {n}; writes out of GPU memory are not run (rw=read or randread)");
        return Err(refuse(job, g, "rw", &why));
    }
    notes.push(format!(
        "ioengine=libcufile cuda_io={mode}: each read is copied into GPU {n} inside its op (the latency covers both), {how}"
    ));
    Ok(Some(n))
}

/// Refuses at option `k` where it was given, else at the job.
fn refuse(job: &RawJob, g: &Given, k: &str, why: &str) -> FioJobError {
    match g.get(k) {
        Some(_) => g.refuse(k, why),
        None => job.loc.err(format!("job '{}': {why}", job.name)),
    }
}

/// `gpu_dev_ids`: GPU numbers separated by ':'.
fn dev_ids(v: &str) -> Result<Vec<u32>, String> {
    v.split(':')
        .map(|s| {
            s.trim().parse::<u32>().map_err(|_| {
                format!("'{s}': gpu_dev_ids is GPU numbers separated by ':' (e.g. 0:1)")
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::dev_ids;

    #[test]
    fn gpu_numbers_are_separated_by_colons_and_anything_else_is_named() {
        assert_eq!(dev_ids("0").unwrap(), [0]);
        assert_eq!(dev_ids("2:0:1").unwrap(), [2, 0, 1]);
        let e = dev_ids("0,1").unwrap_err();
        assert!(e.contains("'0,1'") && e.contains("':'"), "{e}");
        assert!(dev_ids("").is_err());
        assert!(dev_ids("0:").is_err());
    }
}
