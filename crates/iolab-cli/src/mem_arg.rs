//! The value of `iolab bench --mem`: the host memory of the engine's
//! buffers, or `cuda[:N]` for buffers whose every read is copied on into
//! GPU N (`crate::gpu_bench`).

use iolab::mem::MemKind;
use std::fmt;
use std::str::FromStr;

/// The value of `--mem`: the host memory of the engine's buffers, and the
/// GPU each read is copied on to (`cuda[:N]`, buffers in huge pages).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemArg {
    /// Memory the engine's buffers live in.
    pub host: MemKind,
    /// `cuda:N`: the GPU every read's bytes are copied into.
    pub gpu: Option<u32>,
}

impl FromStr for MemArg {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let gpu = match s.strip_prefix("cuda") {
            Some("") => Some(0),
            Some(n) => Some(
                n.strip_prefix(':')
                    .and_then(|n| n.parse::<u32>().ok())
                    .ok_or_else(|| {
                        format!("'{s}': a GPU is named cuda or cuda:N (N its number, e.g. cuda:0)")
                    })?,
            ),
            None => None,
        };
        let host = match gpu {
            Some(_) => MemKind::Thp,
            None => s.parse().map_err(|e: String| {
                e.replace(
                    "hugetlb)",
                    "hugetlb, or cuda[:N] to copy each read into a GPU)",
                )
            })?,
        };
        Ok(MemArg { host, gpu })
    }
}

impl fmt::Display for MemArg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.gpu {
            Some(n) => write!(f, "cuda:{n}"),
            None => write!(f, "{}", self.host),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mem_names_a_host_memory_or_a_gpu_and_a_bad_one_lists_them_all() {
        let m = |s: &str| s.parse::<MemArg>();
        assert_eq!(m("hugetlb").unwrap().host, MemKind::Hugetlb);
        assert_eq!(m("cuda").unwrap().gpu, Some(0));
        assert_eq!(m("cuda:3").unwrap().gpu, Some(3));
        assert_eq!(m("cuda:3").unwrap().to_string(), "cuda:3");
        assert_eq!(m("thp").unwrap().gpu, None);
        let e = m("cuda:x").unwrap_err();
        assert!(e.contains("cuda:N"), "{e}");
        let e = m("gpu").unwrap_err();
        assert!(e.contains("malloc, thp, hugetlb, or cuda[:N]"), "{e}");
    }
}
