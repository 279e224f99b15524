//! Worker threads pinned to CPUs: fio's `cpus_allowed=LIST` and
//! `cpus_allowed_policy=shared|split`, `iolab bench --cpus LIST
//! [--cpus-policy split]`. The runner applies it (each worker thread sets
//! its own affinity before building its engine); this file only says which
//! CPUs each worker gets.

use serde::{Deserialize, Serialize};

/// The CPUs a run's worker threads may use.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuPin {
    /// The CPUs, ascending, each once.
    pub cpus: Vec<u32>,
    /// Each worker on one CPU of the set, in turn (fio's `split`), rather
    /// than every worker on the whole set (`shared`, fio's default).
    pub split: bool,
    /// With `split`, the CPU the first worker takes, counted in the set:
    /// fio numbers threads over the whole job file, so a second job's first
    /// thread goes on where the first job's threads stopped. 0 for `iolab
    /// bench`.
    #[serde(default)]
    pub first: u32,
}

impl CpuPin {
    /// Parses fio's CPU list: CPUs and ranges separated by commas
    /// (`0-1,3`).
    pub fn parse_list(s: &str) -> Result<Vec<u32>, String> {
        let mut cpus = Vec::new();
        for part in s.split(',').map(str::trim) {
            let num = |n: &str| {
                n.trim().parse::<u32>().map_err(|_| {
                    format!(
                        "'{part}': a CPU list is CPUs and ranges separated by commas (e.g. 0-1,3)"
                    )
                })
            };
            let (lo, hi) = match part.split_once('-') {
                Some((a, b)) => (num(a)?, num(b)?),
                None => (num(part)?, num(part)?),
            };
            if lo > hi || hi >= 1 << 16 {
                return Err(format!(
                    "'{part}': a range runs from the lower CPU to the higher (e.g. 0-3)"
                ));
            }
            cpus.extend(lo..=hi);
        }
        cpus.sort_unstable();
        cpus.dedup();
        Ok(cpus)
    }

    /// The list in fio's syntax, ranges joined (`0-1,3`).
    pub fn list(&self) -> String {
        let mut parts: Vec<String> = Vec::new();
        let mut i = 0;
        while i < self.cpus.len() {
            let mut j = i;
            while j + 1 < self.cpus.len() && self.cpus[j + 1] == self.cpus[j] + 1 {
                j += 1;
            }
            parts.push(if j > i {
                format!("{}-{}", self.cpus[i], self.cpus[j])
            } else {
                self.cpus[i].to_string()
            });
            i = j + 1;
        }
        parts.join(",")
    }

    /// The CPUs worker `worker` may run on: all of them, or with `split`
    /// one, taken in turn (round robin when there are more workers than
    /// CPUs, as fio does).
    pub fn of_worker(&self, worker: u32) -> Vec<usize> {
        if self.split && !self.cpus.is_empty() {
            let i = (self.first as usize + worker as usize) % self.cpus.len();
            vec![self.cpus[i] as usize]
        } else {
            self.cpus.iter().map(|&c| c as usize).collect()
        }
    }

    /// Why the set cannot be used, given the CPUs this process may run on
    /// (`allowed`): a CPU that is offline or outside its affinity.
    pub fn check(&self, allowed: &[usize]) -> Result<(), String> {
        if self.cpus.is_empty() {
            return Err("no CPU given (e.g. 0-1,3)".into());
        }
        match self
            .cpus
            .iter()
            .find(|c| !allowed.contains(&(**c as usize)))
        {
            Some(c) => {
                let ok = CpuPin {
                    cpus: allowed.iter().map(|&c| c as u32).collect(),
                    split: false,
                    first: 0,
                };
                Err(format!(
                    "CPU {c} is not online or not allowed for this process (it may use {})",
                    ok.list()
                ))
            }
            None => Ok(()),
        }
    }

    /// [`CpuPin::check`] against the CPUs this process may run on now.
    pub fn check_here(&self) -> Result<(), String> {
        let allowed = iolab::primitives::allowed_cpus().map_err(|e| e.to_string())?;
        self.check(&allowed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pin(list: &str, split: bool, first: u32) -> CpuPin {
        CpuPin {
            cpus: CpuPin::parse_list(list).unwrap(),
            split,
            first,
        }
    }

    #[test]
    fn lists_parse_and_print_as_fio_writes_them() {
        assert_eq!(CpuPin::parse_list("0-1,3"), Ok(vec![0, 1, 3]));
        assert_eq!(CpuPin::parse_list(" 5, 2-3,3 "), Ok(vec![2, 3, 5]));
        assert_eq!(pin("3,0-1,2,7", false, 0).list(), "0-3,7");
        for bad in ["", "a", "1-", "3-1", "0-70000", "1,,2"] {
            let e = CpuPin::parse_list(bad).unwrap_err();
            assert!(e.starts_with('\''), "{bad}: {e}");
        }
    }

    #[test]
    fn split_gives_each_worker_one_cpu_in_turn_shared_gives_all() {
        let p = pin("0-1,3", true, 0);
        let got: Vec<Vec<usize>> = (0..4).map(|w| p.of_worker(w)).collect();
        assert_eq!(got, vec![vec![0], vec![1], vec![3], vec![0]]);
        // A later job of the file goes on from where the earlier stopped.
        assert_eq!(pin("0-1,3", true, 2).of_worker(0), vec![3]);
        assert_eq!(pin("0-1,3", false, 2).of_worker(1), vec![0, 1, 3]);
    }

    #[test]
    fn a_cpu_the_process_may_not_use_is_named() {
        let e = pin("0,5", false, 0).check(&[0, 1, 2]).unwrap_err();
        assert_eq!(
            e,
            "CPU 5 is not online or not allowed for this process (it may use 0-2)"
        );
        assert!(pin("1-2", true, 0).check(&[0, 1, 2]).is_ok());
    }
}
