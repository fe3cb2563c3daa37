//! The checks, one module per GPU path: each prints a line per case and returns whether
//! every case matched the CPU.

pub mod batch;
pub mod constant;
pub mod msm;
pub mod pinned;
pub mod quotient;
pub mod seam;
pub mod setup;
