//! Submitting a job whose witnesses are too large for one message: [`submit_streamed`]
//! sends them through `SubmitProofStream`, read from their sources in chunks by a thread
//! of their own, so that the client holds a few chunks at a time, never a whole witness.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use zkpipe_proto::{connect, pb, ClientOptions, WitnessSource};
//! let mut client = connect(&ClientOptions::new("127.0.0.1:50051")).await?;
//! let header = pb::SubmitProofHeader { key_id: "big".into(), ..Default::default() };
//! let sources = vec![WitnessSource::file("part0.wtns".as_ref())?];
//! let job = zkpipe_proto::submit_streamed(&mut client, header, sources).await?;
//! println!("job {}", job.job_id);
//! # Ok(()) }
//! ```

use crate::pb;
use crate::Client;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

/// Bytes of witness per streamed message: large enough that per-message costs vanish,
/// small enough that a few in flight are little memory.
pub const STREAM_CHUNK_BYTES: usize = 4 << 20;
/// Messages the reader may run ahead of the connection.
const CHUNKS_AHEAD: usize = 2;
/// A job whose witnesses together exceed this goes by `SubmitProofStream` in
/// `zkpipe submit` and the lab's load tools ([`StreamMode::Auto`]): below it one message
/// costs less than a stream.
pub const STREAM_ABOVE_BYTES: u64 = 4 << 20;

/// One partition's witness (or circuit inputs) to stream: its size, declared in the
/// header before any byte is sent, and where its bytes come from.
pub struct WitnessSource {
    size: u64,
    name: String,
    reader: Box<dyn Read + Send>,
}

impl std::fmt::Debug for WitnessSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WitnessSource")
            .field("size", &self.size)
            .field("name", &self.name)
            .finish()
    }
}

impl WitnessSource {
    /// `size` bytes from `reader`; `name` names it in errors.
    pub fn new(name: impl Into<String>, size: u64, reader: impl Read + Send + 'static) -> Self {
        Self {
            size,
            name: name.into(),
            reader: Box::new(reader),
        }
    }

    /// A file, its size as it is now.
    pub fn file(path: &Path) -> Result<Self, UploadError> {
        let read = |source| UploadError::Read {
            name: path.display().to_string(),
            source,
        };
        let f = std::fs::File::open(path).map_err(read)?;
        let size = f.metadata().map_err(read)?.len();
        Ok(Self::new(path.display().to_string(), size, f))
    }

    /// Its declared size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }
}

/// Why [`submit_streamed`] failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UploadError {
    /// A witness could not be read, or gave another number of bytes than declared.
    #[error("reading {name}")]
    Read {
        /// The source's name (a path).
        name: String,
        /// Why.
        source: std::io::Error,
    },
    /// The daemon refused the job (or the call failed).
    #[error("{}: {}", .0.code(), .0.message())]
    Rpc(Box<tonic::Status>),
}

impl From<tonic::Status> for UploadError {
    fn from(s: tonic::Status) -> Self {
        Self::Rpc(Box::new(s))
    }
}

/// How a job's witnesses travel: `--stream` of `zkpipe submit` and of the lab's load tools.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StreamMode {
    /// By stream above [`STREAM_ABOVE_BYTES`] in total, else as one message.
    #[default]
    Auto,
    /// By stream, whatever their size.
    Always,
    /// As one message, which the daemon's `server.max_request_bytes` bounds.
    Never,
}

impl StreamMode {
    /// Whether a job whose witnesses have these sizes goes by stream. One with an empty
    /// witness goes as one message, whose reading names the problem.
    pub fn streams(self, sizes: &[u64]) -> bool {
        let large = sizes.iter().sum::<u64>() > STREAM_ABOVE_BYTES;
        !sizes.contains(&0)
            && match self {
                Self::Auto => large,
                Self::Always => true,
                Self::Never => false,
            }
    }
}

/// Submits a job through `SubmitProofStream`: `header` with each source's size in
/// `witness_sizes` (what the caller put there is replaced), then every source's bytes in
/// order. A source that fails or ends early breaks the stream, so the daemon keeps nothing
/// of the job; that read error is what this returns.
pub async fn submit_streamed(
    client: &mut Client,
    header: pb::SubmitProofHeader,
    sources: Vec<WitnessSource>,
) -> Result<pb::SubmitProofResponse, UploadError> {
    submit_streamed_response(client, header, sources)
        .await
        .map(tonic::Response::into_inner)
}

/// [`submit_streamed`], with the reply's metadata (the daemon's `server-timing`).
pub async fn submit_streamed_response(
    client: &mut Client,
    mut header: pb::SubmitProofHeader,
    sources: Vec<WitnessSource>,
) -> Result<tonic::Response<pb::SubmitProofResponse>, UploadError> {
    header.witness_sizes = sources.iter().map(|s| s.size).collect();
    let (tx, rx) = mpsc::channel(CHUNKS_AHEAD);
    let first = pb::SubmitProofChunk {
        part: Some(pb::submit_proof_chunk::Part::Header(header)),
    };
    // Reading files blocks: it runs on a thread of its own, never on the runtime's. A
    // read error is kept before the stream ends (which the daemon refuses as short).
    let failed = Arc::new(Mutex::new(None));
    let slot = Arc::clone(&failed);
    let reader = std::thread::spawn(move || {
        if tx.blocking_send(first).is_err() {
            return;
        }
        for s in sources {
            match send_source(s, &tx) {
                Ok(true) => {}
                Ok(false) => return,
                Err(e) => {
                    *slot.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                    return;
                }
            }
        }
    });
    let call = client.submit_proof_stream(ReceiverStream::new(rx)).await;
    // Accepted: every byte was sent and the reader is done. Refused: the reader may still
    // wait to send, until the call's end drops the stream; it is not waited for.
    if call.is_ok() {
        let _ = reader.join();
    }
    // A read error explains the call's failure better than the daemon's "ended early".
    if let Some(e) = failed.lock().unwrap_or_else(|p| p.into_inner()).take() {
        return Err(e);
    }
    Ok(call?)
}

/// Sends one source's bytes in chunks; false once the call is gone (it failed: its status
/// says why). A source giving another number of bytes than declared is an error.
fn send_source(
    mut s: WitnessSource,
    tx: &mpsc::Sender<pb::SubmitProofChunk>,
) -> Result<bool, UploadError> {
    let err = |name: &str, source| UploadError::Read {
        name: name.to_string(),
        source,
    };
    let mut left = s.size;
    while left > 0 {
        let want = left.min(STREAM_CHUNK_BYTES as u64) as usize;
        let mut buf = vec![0u8; want];
        let mut got = 0;
        while got < want {
            match s.reader.read(&mut buf[got..]) {
                Ok(0) => {
                    let short = std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        format!(
                            "{} bytes declared, {} read",
                            s.size,
                            s.size - left + got as u64
                        ),
                    );
                    return Err(err(&s.name, short));
                }
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(err(&s.name, e)),
            }
        }
        left -= want as u64;
        let chunk = pb::SubmitProofChunk {
            part: Some(pb::submit_proof_chunk::Part::Data(buf)),
        };
        if tx.blocking_send(chunk).is_err() {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The paths' sizes, if every one is a regular file (stdin and pipes are read whole).
pub fn file_sizes(paths: &[PathBuf]) -> Option<Vec<u64>> {
    paths
        .iter()
        .map(|p| {
            std::fs::metadata(p)
                .ok()
                .filter(|m| m.is_file())
                .map(|m| m.len())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_streams_above_the_threshold_and_no_mode_streams_an_empty_witness() {
        let big = STREAM_ABOVE_BYTES;
        assert!(!StreamMode::Auto.streams(&[big]));
        assert!(StreamMode::Auto.streams(&[big, 1]));
        assert!(StreamMode::Always.streams(&[1]));
        assert!(!StreamMode::Never.streams(&[big, big]));
        assert!(!StreamMode::Always.streams(&[big, 0]));
        assert!(!StreamMode::Auto.streams(&[big, big, 0]));
    }

    #[test]
    fn a_source_is_sent_in_chunks_and_a_short_one_is_an_error() {
        let data: Vec<u8> = (0..(STREAM_CHUNK_BYTES + 5)).map(|i| i as u8).collect();
        let (tx, mut rx) = mpsc::channel(8);
        let s = WitnessSource::new("w", data.len() as u64, std::io::Cursor::new(data.clone()));
        assert!(send_source(s, &tx).unwrap());
        let mut got = Vec::new();
        while let Ok(c) = rx.try_recv() {
            match c.part {
                Some(pb::submit_proof_chunk::Part::Data(d)) => got.push(d),
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(got.len(), 2);
        assert_eq!(got.concat(), data);
        let short = WitnessSource::new("w.wtns", 10, std::io::Cursor::new(vec![1u8; 4]));
        let e = send_source(short, &tx).unwrap_err();
        assert_eq!(e.to_string(), "reading w.wtns");
        let UploadError::Read { source, .. } = e else {
            panic!()
        };
        assert_eq!(source.to_string(), "10 bytes declared, 4 read");
    }
}
