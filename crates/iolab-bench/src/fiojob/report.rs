//! fio's normal output.
