//! A job received as a stream (`SubmitProofStream`): its header first, checked before any
//! witness byte is read, then its witnesses in chunks, each witness's start checked as it
//! arrives. Every chunk is copied once, into its witness's buffer of the declared size, and
//! then dropped: a stream holds the witnesses it declared and a few chunks, no more. The
//! bytes every job being received holds together are bounded ([`InFlight`]).
// tonic's `Status` is the error type of every gRPC method; boxing it here buys nothing.
#![allow(clippy::result_large_err)]

use crate::protocol::priority_from_wire;
use prost::bytes::Bytes;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tonic::{Status, Streaming};
use zkpipe_engine::{EngineError, StreamPlan, SubmitRequest};
use zkpipe_proto::pb;
use zkpipe_proto::server::{submit_proof_chunk::Part, SubmitProofChunk};

/// The witness bytes every request being received holds, against a limit
/// (`server.max_inflight_request_bytes`).
#[derive(Debug)]
pub struct InFlight {
    held: Arc<AtomicU64>,
    limit: u64,
}

/// Bytes taken from an [`InFlight`], given back when dropped.
#[derive(Debug)]
pub struct Held {
    held: Arc<AtomicU64>,
    bytes: u64,
}

impl Drop for Held {
    fn drop(&mut self) {
        self.held.fetch_sub(self.bytes, Ordering::AcqRel);
    }
}

impl InFlight {
    /// At most `limit` bytes at once.
    pub fn new(limit: u64) -> Self {
        Self {
            held: Arc::new(AtomicU64::new(0)),
            limit,
        }
    }

    /// Takes `bytes` for one request, or refuses it with RESOURCE_EXHAUSTED when the
    /// requests already in flight leave too little.
    pub fn take(&self, bytes: u64) -> Result<Held, Status> {
        let taken = self
            .held
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
                held.checked_add(bytes).filter(|&total| total <= self.limit)
            });
        match taken {
            Ok(_) => Ok(Held {
                held: Arc::clone(&self.held),
                bytes,
            }),
            Err(held) => Err(Status::resource_exhausted(format!(
                "a job of {bytes} witness bytes does not fit: jobs being received hold {held} of the {} bytes server.max_inflight_request_bytes allows; retry later",
                self.limit
            ))),
        }
    }
}

/// The header every stream opens with: what the job declares.
pub fn header(first: Option<SubmitProofChunk>) -> Result<pb::SubmitProofHeader, Status> {
    match first.and_then(|c| c.part) {
        Some(Part::Header(h)) => Ok(h),
        Some(Part::Data(_)) => Err(Status::invalid_argument(
            "SubmitProofStream: the first message must be the header, not data",
        )),
        None => Err(Status::invalid_argument(
            "SubmitProofStream: the stream ended before its header",
        )),
    }
}

/// The witnesses of a stream whose header passed `plan`, each checked by its start as it
/// arrives (`check_start`, an engine error as a status by `refuse`).
pub async fn receive(
    plan: &StreamPlan,
    stream: &mut Streaming<SubmitProofChunk>,
    refuse: impl Fn(EngineError) -> Status,
) -> Result<Vec<Bytes>, Status> {
    let sizes = plan.sizes();
    let total: u64 = sizes.iter().sum();
    let mut assembly = Assembly::new(sizes)?;
    while let Some(chunk) = stream.message().await? {
        match chunk.part {
            Some(Part::Data(data)) => assembly.push(&data, plan, &refuse)?,
            Some(Part::Header(_)) => {
                return Err(Status::invalid_argument(
                    "SubmitProofStream: a second header",
                ))
            }
            None => {}
        }
        if assembly.overflow {
            return Err(Status::invalid_argument(format!(
                "SubmitProofStream: more witness bytes than the {total} the header declared"
            )));
        }
    }
    assembly.finish(total)
}

/// Witnesses being filled in order from a stream's chunks.
struct Assembly<'a> {
    sizes: &'a [u64],
    done: Vec<Bytes>,
    current: Vec<u8>,
    /// Whether the current witness's start was checked.
    checked: bool,
    received: u64,
    overflow: bool,
}

impl<'a> Assembly<'a> {
    fn new(sizes: &'a [u64]) -> Result<Self, Status> {
        let first = sizes.first().copied().unwrap_or(0);
        Ok(Self {
            sizes,
            done: Vec::with_capacity(sizes.len()),
            current: buffer(first)?,
            checked: false,
            received: 0,
            overflow: false,
        })
    }

    /// Appends `data`, finishing witnesses as they fill and checking each one's start
    /// once enough of it arrived.
    fn push(
        &mut self,
        mut data: &[u8],
        plan: &StreamPlan,
        refuse: impl Fn(EngineError) -> Status,
    ) -> Result<(), Status> {
        while !data.is_empty() {
            let i = self.done.len();
            let Some(&size) = self.sizes.get(i) else {
                self.overflow = true;
                return Ok(());
            };
            let room = (size as usize).saturating_sub(self.current.len());
            let (now, rest) = data.split_at(room.min(data.len()));
            self.current.extend_from_slice(now);
            self.received += now.len() as u64;
            data = rest;
            let head = StreamPlan::HEAD_BYTES.min(size as usize);
            if !self.checked && self.current.len() >= head {
                plan.check_start(i, &self.current[..head])
                    .map_err(&refuse)?;
                self.checked = true;
            }
            if self.current.len() as u64 == size {
                let next = self.sizes.get(i + 1).copied().unwrap_or(0);
                let whole = std::mem::replace(&mut self.current, buffer(next)?);
                self.done.push(Bytes::from(whole));
                self.checked = false;
            }
        }
        Ok(())
    }

    /// Every witness, once all arrived; else the stream ended early.
    fn finish(mut self, total: u64) -> Result<Vec<Bytes>, Status> {
        // Zero-length witnesses at the end are complete without a byte.
        while self.done.len() < self.sizes.len() && self.sizes[self.done.len()] == 0 {
            self.done.push(Bytes::new());
        }
        if self.done.len() < self.sizes.len() {
            return Err(Status::invalid_argument(format!(
                "SubmitProofStream: the stream ended after {} of the {total} witness bytes the header declared",
                self.received
            )));
        }
        Ok(self.done)
    }
}

/// A witness's buffer: its whole declared size, reserved at once so that it never grows
/// by copying (and handed to the engine as it is: `Bytes::from` takes the vector).
fn buffer(size: u64) -> Result<Vec<u8>, Status> {
    let mut v = Vec::new();
    usize::try_from(size)
        .ok()
        .and_then(|n| v.try_reserve_exact(n).ok())
        .ok_or_else(|| {
            Status::resource_exhausted(format!("cannot hold a witness of {size} bytes"))
        })?;
    Ok(v)
}

/// The engine request of a received stream.
pub fn request(
    h: pb::SubmitProofHeader,
    witnesses: Vec<Bytes>,
) -> Result<SubmitRequest<Bytes>, Status> {
    Ok(SubmitRequest {
        priority: priority_from_wire(h.priority)?,
        key_id: h.key_id,
        witnesses,
        request_id: h.request_id,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_flight_bytes_are_bounded_and_given_back() {
        let f = InFlight::new(100);
        let a = f.take(60).unwrap();
        let e = f.take(50).unwrap_err();
        assert_eq!(e.code(), tonic::Code::ResourceExhausted);
        assert_eq!(e.message().lines().count(), 1);
        assert!(
            e.message().contains("hold 60 of the 100 bytes"),
            "{}",
            e.message()
        );
        drop(a);
        let _b = f.take(100).unwrap();
        assert!(f.take(u64::MAX).is_err());
    }

    #[test]
    fn the_first_message_must_be_the_header() {
        let data = SubmitProofChunk {
            part: Some(Part::Data(Bytes::from_static(b"x"))),
        };
        assert_eq!(
            header(Some(data)).unwrap_err().code(),
            tonic::Code::InvalidArgument
        );
        assert_eq!(
            header(None).unwrap_err().code(),
            tonic::Code::InvalidArgument
        );
    }
}
