//! A job received as a stream (`SubmitProofStream`): its header first, checked before any
//! witness byte is read (its partitions reserved under `pipeline.max_pending_partitions`
//! by the [`StreamPlan`], which a failed stream drops), then its witnesses in chunks, each
//! witness's start checked as it arrives. A large witness goes to the job store's file as it arrives (staged): the
//! stream holds a few chunks of it, and the engine reads it back mapped. A small one, or
//! any where the store keeps no files, is copied once into a buffer of its declared size.
//! The bytes every job being received declares together are bounded ([`InFlight`]).
// tonic's `Status` is the error type of every gRPC method; boxing it here buys nothing.
#![allow(clippy::result_large_err)]

use crate::protocol::priority_from_wire;
use prost::bytes::Bytes;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinHandle;
use tonic::{Status, Streaming};
use zkpipe_engine::job_store::{Staged, StagedWitness, StagingWitness};
use zkpipe_engine::{Engine, EngineError, StoreError, StreamPlan, SubmitRequest};
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
/// arrives (`check_start`, an engine error as a status by `refuse`). A witness the job
/// store stages ([`Engine::stage_witness`]) goes to its file chunk by chunk, on a blocking
/// thread of its own that then syncs it while the next one arrives; the others are
/// gathered in memory.
pub async fn receive(
    plan: &StreamPlan,
    to: Destination<'_>,
    stream: &mut Streaming<SubmitProofChunk>,
    refuse: impl Fn(EngineError) -> Status,
) -> Result<Vec<Staged>, Status> {
    let sizes = plan.sizes();
    let total: u64 = sizes.iter().sum();
    let mut assembly = Assembly {
        sizes,
        to,
        turn: None,
        done: Vec::with_capacity(sizes.len()),
        current: None,
        received: 0,
    };
    match gather(&mut assembly, plan, stream, &refuse).await {
        Ok(()) => assembly.finish(total).await,
        Err(e) => {
            // A refused stream leaves no file behind once it is answered.
            assembly.abandon().await;
            Err(e)
        }
    }
}

/// Every chunk of the stream into `assembly`.
async fn gather(
    assembly: &mut Assembly<'_>,
    plan: &StreamPlan,
    stream: &mut Streaming<SubmitProofChunk>,
    refuse: impl Fn(EngineError) -> Status,
) -> Result<(), Status> {
    let idle = assembly.to.idle;
    loop {
        let next = tokio::time::timeout(idle, stream.message()).await;
        let Some(chunk) = next.map_err(|_| {
            Status::deadline_exceeded(format!(
                "SubmitProofStream: no message for {} ms (server.stream_idle_timeout); the job was not accepted",
                idle.as_millis()
            ))
        })??
        else {
            break;
        };
        match chunk.part {
            Some(Part::Data(data)) => assembly.push(data, plan, &refuse).await?,
            Some(Part::Header(_)) => {
                return Err(Status::invalid_argument(
                    "SubmitProofStream: a second header",
                ))
            }
            None => {}
        }
    }
    Ok(())
}

/// Streams whose witnesses go to the store's files at once, the others waiting their
/// turn (unread, so HTTP/2 flow control holds their clients back). Measured on the GPU
/// machine with every stream writing at once: 16 clients' 1.28 GB jobs shared the disk
/// for ~10 s, and none was accepted before all were (lab/experiments/042f-staged-witnesses.md);
/// a few at a time keep the disk as busy (4 writers: 1.8 GB/s, 1: 1.2 GB/s, 042e) and
/// accept the first jobs first.
pub const STAGING_STREAMS: usize = 4;

/// Where a stream's witnesses go: the engine (whose job store stages the large ones), in
/// one of `turns` ([`STAGING_STREAMS`]) once a witness is staged.
#[derive(Clone, Copy)]
pub struct Destination<'a> {
    /// The engine the job is submitted to.
    pub engine: &'a Engine,
    /// The turns of streams writing staged witnesses.
    pub turns: &'a Arc<Semaphore>,
    /// Longest wait for the client's next message (`server.stream_idle_timeout`): a
    /// stalled client must not keep its turn, or its in-flight bytes, for ever.
    pub idle: Duration,
}

/// Witnesses being filled in order from a stream's chunks.
struct Assembly<'a> {
    sizes: &'a [u64],
    to: Destination<'a>,
    /// This stream's turn, from its first staged witness on, until every file is synced.
    turn: Option<OwnedSemaphorePermit>,
    done: Vec<Received>,
    /// The witness being received, once its first byte came.
    current: Option<Current>,
    received: u64,
}

/// A witness received whole: in memory, or its file being finished.
enum Received {
    Memory(Bytes),
    File(JoinHandle<Result<Option<Box<dyn StagedWitness>>, StoreError>>),
}

/// The witness being received.
struct Current {
    size: u64,
    got: u64,
    /// Its first bytes, up to [`StreamPlan::head_bytes`], until checked.
    head: Vec<u8>,
    checked: bool,
    sink: Sink,
}

/// Where a witness's bytes go.
enum Sink {
    Memory(Vec<u8>),
    /// To the store's file, through its writer thread.
    File {
        chunks: mpsc::Sender<Bytes>,
        writer: JoinHandle<Result<Option<Box<dyn StagedWitness>>, StoreError>>,
    },
}

/// Chunks queued for a witness's writer thread: a few, so that receiving runs ahead of
/// the disk by at most this many chunks.
const WRITE_QUEUE: usize = 4;

impl Assembly<'_> {
    /// Appends `data`, finishing witnesses as they fill and checking each one's start
    /// once enough of it arrived; refused when more bytes come than the header declared.
    async fn push(
        &mut self,
        mut data: Bytes,
        plan: &StreamPlan,
        refuse: impl Fn(EngineError) -> Status,
    ) -> Result<(), Status> {
        while !data.is_empty() {
            let i = self.done.len();
            let Some(&size) = self.sizes.get(i) else {
                let total: u64 = self.sizes.iter().sum();
                return Err(Status::invalid_argument(format!(
                    "SubmitProofStream: more witness bytes than the {total} the header declared"
                )));
            };
            let cur = match &mut self.current {
                Some(cur) => cur,
                empty => empty.insert(open(self.to, &mut self.turn, size, &refuse).await?),
            };
            let room = usize::try_from(cur.size - cur.got).unwrap_or(usize::MAX);
            let now = data.split_to(room.min(data.len()));
            if !cur.checked {
                // The head's length is known once its first bytes are (a packed witness's
                // is longer), so it is taken in two steps.
                let target = |head: &[u8]| StreamPlan::head_bytes(head).min(size as usize);
                let mut taken = 0;
                for _ in 0..2 {
                    let want = (target(&cur.head) - cur.head.len()).min(now.len() - taken);
                    cur.head.extend_from_slice(&now[taken..taken + want]);
                    taken += want;
                }
                if cur.head.len() == target(&cur.head) {
                    plan.check_start(i, &cur.head).map_err(&refuse)?;
                    cur.checked = true;
                }
            }
            cur.got += now.len() as u64;
            self.received += now.len() as u64;
            match &mut cur.sink {
                Sink::Memory(v) => v.extend_from_slice(&now),
                Sink::File { chunks, .. } => {
                    if chunks.send(now).await.is_err() {
                        // The writer stopped: it failed, and says why.
                        let Some(Current {
                            sink: Sink::File { writer, .. },
                            ..
                        }) = self.current.take()
                        else {
                            unreachable!("the current witness goes to a file")
                        };
                        return Err(match writer.await {
                            Ok(Err(e)) => staging_failed(e),
                            _ => Status::internal("a witness's writer stopped"),
                        });
                    }
                }
            }
            if cur.got == cur.size {
                self.finish_current();
            }
        }
        Ok(())
    }

    /// The current witness is complete: into `done` (a file's writer, told no more
    /// chunks come, syncs it meanwhile).
    fn finish_current(&mut self) {
        if let Some(cur) = self.current.take() {
            self.done.push(match cur.sink {
                Sink::Memory(v) => Received::Memory(Bytes::from(v)),
                Sink::File { writer, .. } => Received::File(writer),
            });
        }
    }

    /// Waits for every writer to stop, dropping what each staged: their files are gone
    /// when this returns.
    async fn abandon(&mut self) {
        let current = self.current.take().and_then(|c| match c.sink {
            Sink::File { chunks, writer } => {
                drop(chunks);
                Some(writer)
            }
            Sink::Memory(_) => None,
        });
        let done = std::mem::take(&mut self.done).into_iter();
        let writers = done.filter_map(|r| match r {
            Received::File(w) => Some(w),
            Received::Memory(_) => None,
        });
        for writer in writers.chain(current) {
            let _ = writer.await;
        }
    }

    /// Every witness, once all arrived; else the stream ended early (and the files
    /// written so far are removed before the answer).
    async fn finish(mut self, total: u64) -> Result<Vec<Staged>, Status> {
        // Zero-length witnesses at the end are complete without a byte.
        while self.current.is_none()
            && self.done.len() < self.sizes.len()
            && self.sizes[self.done.len()] == 0
        {
            self.done.push(Received::Memory(Bytes::new()));
        }
        if self.done.len() < self.sizes.len() {
            let e = Status::invalid_argument(format!(
                "SubmitProofStream: the stream ended after {} of the {total} witness bytes the header declared",
                self.received
            ));
            self.abandon().await;
            return Err(e);
        }
        let mut out = Vec::with_capacity(self.done.len());
        let mut failed = None;
        // Every writer is awaited, even after one failed, so that no file outlives the
        // answer.
        for r in std::mem::take(&mut self.done) {
            let got = match r {
                Received::Memory(b) => Ok(Staged::Memory(b)),
                Received::File(writer) => match writer.await {
                    Ok(Ok(Some(w))) => Ok(Staged::File(w)),
                    Ok(Ok(None)) => Err(Status::internal("a staged witness ended incomplete")),
                    Ok(Err(e)) => Err(staging_failed(e)),
                    Err(e) => Err(Status::internal(e.to_string())),
                },
            };
            match got {
                Ok(w) => out.push(w),
                Err(e) => failed = failed.or(Some(e)),
            }
        }
        match failed {
            None => Ok(out),
            Some(e) => Err(e),
        }
    }
}

/// The next witness, of `size` bytes: staged in the job store's file if it takes it
/// (once the stream has its `turn`), else gathered in memory.
async fn open(
    to: Destination<'_>,
    turn: &mut Option<OwnedSemaphorePermit>,
    size: u64,
    refuse: impl Fn(EngineError) -> Status,
) -> Result<Current, Status> {
    let staging = if size == 0 {
        None
    } else {
        let engine = to.engine.clone();
        tokio::task::spawn_blocking(move || engine.stage_witness(size))
            .await
            .map_err(|e| Status::internal(e.to_string()))?
            .map_err(refuse)?
    };
    let sink = match staging {
        None => Sink::Memory(buffer(size)?),
        Some(staging) => {
            if turn.is_none() {
                let permit = Arc::clone(to.turns).acquire_owned().await;
                *turn = Some(permit.map_err(|_| Status::internal("staging turns closed"))?);
            }
            let (chunks, rx) = mpsc::channel(WRITE_QUEUE);
            let writer = tokio::task::spawn_blocking(move || write(staging, rx, size));
            Sink::File { chunks, writer }
        }
    };
    Ok(Current {
        size,
        got: 0,
        head: Vec::new(),
        checked: false,
        sink,
    })
}

/// A staged witness's writer thread: every chunk into the file, then the file finished
/// (synced, mapped); `None` when the stream stopped before `size` bytes (dropping the
/// unfinished file removes it).
fn write(
    mut staging: Box<dyn StagingWitness>,
    mut chunks: mpsc::Receiver<Bytes>,
    size: u64,
) -> Result<Option<Box<dyn StagedWitness>>, StoreError> {
    let mut written = 0u64;
    while let Some(chunk) = chunks.blocking_recv() {
        staging.write(&chunk)?;
        written += chunk.len() as u64;
    }
    if written < size {
        return Ok(None);
    }
    staging.finish().map(Some)
}

/// A witness the job store could not write: the daemon's fault, not the request's.
fn staging_failed(e: StoreError) -> Status {
    Status::internal(format!("staging a witness: {e}"))
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
    witnesses: Vec<Staged>,
) -> Result<SubmitRequest<Staged>, Status> {
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
