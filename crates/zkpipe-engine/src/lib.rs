//! The zkpipe proving engine: a scheduler with no networking. It keeps proving keys
//! resident under a host-memory budget and pipelines many concurrent jobs through CPU and
//! device stages.
//!
//! ```text
//!  submit ─► Queued ─► admission (memory, key lease) ─► Admitted ─► reduce (CPU pool)
//!         ─► Reduced ─► device (gate per device) ─► Proved ─► tail (CPU pool) ─► proof
//! ```
//!
//! Read [`engine`] for the wiring, [`submit`] for how a request enters, then the stages
//! in pipeline order (`stages/`), the messages between them (`messages`), and the key
//! store ([`keys`]) and the job store ([`job_store`]), which makes jobs outlive the
//! process (its durable implementations are in the `zkpipe-store` crate). The devices
//! come from a [`zkpipe_core::Devices`] (the CPU's is [`zkpipe_core::CpuDevices`]); the
//! curve is erased once, in `curves`.
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod config;
pub mod error;
pub mod job;
pub mod job_store;
mod live_job;

mod control;
pub mod engine;
mod stream_plan;
pub mod submit;

mod messages;
mod outcome;
mod stages;

mod curves;
mod devices;
mod gate;
mod janitor;
mod jobs;
pub mod keys;
mod partition;
pub mod status;
mod threads;

pub mod buffers;
pub mod memory;
pub mod metrics;
pub mod queue;
pub mod return_list;
pub mod split_devices;
pub mod trace;

pub use config::{EngineConfig, FleetConfig, StageConfig};
pub use engine::Engine;
pub use error::EngineError;
pub use job::{JobId, JobSnapshot, JobState, PartitionProof, Priority, ProofTimings, UnknownName};
pub use job_store::{JobStore, MemoryStore, SharedQueue, StoreError};
pub use keys::{KeyFailure, KeyMeta, KeyStatus, Residency, Tier};
pub use status::{DeviceStatus, EngineStatus, QueueDepths};
pub use submit::{StreamPlan, SubmitRequest, Submitted};
pub use zkpipe_core::{CpuDevices, DeviceInfo, Devices, Stage};
