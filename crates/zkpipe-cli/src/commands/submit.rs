//! `zkpipe submit <key-id> <witness.wtns>... [--input input.json]...`: queue a job (one
//! partition per witness or per set of circuit inputs) and print its id. Above
//! [`STREAM_ABOVE_BYTES`](zkpipe_proto::upload::STREAM_ABOVE_BYTES) of files the job goes
//! as a stream of chunks read from the files as they are sent (`SubmitProofStream`), so
//! that neither end holds a whole message. A witness that packs to half its size or less
//! travels packed (`--no-pack`: as it is).

use super::client::{connect, rpc, runtime, ServerArg, Stream};
use anyhow::Result;
use std::io::Cursor;
use std::path::{Path, PathBuf};
use zkpipe_formats::mapped::MappedFile;
use zkpipe_formats::packed_wtns;
use zkpipe_proto::pb;
use zkpipe_proto::upload::{file_sizes, StreamMode};
use zkpipe_proto::{submit_streamed, UploadError, WitnessSource};

/// Arguments of `submit`.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    server: ServerArg,
    /// The key id (file stem of a .zkey in the daemon's key directory).
    key: String,
    /// One witness per partition.
    #[arg(required_unless_present = "input")]
    wtns: Vec<PathBuf>,
    /// Circuit inputs (snarkjs's input.json), one partition each, after the witnesses:
    /// the daemon computes the witness with the key's generator (`<key>.wasm` or a native
    /// generator beside `<key>.zkey`).
    #[arg(long, value_name = "input.json")]
    input: Vec<PathBuf>,
    /// low, normal, high or critical.
    #[arg(long, default_value = "normal")]
    priority: pb::Priority,
    /// Idempotency key: submitting it again returns the same job.
    #[arg(long, default_value = "")]
    request_id: String,
    /// How the witnesses travel: auto streams them in chunks above 4 MiB of files,
    /// always streams any files, never sends one message (the daemon's
    /// server.max_request_bytes bounds it).
    #[arg(long, value_enum, default_value = "auto")]
    stream: Stream,
    /// Send each witness as it is. By default a witness that packs to half its size or
    /// less (a circom witness of mostly 0s and 1s packs ~20 times smaller) travels
    /// packed, which the daemon reads as it is. A --request-id matches the bytes sent:
    /// send it again with the same choice.
    #[arg(long)]
    no_pack: bool,
}

/// Runs `submit`.
pub fn run(a: Args) -> Result<()> {
    let paths: Vec<PathBuf> = a.wtns.iter().chain(&a.input).cloned().collect();
    let witnesses = if a.no_pack {
        paths.iter().map(|p| Wire::as_it_is(p)).collect()
    } else {
        paths
            .iter()
            .map(|p| Wire::packed(p))
            .collect::<Result<Vec<_>>>()?
    };
    let sizes: Vec<u64> = witnesses.iter().map(Wire::size).collect();
    // Files only: stdin and pipes are read whole.
    if witnesses.iter().all(Wire::sized) && StreamMode::from(a.stream).streams(&sizes) {
        return streamed(&a, witnesses);
    }
    let witnesses = witnesses
        .into_iter()
        .map(Wire::into_bytes)
        .collect::<Result<Vec<_>>>()?;
    runtime()?.block_on(async {
        let mut c = connect(&a.server).await?;
        let r = c
            .submit_proof(pb::SubmitProofRequest {
                key_id: a.key.clone(),
                witnesses,
                priority: a.priority as i32,
                request_id: a.request_id.clone(),
            })
            .await
            .map_err(rpc)?
            .into_inner();
        report(&a, &r);
        Ok(())
    })
}

/// One partition as it travels.
enum Wire {
    /// Bytes in memory: a packed witness, or what was not a regular file.
    Bytes(Vec<u8>),
    /// A regular file sent as it is, read as it is sent; its size now.
    File(PathBuf, u64),
    /// Not a regular file: read whole when sent.
    Unsized(PathBuf),
}

impl Wire {
    /// `path` as it is.
    fn as_it_is(path: &Path) -> Self {
        match file_sizes(&[path.to_path_buf()]) {
            Some(size) => Wire::File(path.to_path_buf(), size[0]),
            None => Wire::Unsized(path.to_path_buf()),
        }
    }

    /// `path` packed where that halves it (as [`super::client::wire_form`] does); else as it
    /// is, left in its file where it is one. A file is read through a map, so only the
    /// packed form is held in memory.
    fn packed(path: &Path) -> Result<Self> {
        let file = MappedFile::open(path)?;
        if let Some(packed) = packed_wtns::pack(file.bytes()) {
            return Ok(Wire::Bytes(packed));
        }
        Ok(match Wire::as_it_is(path) {
            // A pipe was read whole already.
            Wire::Unsized(_) => Wire::Bytes(file.bytes().to_vec()),
            file => file,
        })
    }

    fn size(&self) -> u64 {
        match self {
            Wire::Bytes(b) => b.len() as u64,
            Wire::File(_, size) => *size,
            Wire::Unsized(_) => 0,
        }
    }

    fn sized(&self) -> bool {
        !matches!(self, Wire::Unsized(_))
    }

    fn into_bytes(self) -> Result<Vec<u8>> {
        Ok(match self {
            Wire::Bytes(b) => b,
            Wire::File(p, _) | Wire::Unsized(p) => zkpipe_formats::files::read_input(&p)?,
        })
    }

    fn into_source(self) -> Result<WitnessSource> {
        Ok(match self {
            Wire::Bytes(b) => {
                WitnessSource::new("a packed witness", b.len() as u64, Cursor::new(b))
            }
            Wire::File(p, _) | Wire::Unsized(p) => WitnessSource::file(&p)?,
        })
    }
}

/// Submits `witnesses` as a stream.
fn streamed(a: &Args, witnesses: Vec<Wire>) -> Result<()> {
    let sources = witnesses
        .into_iter()
        .map(Wire::into_source)
        .collect::<Result<Vec<_>>>()?;
    let header = pb::SubmitProofHeader {
        key_id: a.key.clone(),
        priority: a.priority as i32,
        request_id: a.request_id.clone(),
        witness_sizes: Vec::new(),
    };
    runtime()?.block_on(async {
        let mut c = connect(&a.server).await?;
        let r = submit_streamed(&mut c, header, sources)
            .await
            .map_err(|e| match e {
                UploadError::Rpc(s) => rpc(*s),
                e => anyhow::Error::new(e),
            })?;
        report(a, &r);
        Ok(())
    })
}

/// Prints the job's id (and whether it existed).
fn report(a: &Args, r: &pb::SubmitProofResponse) {
    println!("{}", r.job_id);
    if r.existing {
        eprintln!(
            "zkpipe: request id {:?} was seen before: job {}",
            a.request_id, r.job_id
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zkpipe_formats::wtns::Wtns;
    use zkpipe_formats::CurveId;

    /// A `.wtns` file of `n` values, each `value` in its low byte (and `high` in its top one).
    fn wtns_file(dir: &Path, name: &str, value: u8, high: u8) -> PathBuf {
        let mut one = [0u8; 32];
        one[0] = value;
        one[30] = high;
        let path = dir.join(name);
        let w = Wtns {
            curve: CurveId::Bn254,
            n_witness: 64,
            values: one.repeat(64),
        };
        std::fs::write(&path, w.to_bytes()).unwrap();
        path
    }

    #[test]
    fn a_witness_that_halves_travels_packed_and_any_other_from_its_file() {
        let d = tempfile::tempdir().unwrap();
        let bits = wtns_file(d.path(), "bits.wtns", 1, 0);
        let raw = std::fs::metadata(&bits).unwrap().len();
        match Wire::packed(&bits).unwrap() {
            Wire::Bytes(b) => assert!((b.len() as u64) * 2 <= raw, "{} of {raw}", b.len()),
            _ => panic!("0s and 1s must travel packed"),
        }
        assert!(matches!(Wire::as_it_is(&bits), Wire::File(_, size) if size == raw));
        let wide = wtns_file(d.path(), "wide.wtns", 1, 1);
        assert!(matches!(Wire::packed(&wide).unwrap(), Wire::File(p, _) if p == wide));
    }
}
