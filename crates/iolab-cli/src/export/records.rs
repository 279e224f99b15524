//! A bench record as every format writes it: itself as JSON, and one CSV
//! row per run. (The other commands' records say the same next to their
//! own types.)

use super::Exportable;
use iolab_bench::record::BenchRecord;

impl Exportable for BenchRecord {
    fn to_json(&self) -> anyhow::Result<serde_json::Value> {
        Ok(serde_json::to_value(self)?)
    }
    fn csv_header(&self) -> Vec<String> {
        header().into_iter().map(String::from).collect()
    }
    fn csv_rows(&self) -> Vec<Vec<String>> {
        rows(self)
    }
}

/// Column names, in order: [`BASE_HEADER`], the buffer memory, then the
/// device's figures ([`iolab_bench::devstat::CSV_HEADER`]), then where
/// iolab placed the workers.
pub fn header() -> Vec<&'static str> {
    let mut h = BASE_HEADER.to_vec();
    h.extend(["mem", "mem_huge_bytes"]);
    h.extend(iolab_bench::devstat::CSV_HEADER);
    h.push("placement");
    h
}

/// The first columns.
pub const BASE_HEADER: &[&str] = &[
    "label",
    "engine",
    "op",
    "pattern",
    "bs",
    "qd",
    "batch",
    "threads",
    "direct",
    "cache",
    "run",
    "duration_ns",
    "bytes",
    "ops",
    "errors",
    "mib_per_s",
    "iops",
    "lat_min_ns",
    "lat_mean_ns",
    "lat_p50_ns",
    "lat_p90_ns",
    "lat_p99_ns",
    "lat_p99_9_ns",
    "lat_p99_99_ns",
    "lat_max_ns",
    "cpu_user_pct",
    "cpu_sys_pct",
    "cpu_ns_per_op",
    "cpu_submit_user_pct",
    "cpu_submit_sys_pct",
    "cpu_helpers_pct",
    "cpu_kernel_pct",
    "vol_csw",
    "invol_csw",
    "minor_faults",
    "major_faults",
    "resident_before",
    "resident_after",
    "cache_held",
    "interrupted",
];

/// One row per run of `rec`, in [`header`]'s order.
pub fn rows(rec: &BenchRecord) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let s = &rec.spec;
    for (i, r) in rec.runs.iter().enumerate() {
        let l = &r.latency;
        let mut row = vec![
            rec.label.clone(),
            s.engine.to_string(),
            s.op.name(),
            s.pattern.to_string(),
            s.bs.to_string(),
            s.qd.to_string(),
            s.batch_submit.to_string(),
            s.threads.to_string(),
            s.direct.to_string(),
            s.cache.name().to_string(),
            (i + 1).to_string(),
            r.duration_ns.to_string(),
            r.bytes.to_string(),
            r.ops.to_string(),
            r.errors.to_string(),
            format!("{:.3}", r.mib_per_s),
            format!("{:.1}", r.iops),
            l.min_ns.to_string(),
            format!("{:.1}", l.mean_ns),
            l.p50_ns.to_string(),
            l.p90_ns.to_string(),
            l.p99_ns.to_string(),
            l.p99_9_ns.to_string(),
            l.p99_99_ns.to_string(),
            l.max_ns.to_string(),
            format!("{:.2}", r.cpu.user_pct),
            format!("{:.2}", r.cpu.sys_pct),
            format!("{:.1}", r.cpu.cpu_ns_per_op),
            format!("{:.2}", r.cpu.split.submit_user_pct),
            format!("{:.2}", r.cpu.split.submit_sys_pct),
            format!("{:.2}", r.cpu.split.helpers_pct),
            format!("{:.2}", r.cpu.split.kernel_pct),
            r.cpu.vol_csw.to_string(),
            r.cpu.invol_csw.to_string(),
            r.cpu.minor_faults.to_string(),
            r.cpu.major_faults.to_string(),
            format!("{:.4}", r.resident_before),
            format!("{:.4}", r.resident_after),
            r.cache_held.map(|h| h.to_string()).unwrap_or_default(),
            r.interrupted.to_string(),
        ];
        row.push(r.mem.map(|m| m.mem.to_string()).unwrap_or_default());
        row.push(
            r.mem
                .and_then(|m| m.huge_bytes)
                .map(|h| h.to_string())
                .unwrap_or_default(),
        );
        row.extend(iolab_bench::devstat::csv_fields(r.device.as_ref()));
        row.push(r.placement.clone().unwrap_or_default());
        rows.push(row);
    }
    rows
}

/// A lab record: itself as JSON, and one CSV row per repeat's sample.
impl Exportable for iolab_lab::record::LabRecord {
    fn to_json(&self) -> anyhow::Result<serde_json::Value> {
        Ok(serde_json::to_value(self)?)
    }
    fn csv_header(&self) -> Vec<String> {
        ["experiment", "key", "repeat", "value", "unit"]
            .map(String::from)
            .to_vec()
    }
    fn csv_rows(&self) -> Vec<Vec<String>> {
        self.samples
            .iter()
            .enumerate()
            .map(|(i, v)| {
                vec![
                    self.experiment.clone(),
                    self.key.clone(),
                    (i + 1).to_string(),
                    v.to_string(),
                    self.unit.clone(),
                ]
            })
            .collect()
    }
}
