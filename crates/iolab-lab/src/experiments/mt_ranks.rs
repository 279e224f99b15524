//! `mt-suite` with processes: started under `mpirun -n N`, the lab adds the
//! eight tests run by N ranks of one thread each, so that threads and
//! processes land on the same figure (x: threads or ranks). A test's file
//! per thread becomes a file per rank (the same files); the shared file is
//! split into one region per rank (IOR's segmented layout), random ops
//! staying in the rank's region. Rank 0 leads and writes the records; the
//! other ranks follow (`iolab_mpi::serve`).

use crate::experiments::mt_tests::{test_name, test_spec, Sizes, BS, TESTS};
use crate::figure::{LineSeries, Pt};
use crate::record::LabRecord;
use crate::util::sorted;
use crate::{Config, Ctx, Measured, Work};
use iolab_bench::error::{BenchError, Result};
use iolab_bench::prepare::{self, PrepareOpts};
use iolab_bench::rank_place::{Layout, RankPlace};
use iolab_bench::spec::{StopRule, WorkloadSpec};
use iolab_mpi::serve::{lead, RANK_MARK};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The rank configurations when the lab runs under mpirun with several
/// ranks (none otherwise).
pub(super) fn configs(ctx: &Ctx) -> Vec<Config> {
    let Some(world) = ctx.ranks.filter(|w| w.size() > 1) else {
        return Vec::new();
    };
    TESTS
        .iter()
        .map(|&(op, files, pat)| {
            Config::new(
                &[
                    ("test", test_name(op, files, pat)),
                    ("ranks", world.size().to_string()),
                ],
                Work::Custom,
            )
        })
        .collect()
}

/// What every rank runs for test `name` with `ranks` ranks: rank 0's spec,
/// `{rank}` standing for each rank's own file.
fn template(ctx: &Ctx, name: &str, ranks: u32) -> Result<WorkloadSpec> {
    let sz = Sizes::of(ctx);
    let test = TESTS
        .into_iter()
        .find(|&(o, f, p)| test_name(o, f, p) == name)
        .ok_or_else(|| BenchError::Usage(format!("mt-suite: no test called {name}")))?;
    let mut s = test_spec(ctx, &sz, test, 1);
    let per = test.1 == "per-thread";
    let n = u64::from(ranks);
    let (layout, region) = if per {
        // The threads' per-thread files: `<file>.<worker>`.
        let mut f = s.file.clone().into_os_string();
        f.push(format!(".{RANK_MARK}"));
        s.file = PathBuf::from(f);
        (Layout::PerRank, sz.own)
    } else {
        (Layout::Segmented, sz.shared / n / BS * BS)
    };
    s.file_per_thread = false;
    let place = RankPlace {
        rank: 0,
        ranks,
        layout,
        region,
        segments: 1,
        bs: BS,
        resume_ops: 0,
    };
    place.validate().map_err(BenchError::Usage)?;
    // The files keep the threads' sizes (the same files serve both); a
    // shared file's last bytes may lie outside every rank's region.
    s.place = Some(place);
    if test.2 == "rand" {
        // As the threads: each file per rank gets the ops one thread's
        // file gets; the shared file gets them once, split over the ranks.
        s.stop = StopRule {
            ops: Some(if per { sz.rand_ops } else { sz.rand_ops / n }),
            ..StopRule::default()
        };
    }
    Ok(s)
}

/// Measures one rank configuration: every rank together, `repeats` times;
/// a sample is the aggregate bandwidth (all bytes ÷ latest end − earliest
/// start).
pub(super) fn measure(cfg: &Config, ctx: &Ctx) -> Result<Measured> {
    let world = ctx.ranks.ok_or_else(|| {
        BenchError::Usage(format!(
            "mt-suite: {} needs ranks: run the lab under mpirun (iolab built with --features mpi)",
            cfg.key
        ))
    })?;
    let name = cfg.tags.get("test").map(String::as_str).unwrap_or("");
    let spec = template(ctx, name, world.size())?;
    let mut created = |p: &Path| (ctx.on_created)(p);
    let mut prepare = |s: &WorkloadSpec| {
        prepare::prepare(
            s,
            true,
            PrepareOpts { overwrite: false },
            ctx.stop,
            &mut created,
            &mut |_, _| {},
        )
    };
    let mut m = Measured {
        unit: "MiB/s".into(),
        ..Measured::default()
    };
    let mut extra: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for _ in 0..Sizes::of(ctx).repeats {
        let (agg, _) = lead(world, ctx.stop, &spec, &mut prepare)?;
        m.samples.push(agg.mib_per_s);
        extra
            .entry("slowest_rank_mib_per_s".into())
            .or_default()
            .push(agg.rank_mib_per_s.min);
        extra
            .entry("max_resident_before".into())
            .or_default()
            .push(agg.max_resident_before);
    }
    m.extra = extra;
    m.notes.push(format!(
        "{} ranks, one thread each ({})",
        world.size(),
        world.library()
    ));
    Ok(m)
}

/// The processes' line of test `name`'s figure (x: ranks), if measured.
pub(super) fn series(name: &str, recs: &[&LabRecord]) -> Option<LineSeries> {
    if recs.is_empty() {
        return None;
    }
    Some(LineSeries {
        name: format!("{name}, processes (MPI ranks)"),
        pts: sorted(recs.to_vec(), "ranks")
            .iter()
            .map(|r| Pt::of(r.num("ranks"), &r.stats()))
            .collect(),
    })
}
