//! Result records of the system microbenchmarks: one [`Entry`] per
//! measurement, collected into a [`SysReport`] with the environment. Units
//! are part of field names (`time_ns`, `bandwidth_mib_s`, `size_bytes`);
//! series carry their units next to their points.

use iolab_bench::env::Environment;
use iolab_bench::stats::Stats;
use serde::{Deserialize, Serialize};

/// Version of this record layout; bumped when a field changes meaning.
pub const SCHEMA_VERSION: u32 = 1;

/// One measurement's result.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// [`SCHEMA_VERSION`] of this record.
    pub schema_version: u32,
    /// Measurement name as the CLI spells it (`getpid`, `mem_latency`).
    pub name: String,
    /// Group name (`timing`, `calls`, `tasks`, `memory`, `faults`, `net`, `fs`).
    pub group: String,
    /// One line saying how it was measured.
    pub method: String,
    /// Time per operation across repeats, ns (when the result is a time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_ns: Option<Stats>,
    /// Bandwidth across repeats, MiB/s (when the result is a rate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bandwidth_mib_s: Option<Stats>,
    /// A size across repeats, bytes (when the result is a size).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_bytes: Option<Stats>,
    /// Curves measured along the way (latency by working set, by message
    /// size, time per block by process count...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub series: Vec<Series>,
    /// Cache levels as sysfs describes them (memory latency only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cache_levels: Vec<CacheLevel>,
    /// Latency plateaus named after the level that serves them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub plateaus: Vec<Plateau>,
    /// Facts worth keeping next to the number (counts, kernel figures).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// Which quantity an entry's headline value is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Headline {
    /// A time, ns.
    TimeNs,
    /// A bandwidth, MiB/s.
    BandwidthMibS,
    /// A size, bytes.
    SizeBytes,
}

impl Headline {
    /// The unit as printed.
    pub fn unit(self) -> &'static str {
        match self {
            Headline::TimeNs => "ns",
            Headline::BandwidthMibS => "MiB/s",
            Headline::SizeBytes => "bytes",
        }
    }
}

impl Entry {
    /// A new entry with the schema version filled in.
    pub fn new(name: &str, group: &str, method: impl Into<String>) -> Self {
        Entry {
            schema_version: SCHEMA_VERSION,
            name: name.into(),
            group: group.into(),
            method: method.into(),
            ..Entry::default()
        }
    }

    /// A new entry whose result is a time per operation, ns.
    pub fn timed(name: &str, group: &str, method: impl Into<String>, time_ns: Stats) -> Self {
        Entry {
            time_ns: Some(time_ns),
            ..Entry::new(name, group, method)
        }
    }

    /// The headline statistics and what they measure, if any.
    pub fn headline(&self) -> Option<(Headline, &Stats)> {
        if let Some(s) = &self.time_ns {
            Some((Headline::TimeNs, s))
        } else if let Some(s) = &self.bandwidth_mib_s {
            Some((Headline::BandwidthMibS, s))
        } else {
            self.size_bytes.as_ref().map(|s| (Headline::SizeBytes, s))
        }
    }
}

/// A curve: y against x, one point per x.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Series {
    /// Name, unique within the report (`mem_latency`, `tcp_rtt`).
    pub name: String,
    /// Unit of x (`bytes`, `blocks`, `processes`).
    pub x_unit: String,
    /// Unit of y (`ns`, `ns_per_block`, `MiB/s`).
    pub y_unit: String,
    /// The points, in increasing x.
    pub points: Vec<Point>,
}

/// One point: the median of y across repeats, and its range.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// x value.
    pub x: f64,
    /// Median y across repeats.
    pub y: f64,
    /// Smallest y across repeats.
    pub y_min: f64,
    /// Largest y across repeats.
    pub y_max: f64,
}

impl Point {
    /// A point from x and the y values of each repeat.
    pub fn of(x: f64, ys: &[f64]) -> Self {
        let s = Stats::of(ys);
        Point {
            x,
            y: s.median,
            y_min: s.min,
            y_max: s.max,
        }
    }
}

/// One CPU cache as `/sys/devices/system/cpu/cpu0/cache/index*` reports it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheLevel {
    /// 1, 2, 3...
    pub level: u32,
    /// `Data`, `Instruction` or `Unified`.
    pub kind: String,
    /// Size, bytes.
    pub size_bytes: u64,
}

/// A flat stretch of the latency curve, named after what serves it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Plateau {
    /// `L1`, `L2`, `L3`, `RAM`.
    pub name: String,
    /// Smallest working set in the stretch, bytes.
    pub from_bytes: u64,
    /// Largest working set in the stretch, bytes.
    pub to_bytes: u64,
    /// Median latency over the stretch, ns.
    pub latency_ns: f64,
}

/// A whole `iolab sys` run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SysReport {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// `full`, `quick` or `smoke`.
    pub scale: String,
    /// Repeats per measurement.
    pub repeat: usize,
    /// Where it ran.
    pub environment: Environment,
    /// Results, in run order.
    pub entries: Vec<Entry>,
}

/// One line of `--jsonl` output: an entry with its context.
#[derive(Clone, Debug, Serialize)]
pub struct EntryLine<'a> {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// `full`, `quick` or `smoke`.
    pub scale: &'a str,
    /// Repeats per measurement.
    pub repeat: usize,
    /// Where it ran.
    pub environment: &'a Environment,
    /// The result.
    pub entry: &'a Entry,
}

/// One CSV row: a point of a series (`series,x,x_unit,y,y_unit`), plus the
/// range across repeats.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CsvRow {
    /// Series name.
    pub series: String,
    /// x value.
    pub x: f64,
    /// Unit of x.
    pub x_unit: String,
    /// Median y.
    pub y: f64,
    /// Unit of y.
    pub y_unit: String,
    /// Smallest y across repeats.
    pub y_min: f64,
    /// Largest y across repeats.
    pub y_max: f64,
}

impl Entry {
    /// Every series point (and every cache boundary, as series
    /// `<name>.cache_boundary` with y = cache level) as CSV rows.
    pub fn csv_rows(&self) -> Vec<CsvRow> {
        let mut rows = Vec::new();
        for s in &self.series {
            for p in &s.points {
                rows.push(CsvRow {
                    series: s.name.clone(),
                    x: p.x,
                    x_unit: s.x_unit.clone(),
                    y: p.y,
                    y_unit: s.y_unit.clone(),
                    y_min: p.y_min,
                    y_max: p.y_max,
                });
            }
        }
        for c in &self.cache_levels {
            rows.push(CsvRow {
                series: format!("{}.cache_boundary", self.name),
                x: c.size_bytes as f64,
                x_unit: "bytes".into(),
                y: c.level as f64,
                y_unit: "cache_level".into(),
                y_min: c.level as f64,
                y_max: c.level as f64,
            });
        }
        rows
    }
}

impl SysReport {
    /// Every entry's CSV rows ([`Entry::csv_rows`]), in order.
    pub fn csv_rows(&self) -> Vec<CsvRow> {
        self.entries.iter().flat_map(Entry::csv_rows).collect()
    }
}
