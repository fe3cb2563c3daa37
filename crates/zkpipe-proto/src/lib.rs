//! The zkpipe daemon's gRPC protocol and its client, without the daemon.
//!
//! - [`pb`]: the messages of package `zkpipe.v1` (`proto/zkpipe.proto`) and the generated
//!   client, [`pb::prover_client::ProverClient`].
//! - [`server`]: the generated server side, as the daemon serves it.
//! - [`auth`]: the bearer token a client sends.
//! - [`client`]: [`connect`] to a daemon from its address and credentials ([`ClientOptions`]).
//! - [`names`]: priorities and job states as text (`high`, `queued`, …).
//! - [`upload`]: a job with large witnesses streamed in chunks ([`submit_streamed`]).
//!
//! The daemon's engine types and their mapping to these messages live in `zkpipe-server`;
//! this crate depends on tonic and prost only, so that a client does not build the daemon.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod auth;
pub mod client;
pub mod names;
pub mod upload;

/// Generated protobuf types and gRPC client of package `zkpipe.v1`.
#[allow(missing_docs, clippy::all)]
pub mod pb {
    tonic::include_proto!("zkpipe.v1");
}

/// The server side of `zkpipe.v1`: the `Prover` trait a daemon implements and the
/// `ProverServer` that serves it. The messages are [`pb`]'s, except the three that carry
/// witnesses: here `SubmitProofRequest.witnesses` is `Vec<Bytes>`, each witness a slice of
/// the received message rather than a copy of it (a 128 MB job was copied once more), and
/// `SubmitProofChunk.data` is `Bytes` likewise.
#[allow(missing_docs, clippy::all)]
pub mod server {
    include!(concat!(env!("OUT_DIR"), "/server/zkpipe.v1.rs"));
}

pub use auth::{ClientAuth, InvalidToken};
pub use client::{connect, Client, ClientOptions, ConnectError};
pub use names::{is_final, priority_name, state_name, UnknownPriority};
pub use upload::{submit_streamed, UploadError, WitnessSource};

/// HTTP/2 flow-control window per gRPC stream (one request), for both ends: witnesses are
/// large (32 bytes per signal, several per job), and HTTP/2's default windows would make a
/// sender wait for window updates every few hundred KiB.
pub const GRPC_STREAM_WINDOW: u32 = 16 << 20;
/// HTTP/2 flow-control window per connection (all streams of one client), for both ends.
pub const GRPC_CONNECTION_WINDOW: u32 = 64 << 20;
/// The largest HTTP/2 frame the daemon accepts (its clients may send frames this large): a
/// streamed witness chunk crosses in a few frames instead of hundreds of 16 KiB ones
/// (HTTP/2's default).
pub const GRPC_MAX_FRAME: u32 = 1 << 20;
