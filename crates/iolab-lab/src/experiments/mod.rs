//! One file per experiment; each implements [`crate::Experiment`].

pub(crate) mod blocksize;
pub(crate) mod fault_around;
pub(crate) mod interfaces;
pub(crate) mod latency;
pub(crate) mod mt_ranks;
pub(crate) mod mt_suite;
pub(crate) mod mt_tests;
pub(crate) mod readers;
pub(crate) mod reasonable;
pub(crate) mod replay;
pub(crate) mod sys;
pub(crate) mod syscalls;
pub(crate) mod threads;
pub(crate) mod to_gpu;
