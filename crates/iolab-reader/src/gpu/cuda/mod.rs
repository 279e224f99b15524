//! The CUDA edge: every call into the driver (loaded at run time through
//! cudarc) and into libcufile, and the only `unsafe` of this crate. Each
//! type here owns one driver object and releases it on drop, in an order
//! that never frees memory a copy may still touch: streams are
//! synchronised before the staging memory they copy from is unregistered,
//! and an allocation outlives every lane that copies into it (they borrow it);
//! a lane's page-locked staging goes back to a bounded pool once its
//! stream is synchronised.

pub mod cufile;
mod driver;
mod each_read;
mod lane;
mod memory;

pub use driver::{device_count, Device};
pub use each_read::{copy_each_read, DeviceCopy};
pub use lane::{
    free_staging, staging_kept, CudaLane, DeviceTarget, PinnedBuf, Queue, STAGING_KEEP,
};
pub use memory::DeviceBuffer;
