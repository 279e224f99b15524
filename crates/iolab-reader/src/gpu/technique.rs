//! The ways a file reaches a destination, and the policy that picks one:
//! a pure function of a few facts about the file and the machine, so each
//! rule is tested without a GPU.

use super::error::GpuError;
use std::fmt;
use std::str::FromStr;

/// How the bytes get from the file to the destination.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GpuTechnique {
    /// One io_uring per file with `depth` pieces in flight (O_DIRECT when
    /// the data is cold and the file system allows it) into staging
    /// buffers; each piece is copied to the destination as it lands, while
    /// the ring's other pieces are still being read.
    Ring,
    /// Several threads `pread` pieces (out of the page cache, when warm)
    /// into their own staging buffers and queue the copies on their own
    /// streams; a buffer is filled again only once its copy has ended.
    Threads,
    /// cuFile (`cuFileRead`) straight into device memory: GPUDirect Storage
    /// where the `nvidia-fs` module is loaded, else cuFile's compatibility
    /// mode (its own bounce buffers), which is only ever run when asked for.
    CuFile,
}

impl GpuTechnique {
    /// Every technique, in the order the command line lists them.
    pub const ALL: [GpuTechnique; 3] = [
        GpuTechnique::Ring,
        GpuTechnique::Threads,
        GpuTechnique::CuFile,
    ];

    /// The name the command line uses.
    pub fn name(self) -> &'static str {
        match self {
            GpuTechnique::Ring => "ring",
            GpuTechnique::Threads => "threads",
            GpuTechnique::CuFile => "cufile",
        }
    }
}

impl fmt::Display for GpuTechnique {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A technique name that is none of [`GpuTechnique::ALL`].
#[derive(Debug, thiserror::Error)]
#[error("unknown GPU technique {0:?}: expected ring, threads or cufile")]
pub struct ParseGpuTechniqueError(String);

impl FromStr for GpuTechnique {
    type Err = ParseGpuTechniqueError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        GpuTechnique::ALL
            .into_iter()
            .find(|t| t.name() == s)
            .ok_or_else(|| ParseGpuTechniqueError(s.to_string()))
    }
}

/// What the policy decides with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Facts {
    /// Most of the bytes to move are in the page cache.
    pub warm: bool,
    /// `/proc/driver/nvidia-fs` exists: cuFile can DMA from the disk into
    /// the GPU (GPUDirect Storage).
    pub nvidia_fs: bool,
    /// libcufile can be loaded.
    pub cufile: bool,
    /// The destination is CUDA device memory (cuFile writes nowhere else).
    pub device: bool,
}

/// Where the GPUDirect Storage kernel module announces itself.
pub const NVIDIA_FS: &str = "/proc/driver/nvidia-fs";

/// Whether the GPUDirect Storage kernel module is loaded.
pub fn nvidia_fs_loaded() -> bool {
    std::path::Path::new(NVIDIA_FS).exists()
}

/// The technique to use: the one asked for if it can run here, else the
/// policy's. Warm data is a memory copy, shared out among threads; cold
/// data goes disk → GPU with GPUDirect Storage where it exists, else
/// through the io_uring stream. cuFile without `nvidia-fs` (its
/// compatibility mode) is a peer to measure, never chosen on its own.
pub fn choose(asked: Option<GpuTechnique>, f: &Facts) -> Result<GpuTechnique, GpuError> {
    match asked {
        Some(GpuTechnique::CuFile) if !f.device => Err(GpuError::Unavailable {
            technique: "cufile",
            why: "cuFile reads into GPU memory only, and the destination is host memory".into(),
        }),
        Some(GpuTechnique::CuFile) if !f.cufile => Err(GpuError::Unavailable {
            technique: "cufile",
            why: "libcufile.so.0 could not be loaded (install GPUDirect Storage, or put it on LD_LIBRARY_PATH)".into(),
        }),
        Some(t) => Ok(t),
        None if f.warm => Ok(GpuTechnique::Threads),
        None if f.nvidia_fs && f.cufile && f.device => Ok(GpuTechnique::CuFile),
        None => Ok(GpuTechnique::Ring),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const COLD_GPU: Facts = Facts {
        warm: false,
        nvidia_fs: false,
        cufile: false,
        device: true,
    };

    #[test]
    fn names_round_trip_and_a_bad_one_lists_the_good_ones() {
        for t in GpuTechnique::ALL {
            assert_eq!(t.name().parse::<GpuTechnique>().unwrap(), t);
            // Records spell it as the command line does.
            assert_eq!(
                serde_json::to_string(&t).unwrap(),
                format!("\"{}\"", t.name())
            );
        }
        let e = "gds".parse::<GpuTechnique>().unwrap_err().to_string();
        assert!(
            e.contains("\"gds\"") && e.contains("ring, threads or cufile"),
            "{e}"
        );
    }

    #[test]
    fn warm_data_is_copied_by_threads_even_with_gpudirect_storage() {
        let f = Facts {
            warm: true,
            nvidia_fs: true,
            cufile: true,
            ..COLD_GPU
        };
        assert_eq!(choose(None, &f).unwrap(), GpuTechnique::Threads);
    }

    #[test]
    fn cold_data_takes_gpudirect_storage_only_when_all_of_it_is_there() {
        let gds = Facts {
            nvidia_fs: true,
            cufile: true,
            ..COLD_GPU
        };
        assert_eq!(choose(None, &gds).unwrap(), GpuTechnique::CuFile);
        // The library without the kernel module is compatibility mode: not chosen.
        let compat = Facts {
            nvidia_fs: false,
            ..gds
        };
        assert_eq!(choose(None, &compat).unwrap(), GpuTechnique::Ring);
        // The module without the library, or a host destination: the ring.
        let no_lib = Facts {
            cufile: false,
            ..gds
        };
        assert_eq!(choose(None, &no_lib).unwrap(), GpuTechnique::Ring);
        let host = Facts {
            device: false,
            ..gds
        };
        assert_eq!(choose(None, &host).unwrap(), GpuTechnique::Ring);
    }

    #[test]
    fn cufile_asked_for_runs_in_compatibility_mode_but_never_without_its_library() {
        let compat = Facts {
            cufile: true,
            ..COLD_GPU
        };
        assert_eq!(
            choose(Some(GpuTechnique::CuFile), &compat).unwrap(),
            GpuTechnique::CuFile
        );
        let e = choose(Some(GpuTechnique::CuFile), &COLD_GPU)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("cufile is not available here: libcufile"),
            "{e}"
        );
        let host = Facts {
            device: false,
            ..compat
        };
        let e = choose(Some(GpuTechnique::CuFile), &host)
            .unwrap_err()
            .to_string();
        assert!(e.contains("host memory"), "{e}");
    }

    #[test]
    fn a_technique_asked_for_is_kept_whatever_the_cache_holds() {
        for warm in [false, true] {
            let f = Facts { warm, ..COLD_GPU };
            for t in [GpuTechnique::Ring, GpuTechnique::Threads] {
                assert_eq!(choose(Some(t), &f).unwrap(), t);
            }
        }
    }
}
