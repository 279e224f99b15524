//! The uring engine's SQEs, written field by field as the kernel's
//! `struct io_uring_sqe` lays them out.
//!
//! Hand-written on purpose: the io-uring crate's builders zero a whole SQE
//! and set each field through a builder per op, and its NOP has no field
//! for the flags t/io_uring's `-N1` sends. Here every SQE of an engine has
//! the same shape ([`Shape`], fixed when the engine is built) and an op
//! only fills in its file, offset, buffer, length and key: the same few
//! stores t/io_uring makes.

use io_uring::{opcode, squeue};

/// `IORING_NOP_*` (include/uapi/linux/io_uring.h, Linux 6.13+): claim
/// `len` as the result, look the file up (as a registered one), look the
/// registered buffer up.
const NOP_INJECT_RESULT: u32 = 1 << 0;
const NOP_FILE: u32 = 1 << 1;
const NOP_FIXED_FILE: u32 = 1 << 2;
const NOP_FIXED_BUFFER: u32 = 1 << 3;

/// `struct io_uring_sqe` for the read, write and NOP opcodes.
#[repr(C)]
struct RawSqe {
    opcode: u8,
    flags: u8,
    ioprio: u16,
    fd: i32,
    off: u64,
    addr: u64,
    len: u32,
    /// rw_flags, or a NOP's flags.
    op_flags: u32,
    user_data: u64,
    buf_index: u16,
    personality: u16,
    file_index: u32,
    addr3: u64,
    pad: u64,
}

const _: () = assert!(std::mem::size_of::<RawSqe>() == 64);
const _: () = assert!(std::mem::size_of::<squeue::Entry>() == 64);

/// What every SQE of one engine shares.
#[derive(Clone, Copy, Debug)]
pub(super) struct Shape {
    /// The opcodes of a read and of a write.
    opcodes: [u8; 2],
    /// IOSQE_* flags (a registered file).
    flags: u8,
    /// A NOP's flags (0 for reads and writes).
    op_flags: u32,
    /// The buffer index goes in the SQE (fixed buffers).
    buf_index: bool,
    /// A NOP: it moves nothing (`--uring-nop`).
    pub nop: bool,
}

impl Shape {
    /// Reads and writes (fixed ones with `fixed_bufs`), or with `nop`
    /// NOPs that name the op's file and buffer as these options would and
    /// complete with the op's length (t/io_uring's `-N1`).
    pub fn new(reg_files: bool, fixed_bufs: bool, nop: bool) -> Shape {
        let (opcodes, op_flags, flags) = if nop {
            let mut f = NOP_INJECT_RESULT | NOP_FILE;
            if reg_files {
                f |= NOP_FIXED_FILE;
            }
            if fixed_bufs {
                f |= NOP_FIXED_BUFFER;
            }
            ([opcode::Nop::CODE; 2], f, 0)
        } else if fixed_bufs {
            ([opcode::ReadFixed::CODE, opcode::WriteFixed::CODE], 0, 0)
        } else {
            ([opcode::Read::CODE, opcode::Write::CODE], 0, 0)
        };
        // A NOP names a registered file by its own flag, a read by the SQE's.
        let flags = if reg_files && !nop {
            squeue::Flags::FIXED_FILE.bits()
        } else {
            flags
        };
        Shape {
            opcodes,
            flags,
            op_flags,
            buf_index: fixed_bufs,
            nop,
        }
    }

    /// The SQE of one op: `write` or a read of `len` bytes at `off` of
    /// file `fd` (its registered index with registered files) into or from
    /// `addr`, buffer `buf`, with `key` as its user_data.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub fn sqe(
        &self,
        write: bool,
        fd: i32,
        off: u64,
        addr: u64,
        len: u32,
        buf: u16,
        key: u64,
    ) -> squeue::Entry {
        let raw = RawSqe {
            opcode: self.opcodes[write as usize],
            flags: self.flags,
            ioprio: 0,
            fd,
            off,
            addr,
            len,
            op_flags: self.op_flags,
            user_data: key,
            buf_index: if self.buf_index { buf } else { 0 },
            personality: 0,
            file_index: 0,
            addr3: 0,
            pad: 0,
        };
        entry(raw)
    }
}

#[inline]
fn entry(raw: RawSqe) -> squeue::Entry {
    // SAFETY: `squeue::Entry` is a `repr(C)` io_uring_sqe and `RawSqe` the
    // same 64 bytes of plain integers (sizes asserted above), laid out as
    // include/uapi/linux/io_uring.h does; any bytes are a valid Entry (the
    // kernel checks what they say).
    unsafe { std::mem::transmute::<RawSqe, squeue::Entry>(raw) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use io_uring::types;

    fn bytes(e: squeue::Entry) -> [u8; 64] {
        // SAFETY: both are 64 bytes of plain data.
        unsafe { std::mem::transmute(e) }
    }

    #[test]
    fn hand_written_sqes_match_the_crate_s_builders() {
        let (fd, off, len, buf, key) = (7, 4096 * 9, 4096, 3u16, 42);
        let ptr = 0x7000_0000_usize as *mut u8;
        let s = Shape::new(false, false, false);
        let want = opcode::Read::new(types::Fd(fd), ptr, len)
            .offset(off)
            .build()
            .user_data(key);
        let got = s.sqe(false, fd, off, ptr as u64, len, buf, key);
        assert_eq!(bytes(got), bytes(want));
        let s = Shape::new(true, true, false);
        let want = opcode::WriteFixed::new(types::Fixed(fd as u32), ptr, len, buf)
            .offset(off)
            .build()
            .user_data(key);
        let got = s.sqe(true, fd, off, ptr as u64, len, buf, key);
        assert_eq!(bytes(got), bytes(want));
    }

    #[test]
    fn nops_carry_t_io_uring_s_flags() {
        let b = bytes(Shape::new(true, true, true).sqe(false, 0, 0, 0, 4096, 5, 1));
        assert_eq!(b[0], opcode::Nop::CODE);
        assert_eq!(b[1], 0, "a NOP names a registered file by its own flag");
        assert_eq!(u32::from_ne_bytes(b[24..28].try_into().unwrap()), 4096);
        assert_eq!(u32::from_ne_bytes(b[28..32].try_into().unwrap()), 0b1111);
        assert_eq!(u16::from_ne_bytes(b[40..42].try_into().unwrap()), 5);
        let plain = bytes(Shape::new(false, false, true).sqe(false, 9, 0, 0, 512, 5, 1));
        assert_eq!(
            u32::from_ne_bytes(plain[28..32].try_into().unwrap()),
            0b0011
        );
        assert_eq!(i32::from_ne_bytes(plain[4..8].try_into().unwrap()), 9);
    }
}
