//! fio's log files.
