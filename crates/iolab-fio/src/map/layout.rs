//! A job's files and the part of each it covers: `filename`, `directory`,
//! `filename_format`, `nrfiles`, `file_service_type`, `offset`,
//! `offset_increment`, `size`, `filesize`, `fill_device`.

use super::given::Given;
use super::io::Direction;
use crate::parse::RawJob;
use crate::value::{self, Size};
use crate::FioJobError;
use iolab::engine::EngineKind;
use iolab_bench::service::FileService;
use std::path::{Path, PathBuf};

/// Which files a job uses and which part of each.
pub(super) struct Files {
    /// The first file.
    pub file: PathBuf,
    /// The others, in the order the job's I/Os go round them.
    pub more_files: Vec<PathBuf>,
    /// Always 1: every file is named in `file` and `more_files`.
    pub nrfiles: u32,
    /// How I/Os are spread over the files.
    pub service: FileService,
    /// Bytes of each file the job covers.
    pub region: u64,
    /// Where that part starts (`offset`, plus this clone's increment).
    pub offset: u64,
    pub size_given: bool,
    /// `ioengine=null`: the files are names only, never made or opened.
    pub no_files: bool,
}

impl Files {
    /// How many files the job spreads its I/O over.
    pub fn count(&self) -> u64 {
        1 + self.more_files.len() as u64
    }
}

/// A size option in bytes, a percentage resolved against `existing`.
fn resolve_size(g: &Given, existing: Option<u64>, k: &str) -> Result<Option<u64>, FioJobError> {
    Ok(match g.parse(k, value::size)? {
        None => None,
        Some(Size::Bytes(b)) => Some(b),
        Some(Size::Percent(p)) => {
            let len = existing
                .ok_or_else(|| g.refuse(k, "a percentage of a file that does not exist yet"))?;
            Some((len as f64 * p / 100.0) as u64)
        }
    })
}

/// `file_service_type`: `roundrobin`, `sequential`, `random`, `zipf:θ`,
/// `pareto:h`, `normal:dev`/`gauss:dev`, each with `:N` I/Os per switch.
fn service(g: &Given) -> Result<FileService, FioJobError> {
    let Some((v, _)) = g.val("file_service_type") else {
        return Ok(FileService::default());
    };
    let v = v.trim();
    let (kind, rest) = v.split_once(':').unwrap_or((v, ""));
    let every = |s: &str| -> Result<u32, FioJobError> {
        if s.is_empty() {
            return Ok(1);
        }
        s.parse::<u32>().map(|n| n.max(1)).map_err(|_| {
            g.refuse(
                "file_service_type",
                "the I/Os per file after ':' are a number",
            )
        })
    };
    Ok(match kind {
        "roundrobin" => FileService::RoundRobin {
            every: every(rest)?,
        },
        "sequential" => FileService::Sequential,
        "random" => FileService::Random {
            every: every(rest)?,
        },
        "zipf" | "pareto" | "normal" | "gauss" => {
            let (param, n) = rest.split_once(':').unwrap_or((rest, ""));
            let law = if kind == "gauss" { "normal" } else { kind };
            let skew = match iolab_bench::skew::Skew::parse(&format!("{law}:{param}")) {
                Some(Ok(s)) => s,
                Some(Err(e)) => return Err(g.refuse("file_service_type", &e)),
                None => {
                    return Err(g.refuse("file_service_type", "a law with its parameter (zipf:1.2)"))
                }
            };
            FileService::Skewed {
                skew,
                every: every(n)?,
            }
        }
        _ => {
            return Err(g.refuse(
                "file_service_type",
                "one of roundrobin, sequential, random, zipf, pareto, normal, gauss",
            ))
        }
    })
}

/// `filename_format` with fio's variables for one file.
fn format_name(f: &str, job: &str, jobnum: u32, filenum: u32) -> String {
    f.replace("$jobname", job)
        .replace("$jobnum", &jobnum.to_string())
        .replace("$filenum", &filenum.to_string())
        .replace("$clientuid", "0")
}

/// The job's files: `filename` (a ':'-list, shared by every clone), or
/// `nrfiles` files named by `filename_format` (fio's default
/// `$jobname.$jobnum.$filenum`), in `directory` (a ':'-list is used in
/// turn).
fn names(g: &Given, job: &RawJob, jobnum: u32) -> Result<Vec<PathBuf>, FioJobError> {
    let dirs: Vec<PathBuf> = g
        .val("directory")
        .map(|(v, _)| {
            v.split(':')
                .filter(|d| !d.is_empty())
                .map(PathBuf::from)
                .collect()
        })
        .unwrap_or_default();
    let in_dir = |p: PathBuf, i: usize| match dirs.get(i % dirs.len().max(1)) {
        Some(d) if p.is_relative() => d.join(p),
        _ => p,
    };
    if let Some((v, _)) = g.val("filename") {
        // fio writes a literal ':' as '\:' (a path with a colon).
        let v = v.replace("\\:", "\u{0}");
        let list: Vec<PathBuf> = v
            .split(':')
            .filter(|s| !s.is_empty())
            .enumerate()
            .map(|(i, n)| in_dir(n.replace('\u{0}', ":").into(), i))
            .collect();
        if list.is_empty() {
            return Err(g.refuse("filename", "names no file"));
        }
        if g.int("nrfiles")?
            .is_some_and(|n| n > 1 && n != list.len() as u64)
        {
            return Err(g.refuse(
                "nrfiles",
                "with filename=, the files are the ones it names (filename=a:b)",
            ));
        }
        return Ok(list);
    }
    let n = match g.int("nrfiles")? {
        None => 1,
        Some(n) if (1..=65536).contains(&n) => n as u32,
        Some(_) => return Err(g.refuse("nrfiles", "must be 1..=65536")),
    };
    let format = g
        .val("filename_format")
        .map_or("$jobname.$jobnum.$filenum", |(v, _)| v);
    Ok((0..n)
        .map(|f| in_dir(format_name(format, &job.name, jobnum, f).into(), f as usize))
        .collect())
}

/// The files, `offset` and its increment, `size`, `filesize` and
/// `fill_device`: which files and which part of each, [offset, offset +
/// size) as in fio.
pub(super) fn files(
    g: &Given,
    job: &RawJob,
    (jobnum, dir, engine): (u32, &Direction, EngineKind),
    notes: &mut Vec<String>,
) -> Result<Files, FioJobError> {
    let list = names(g, job, jobnum)?;
    let service = service(g)?;
    let no_files = engine == EngineKind::Null;
    if no_files {
        notes.push("ioengine=null: no files are made or opened, as in fio".into());
    }
    let existing = if no_files { None } else { length(&list[0]) };
    let nfiles = list.len() as u64;
    let mut offset = offset_of(g, existing, dir.bs)?;
    if let Some(inc) = g.parse("offset_increment", value::size)? {
        let inc = match inc {
            Size::Bytes(b) => b,
            Size::Percent(p) => {
                let len = existing.ok_or_else(|| {
                    g.refuse(
                        "offset_increment",
                        "a percentage of a file that does not exist yet",
                    )
                })?;
                (len as f64 * p / 100.0) as u64 / dir.bs * dir.bs
            }
        };
        offset += inc * jobnum as u64;
    }
    let (region, size_given) = region(
        g,
        job,
        (&list[0], nfiles),
        existing,
        offset,
        no_files,
        notes,
    )?;
    let mut it = list.into_iter();
    let file = it.next().expect("one file at least");
    Ok(Files {
        file,
        more_files: it.collect(),
        nrfiles: 1,
        service,
        region,
        offset,
        size_given,
        no_files,
    })
}

/// The length of a file or device, if it exists.
fn length(p: &Path) -> Option<u64> {
    std::fs::metadata(p).ok().map(|m| {
        if m.file_type().is_file() {
            m.len()
        } else {
            iolab::file::length(p).unwrap_or(0)
        }
    })
}

/// `offset`: bytes, or a percentage of the existing file aligned down to
/// `offset_align` (by default the block size, as fio aligns it).
fn offset_of(g: &Given, existing: Option<u64>, bs: u64) -> Result<u64, FioJobError> {
    let percent = matches!(g.parse("offset", value::size)?, Some(Size::Percent(_)));
    let offset = resolve_size(g, existing, "offset")?.unwrap_or(0);
    let align = g
        .parse("offset_align", value::bytes)?
        .filter(|a| *a > 0)
        .unwrap_or(bs);
    Ok(if percent {
        offset / align * align
    } else {
        offset
    })
}

/// `filesize`: one size, or a range `lo-hi` from which fio draws each
/// file's size (iolab draws one for all of the job's files).
fn filesize(
    g: &Given,
    existing: Option<u64>,
    notes: &mut Vec<String>,
) -> Result<Option<u64>, FioJobError> {
    let Some((v, _)) = g.val("filesize") else {
        return Ok(None);
    };
    if let Some((lo, hi)) = v.split_once('-').filter(|_| !v.starts_with('(')) {
        let (lo, hi) = (value::bytes(lo), value::bytes(hi));
        let (Ok(lo), Ok(hi)) = (lo, hi) else {
            return Err(g.refuse("filesize", "a range is LOW-HIGH (e.g. 1m-8m)"));
        };
        let mut rng = iolab_bench::random::Rng::new(0x5EED ^ lo ^ hi.rotate_left(17));
        let pick = lo.min(hi) + rng.below(hi.abs_diff(lo) + 1);
        let pick = pick / 4096 * 4096;
        notes.push(format!(
            "filesize={v}: {pick} bytes, drawn from the range once for every file of the job"
        ));
        return Ok(Some(pick.max(lo.min(hi))));
    }
    resolve_size(g, existing, "filesize")
}

/// `fill_device`: the free space of `file`'s file system (at most
/// `size`), as fio fills it.
fn fill_device(file: &Path, size: Option<u64>, notes: &mut Vec<String>) -> u64 {
    let dir = file
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let free = iolab::file::free_space(dir).unwrap_or(0);
    notes.push(format!(
        "fill_device: size is the {free} bytes free on {}'s file system (fio writes until it is full)",
        dir.display()
    ));
    size.map_or(free, |s| s.min(free))
}

/// `size` and `filesize` from `offset`: the bytes of each file the job
/// covers (`size` shared by its `nfiles` files as fio shares it, the free
/// space with `fill_device`, or the rest of the file when no size is
/// given), and whether a size was given. `existing` is the length of
/// `file`, the first, if it exists.
fn region(
    g: &Given,
    job: &RawJob,
    (file, nfiles): (&Path, u64),
    existing: Option<u64>,
    offset: u64,
    no_files: bool,
    notes: &mut Vec<String>,
) -> Result<(u64, bool), FioJobError> {
    let filesize = filesize(g, existing, notes)?;
    if let Some(end) = filesize
        .or(existing)
        .filter(|end| offset > 0 && *end <= offset)
    {
        return Err(g.refuse(
            "offset",
            &format!("at or past the end of the file ({end} bytes); the region starts inside it"),
        ));
    }
    let mut size = resolve_size(g, existing, "size")?.map(|s| s / nfiles);
    if g.flag("fill_device", false)? {
        size = Some(fill_device(file, size, notes) / nfiles);
    }
    // The file's bytes from `offset` on, when a size is not given.
    let after = |len: u64| len.saturating_sub(offset);
    let region = size.or(filesize.map(after));
    let size_given = region.is_some();
    let region = match (region, existing) {
        (Some(r), _) => r,
        (None, Some(len)) => after(len),
        (None, None) if no_files => {
            return Err(job.loc.err(format!(
                "job '{}': ioengine=null needs size= (it has no file to take a size from)",
                job.name
            )))
        }
        // Not there yet: its size is read when the job runs (after the
        // jobs before it, which may make it).
        (None, None) => {
            notes.push(format!(
                "{} does not exist yet and no size is given: its length is read when the job runs",
                file.display()
            ));
            0
        }
    };
    let region = match filesize {
        Some(f) => region.min(after(f)),
        None => region,
    };
    Ok((region, size_given))
}
