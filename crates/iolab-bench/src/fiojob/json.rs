//! fio's JSON output.
