//! Many processes, one measurement: under `mpirun`, every rank runs the same
//! benchmark on its own file or its part of a shared file (IOR's layouts),
//! the ranks meet at barriers around open, I/O and close, and rank 0 merges
//! their results exactly (histograms, not averages of percentiles). The MPI
//! transport is the `mpi` cargo feature; layouts and aggregation are plain
//! code, tested without it.

pub mod aggregate;
pub mod run;
pub mod serve;
pub mod wearout;
pub mod world;

pub use aggregate::{encode_histogram, Aggregate, RankReport, Spread};
pub use iolab_bench::rank_place::{Layout, RankPlace};
pub use wearout::{combine, StonewallFigure, StonewallPoint};
pub use world::{launched_rank, launched_ranks, World, WorldError, MPI_BUILT};
