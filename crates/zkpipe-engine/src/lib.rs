//! The zkpipe proving engine: a scheduler with no networking. It keeps proving keys
//! resident under a host-memory budget and pipelines many concurrent jobs through CPU and
//! device stages.
//!
//! ```text
//!  submit ─► admission (memory) ─► reduce (CPU pool) ─► device (lock per device) ─► tail (CPU pool) ─► proof
//! ```
//!
//! Read [`engine`] for the wiring, then one module per stage in pipeline order. The CPU
//! is a device like any other, through the [`devices::BackendFactory`] seam.
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod config;
pub mod error;
pub mod job;

pub mod admission;
pub mod device_stage;
pub mod reduce;
pub mod tail;

pub mod engine;

pub mod buffers;
pub mod devices;
pub mod keys;
pub mod memory;
pub mod metrics;
pub mod queue;
pub mod return_list;
pub mod trace;
mod work;

pub use config::{EngineConfig, StageConfig};
pub use devices::{BackendFactory, CpuFactory, DeviceInfo};
pub use engine::{DeviceStatus, Engine, EngineStatus, QueueDepths, SubmitRequest, Submitted};
pub use error::EngineError;
pub use job::{JobId, JobSnapshot, JobState, PartitionProof, Priority, ProofTimings};
pub use keys::{KeyMeta, KeyStatus, Residency};
