//! iolab's own trace format: CSV with a header line naming the columns
//! `file,offset,len` and optionally `op`, `thread`, `t_ns` (any order).
//! `op` is a system call name (`read`, `pread64`, `readv`, `preadv`,
//! `preadv2`, `copy_file_range`, `sendfile`, `block`) or `mmap` for a
//! mapping; fields with commas or quotes are quoted the CSV way.

use super::{num, Trace, TraceBuilder, TraceError, TraceFormat, TraceOp};

const COLUMNS: [&str; 6] = ["file", "offset", "len", "op", "thread", "t_ns"];

/// Whether `line` is an iolab CSV header (starts with the `file` column and
/// names `offset` and `len`).
pub fn is_header(line: &str) -> bool {
    let cols: Vec<&str> = line.split(',').map(|c| c.trim()).collect();
    cols.first() == Some(&"file") && cols.contains(&"offset") && cols.contains(&"len")
}

/// Parses iolab CSV.
pub fn parse(text: &str, name: &str) -> Result<Trace, TraceError> {
    let mut rdr = ::csv::ReaderBuilder::new()
        .has_headers(true)
        .flexible(false)
        .trim(::csv::Trim::All)
        .from_reader(text.as_bytes());
    let headers = rdr
        .headers()
        .map_err(|e| TraceError::at(name, 1, format!("unreadable header: {e}")))?
        .clone();
    let col = columns(&headers, name)?;
    let mut b = TraceBuilder::new(TraceFormat::Csv);
    for rec in rdr.records() {
        let rec = rec.map_err(|e| {
            let line = e.position().map(|p| p.line() as usize).unwrap_or(0);
            TraceError::at(name, line, format!("{e}"))
        })?;
        row(&mut b, &rec, &col, name)?;
    }
    Ok(b.finish())
}

/// One record: a read (or a mapping) added to the trace.
fn row(
    b: &mut TraceBuilder,
    rec: &::csv::StringRecord,
    col: &[usize; 6],
    name: &str,
) -> Result<(), TraceError> {
    let line = rec.position().map(|p| p.line() as usize).unwrap_or(0);
    let get = |k: usize| -> &str {
        if col[k] == usize::MAX {
            ""
        } else {
            rec.get(col[k]).unwrap_or("")
        }
    };
    let file = get(0);
    if file.is_empty() {
        return Err(TraceError::at(name, line, "empty file name"));
    }
    let field = |k: usize| -> Result<Option<u64>, TraceError> {
        let v = get(k);
        if v.is_empty() {
            return Ok(None);
        }
        num(v).map(Some).ok_or_else(|| {
            TraceError::at(
                name,
                line,
                format!("{} '{v}' is not a non-negative integer", COLUMNS[k]),
            )
        })
    };
    let offset = field(1)?.ok_or_else(|| TraceError::at(name, line, "missing offset"))?;
    let len = field(2)?.ok_or_else(|| TraceError::at(name, line, "missing len"))?;
    offset
        .checked_add(len)
        .ok_or_else(|| TraceError::at(name, line, "offset + len is beyond 2^64 bytes"))?;
    let thread = field(4)?.unwrap_or(0);
    let t_ns = field(5)?;
    let op = get(3);
    if op == "mmap" {
        b.map(file, offset, len, thread, t_ns);
        return Ok(());
    }
    let op = if op.is_empty() {
        TraceOp::Unknown
    } else {
        TraceOp::from_name(op).ok_or_else(|| {
            TraceError::at(
                name,
                line,
                format!("op '{op}' is not one of read, pread64, readv, preadv, preadv2, copy_file_range, sendfile, block, mmap"),
            )
        })?
    };
    b.read(file, offset, len, op, thread, t_ns);
    Ok(())
}

/// Where each of [`COLUMNS`] sits in the header (usize::MAX: absent);
/// unknown, repeated or missing required columns are refused on line 1.
fn columns(headers: &::csv::StringRecord, name: &str) -> Result<[usize; 6], TraceError> {
    let mut col = [usize::MAX; 6];
    for (i, h) in headers.iter().enumerate() {
        match COLUMNS.iter().position(|c| *c == h) {
            Some(k) if col[k] == usize::MAX => col[k] = i,
            Some(_) => {
                return Err(TraceError::at(
                    name,
                    1,
                    format!("column '{h}' appears twice"),
                ))
            }
            None => {
                return Err(TraceError::at(
                    name,
                    1,
                    format!(
                        "unknown column '{h}'; the header is file,offset,len[,op][,thread][,t_ns]"
                    ),
                ))
            }
        }
    }
    for k in 0..3 {
        if col[k] == usize::MAX {
            return Err(TraceError::at(
                name,
                1,
                format!(
                    "the header lacks the '{}' column; it must name file,offset,len[,op][,thread][,t_ns]",
                    COLUMNS[k]
                ),
            ));
        }
    }
    Ok(col)
}

impl Trace {
    /// Writes the trace as iolab CSV (`file,offset,len,op,thread,t_ns`);
    /// mappings become rows with op `mmap`. (Here, beside the parser, so
    /// the trace model needs nothing from its formats.)
    pub fn to_csv(&self) -> Vec<u8> {
        write(self)
    }
}

/// Writes `t` as iolab CSV with all six columns, reads and mappings merged
/// in time order (mappings after the reads when times are unknown).
pub fn write(t: &Trace) -> Vec<u8> {
    let mut w = ::csv::Writer::from_writer(Vec::new());
    let _ = w.write_record(COLUMNS);
    let opt = |v: Option<u64>| v.map(|x| x.to_string()).unwrap_or_default();
    // Merge by time; reads keep their order among themselves.
    let (mut i, mut j) = (0, 0);
    while i < t.reads.len() || j < t.mappings.len() {
        let take_map = match (t.reads.get(i), t.mappings.get(j)) {
            (Some(r), Some(m)) => matches!((r.t_ns, m.t_ns), (Some(a), Some(b)) if b < a),
            (None, Some(_)) => true,
            _ => false,
        };
        if take_map {
            let m = &t.mappings[j];
            j += 1;
            let _ = w.write_record([
                t.files[m.file as usize].as_str(),
                &m.offset.to_string(),
                &m.len.to_string(),
                "mmap",
                &m.thread.to_string(),
                &opt(m.t_ns),
            ]);
        } else {
            let r = &t.reads[i];
            i += 1;
            let _ = w.write_record([
                t.files[r.file as usize].as_str(),
                &r.offset.to_string(),
                &r.len.to_string(),
                r.op.name(),
                &r.thread.to_string(),
                &opt(r.t_ns),
            ]);
        }
    }
    w.into_inner().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_all_columns_in_any_order_and_mappings() {
        let t = parse(
            "offset,file,len,thread,op,t_ns\n0,/a,10,7,read,5\n\"10\",\"/b,c\",20,8,mmap,\n",
            "x",
        )
        .unwrap();
        assert_eq!(t.files, vec!["/a".to_string(), "/b,c".to_string()]);
        assert_eq!(t.reads.len(), 1);
        assert_eq!(t.reads[0].thread, 7);
        assert_eq!(t.reads[0].t_ns, Some(5));
        assert_eq!(t.reads[0].op, TraceOp::Read);
        assert_eq!(t.mappings.len(), 1);
        assert_eq!((t.mappings[0].offset, t.mappings[0].len), (10, 20));
    }

    #[test]
    fn malformed_lines_name_the_line() {
        let e = parse("file,offset,len\n/a,0,1\n/a,x,1\n", "tr.csv").unwrap_err();
        assert!(e.to_string().starts_with("tr.csv:3:"), "{e}");
        let e = parse("file,offset,len\n/a,0\n", "tr.csv").unwrap_err();
        assert!(e.to_string().starts_with("tr.csv:2:"), "{e}");
        let e = parse("file,offset\n", "tr.csv").unwrap_err();
        assert!(e.to_string().contains("'len'"), "{e}");
        let e = parse("file,offset,len,op\n/a,0,1,write\n", "tr.csv").unwrap_err();
        assert!(e.to_string().contains("tr.csv:2:"), "{e}");
    }

    #[test]
    fn writes_what_it_reads() {
        let src = "file,offset,len,op,thread,t_ns\n/a,0,4096,pread64,1,10\n/a,0,8192,mmap,1,20\nrel/b,4096,1,read,2,30\n";
        let t = parse(src, "x").unwrap();
        assert_eq!(String::from_utf8(write(&t)).unwrap(), src);
    }
}
