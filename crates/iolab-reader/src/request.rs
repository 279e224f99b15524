//! [`ReadReq`], one read of a batch: what the caller hands
//! [`Reader::read_many`](super::Reader::read_many) and what the per-thread
//! ring (`iolab::kernel::ring`) fills, through its `Dest` trait.

use super::error::Result;

/// One piece of a batch for [`Reader::read_many`](super::Reader::read_many):
/// read `buf.len()` bytes at `offset` into `buf`.
#[derive(Debug)]
pub struct ReadReq<'a> {
    /// File offset.
    pub offset: u64,
    /// Destination; its length is the size of the read.
    pub buf: &'a mut [u8],
    /// Filled in when done: the bytes read (fewer than asked only where the
    /// file ends), or the error.
    pub result: Option<Result<usize>>,
}

impl<'a> ReadReq<'a> {
    /// A request for `buf.len()` bytes at `offset`.
    pub fn new(offset: u64, buf: &'a mut [u8]) -> Self {
        ReadReq {
            offset,
            buf,
            result: None,
        }
    }

    /// One request per offset, each into the buffer beside it (pairs
    /// beyond the shorter list are left out).
    pub fn batch(offsets: &[u64], bufs: &'a mut [Vec<u8>]) -> Vec<ReadReq<'a>> {
        offsets
            .iter()
            .zip(bufs.iter_mut())
            .map(|(&o, b)| ReadReq::new(o, b))
            .collect()
    }
}

impl iolab::kernel::ring::Dest for ReadReq<'_> {
    fn dest(&mut self) -> &mut [u8] {
        self.buf
    }
}
