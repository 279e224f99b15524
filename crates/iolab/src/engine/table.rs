//! The engine table: one entry per engine, the one place that knows every
//! engine (the contract in `mod.rs` knows none of them). The command line's
//! names and list, the configuration labels, both directions of the fio
//! translation and the capability checks all read this table, so a new
//! engine is its own file plus one entry here.

use super::sync::SyncEngine;
use super::{
    libaio, mmap, null, posixaio, pread, preadv2, read, stream, threadpool, uring, Engine,
    EngineConfig,
};
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

/// How a configuration's label (`P`, `U32B1`, ...) names the engine and its
/// depth; engine options add their own letters after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Label {
    /// The letters alone (one op in flight).
    Plain(&'static str),
    /// The letters and the depth: `X8`.
    Depth(&'static str),
    /// The letters, the depth and the submit batch: `U32B1`.
    DepthBatch(&'static str),
    /// The letters, the depth and the helper threads: `W16P4`.
    Pool(&'static str),
}

/// One engine, as every part of iolab sees it.
#[derive(Clone, Copy, Debug)]
pub struct EngineDesc {
    /// Which engine.
    pub kind: EngineKind,
    /// The name the command line (and the records) use.
    pub name: &'static str,
    /// What it does, in a few words.
    pub about: &'static str,
    /// Its part of a configuration's label.
    pub label: Label,
    /// fio's `ioengine` that does the same, or why fio has none.
    pub fio: std::result::Result<&'static str, &'static str>,
    /// One op in flight per thread (depth is the threads' business).
    pub sync: bool,
    /// Can write.
    pub writes: bool,
    /// Can bypass the page cache (`--direct`).
    pub direct: bool,
    build: fn(EngineConfig) -> Result<Box<dyn Engine>>,
}

macro_rules! engines {
    ($( $(#[doc = $doc:literal])+ $variant:ident {
        name: $name:literal, label: $label:expr, fio: $fio:expr,
        sync: $sync:literal, writes: $writes:literal, direct: $direct:literal,
        build: $build:expr $(,)?
    } ),+ $(,)?) => {
        /// The engines, as the command line spells them (the table's
        /// entries, in its order).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
        #[serde(rename_all = "lowercase")]
        pub enum EngineKind { $( $(#[doc = $doc])+ $variant, )+ }

        /// Every engine's entry, in the order help text lists them.
        pub const ENGINES: &[EngineDesc] = &[ $( EngineDesc {
            kind: EngineKind::$variant,
            name: $name,
            about: concat!($($doc),+),
            label: $label,
            fio: $fio,
            sync: $sync,
            writes: $writes,
            direct: $direct,
            build: $build,
        }, )+ ];

        impl EngineKind {
            /// Every engine, in the table's order.
            pub const ALL: [EngineKind; 0 $( + { let _ = stringify!($variant); 1 } )+] =
                [ $( EngineKind::$variant, )+ ];
        }
    };
}

engines! {
    /// lseek + read.
    Read {
        name: "read", label: Label::Plain("R"), fio: Ok("sync"),
        sync: true, writes: true, direct: true,
        build: |cfg| Ok(Box::new(SyncEngine::new(read::ReadIo::new(&cfg), cfg)?)),
    },
    /// pread.
    Pread {
        name: "pread", label: Label::Plain("P"), fio: Ok("psync"),
        sync: true, writes: true, direct: true,
        build: |cfg| Ok(Box::new(SyncEngine::new(pread::PreadIo, cfg)?)),
    },
    /// preadv2 (RWF_HIPRI with `--hipri`).
    Preadv2 {
        name: "preadv2", label: Label::Plain("V"), fio: Ok("pvsync2"),
        sync: true, writes: true, direct: true,
        build: |cfg| Ok(Box::new(SyncEngine::new(preadv2::Preadv2Io::new(&cfg), cfg)?)),
    },
    /// Buffered std::io reader (the iostream analogue).
    Stream {
        name: "stream", label: Label::Plain("St"),
        fio: Err("fio has no buffered-stream engine like iolab's stream"),
        sync: true, writes: false, direct: false,
        build: |cfg| Ok(Box::new(SyncEngine::new(stream::StreamIo::new(&cfg)?, cfg)?)),
    },
    /// Copy out of a shared mapping (or only fault pages).
    Mmap {
        name: "mmap", label: Label::Plain("Map"), fio: Ok("mmap"),
        sync: true, writes: false, direct: false,
        build: |cfg| Ok(Box::new(SyncEngine::new(mmap::MmapIo::new(&cfg)?, cfg)?)),
    },
    /// io_uring.
    Uring {
        name: "uring", label: Label::DepthBatch("U"), fio: Ok("io_uring"),
        sync: false, writes: true, direct: true,
        build: |cfg| Ok(Box::new(uring::Uring::new(cfg)?)),
    },
    /// Linux native AIO (io_submit / io_getevents).
    Libaio {
        name: "libaio", label: Label::DepthBatch("A"), fio: Ok("libaio"),
        sync: false, writes: true, direct: true,
        build: |cfg| Ok(Box::new(libaio::Libaio::new(cfg)?)),
    },
    /// POSIX AIO (glibc aio_read / aio_suspend).
    Posixaio {
        name: "posixaio", label: Label::Depth("X"), fio: Ok("posixaio"),
        sync: false, writes: true, direct: true,
        build: |cfg| Ok(Box::new(posixaio::PosixAio::new(cfg)?)),
    },
    /// pread/pwrite on N helper threads fed through a queue.
    Threadpool {
        name: "threadpool", label: Label::Pool("W"),
        fio: Err("fio has no thread-pool engine like iolab's threadpool"),
        sync: false, writes: true, direct: true,
        build: |cfg| Ok(Box::new(threadpool::ThreadPool::new(cfg)?)),
    },
    /// No I/O: measures the framework itself.
    Null {
        name: "null", label: Label::DepthBatch("N"), fio: Ok("null"),
        sync: false, writes: true, direct: true,
        build: |cfg| Ok(Box::new(null::Null::new(cfg)?)),
    },
}

impl EngineKind {
    /// This engine's table entry.
    pub fn desc(self) -> &'static EngineDesc {
        &ENGINES[self as usize]
    }

    /// The engine whose fio `ioengine` is `fio_name`, if iolab has one.
    pub fn of_fio(fio_name: &str) -> Option<EngineKind> {
        ENGINES
            .iter()
            .find(|d| d.fio == Ok(fio_name))
            .map(|d| d.kind)
    }
}

/// Builds engine `kind` for one worker.
pub fn build(kind: EngineKind, cfg: EngineConfig) -> Result<Box<dyn Engine>> {
    if kind.is_sync() && cfg.qd > 1 {
        return Err(Error::Invalid(format!(
            "--qd {}: engine {kind} is synchronous (one op in flight per thread); use --threads for parallelism, or --engine uring",
            cfg.qd
        )));
    }
    if cfg.direct && !kind.supports_direct() {
        return Err(Error::Invalid(format!(
            "--direct: engine {kind} reads through the page cache and cannot use O_DIRECT"
        )));
    }
    (kind.desc().build)(cfg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_in_the_enums_order_and_names_are_unique() {
        for (i, d) in ENGINES.iter().enumerate() {
            assert_eq!(d.kind as usize, i, "{}", d.name);
            assert_eq!(d.kind.desc().name, d.name);
            assert_eq!(d.name.parse::<EngineKind>(), Ok(d.kind));
            // The records' spelling (serde) is the command line's.
            assert_eq!(
                serde_json::to_string(&d.kind).unwrap(),
                format!("\"{}\"", d.name)
            );
        }
        let mut names: Vec<_> = ENGINES.iter().map(|d| d.name).collect();
        names.dedup();
        assert_eq!(names.len(), ENGINES.len());
        assert_eq!(EngineKind::of_fio("psync"), Some(EngineKind::Pread));
        assert_eq!(EngineKind::of_fio("sync"), Some(EngineKind::Read));
        assert_eq!(EngineKind::of_fio("rdma"), None);
    }
}
