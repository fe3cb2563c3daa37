//! Jobs streamed in chunks (`SubmitProofStream`) to a daemon on loopback: a multi-partition
//! job that proves and verifies (through the client library and through `zkpipe submit`),
//! witnesses written to the store's files as they arrive, a stream cut mid-witness or
//! stalled past `server.stream_idle_timeout` that leaves no job and no file, a header refused before its
//! witness bytes are sent (unknown key, wrong length, wrong signal count), and the
//! in-flight byte limit, streamed and unary.

use crate::common;

use common::{check_done, key_fixture, start_daemon_with_settings};
use std::path::Path;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::Code;
use zkpipe_core::Bn254;
use zkpipe_engine::StreamPlan;
use zkpipe_proto::pb::{self, submit_proof_chunk::Part};
use zkpipe_proto::{connect, submit_streamed, ClientOptions, WitnessSource};

const KEY: &str = "bn254-multi";

fn header(key: &str, sizes: Vec<u64>) -> pb::SubmitProofChunk {
    pb::SubmitProofChunk {
        part: Some(Part::Header(pb::SubmitProofHeader {
            key_id: key.into(),
            witness_sizes: sizes,
            ..Default::default()
        })),
    }
}

fn data(bytes: &[u8]) -> pb::SubmitProofChunk {
    pb::SubmitProofChunk {
        part: Some(Part::Data(bytes.to_vec())),
    }
}

/// Files in the daemon's spilled-witness folder.
fn spilled(dir: &Path) -> usize {
    std::fs::read_dir(dir.join("zkpipe-state/witnesses")).map_or(0, |d| d.count())
}

/// Whether `done` holds within a minute (polled): far beyond what the daemon needs.
async fn wait_until(done: impl Fn() -> bool) -> bool {
    for _ in 0..600 {
        if done() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

/// The call's answer to `sent` while the stream stays open: the daemon must answer
/// without the rest of the bytes (a minute is far beyond any such answer; waiting longer
/// means it waits for bytes it was never sent).
async fn refused_while_open(
    c: &mut zkpipe_proto::Client,
    sent: Vec<pb::SubmitProofChunk>,
) -> tonic::Status {
    let (tx, rx) = mpsc::channel(8);
    for m in sent {
        tx.send(m).await.unwrap();
    }
    let call = c.submit_proof_stream(ReceiverStream::new(rx));
    let r = tokio::time::timeout(Duration::from_secs(60), call)
        .await
        .expect("the daemon waited for witness bytes instead of refusing the header");
    drop(tx);
    r.unwrap_err()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn streamed_jobs_prove_and_bad_streams_leave_nothing() {
    let wtns_path = key_fixture(KEY).join("witness.wtns");
    let wtns = std::fs::read(&wtns_path).unwrap();
    let w = wtns.len() as u64;
    // Six of these witnesses in flight at most; every witness is spilled to a file.
    let limit = format!("server.max_inflight_request_bytes={}", 6 * w);
    let d = start_daemon_with_settings(
        &[KEY, "bn254-poseidon"],
        "",
        &[
            &limit,
            "server.witness_inline_max=0",
            "server.stream_idle_timeout=1s",
        ],
    );
    let mut c = connect(&ClientOptions::new(d.grpc.clone())).await.unwrap();

    // A client that goes away mid-witness: no job, no file. Its witnesses go to the
    // store's files as they arrive (staged), before the stream ends.
    let (tx, rx) = mpsc::channel(8);
    tx.send(header(KEY, vec![w, w])).await.unwrap();
    tx.send(data(&wtns)).await.unwrap();
    tx.send(data(&wtns[..wtns.len() / 2])).await.unwrap();
    let mut gone = connect(&ClientOptions::new(d.grpc.clone())).await.unwrap();
    let call = tokio::spawn(async move { gone.submit_proof_stream(ReceiverStream::new(rx)).await });
    let staged = wait_until(|| spilled(d.dir()) == 2).await;
    assert!(
        staged,
        "the open stream's two witnesses were not staged in files"
    );
    call.abort();
    drop(tx);
    let removed = wait_until(|| spilled(d.dir()) == 0).await;
    assert!(removed, "an abandoned stream's staged files stayed");
    // A client that stalls mid-witness, its stream still open, is refused once it has
    // sent nothing for server.stream_idle_timeout, and its file goes.
    let e = refused_while_open(&mut c, vec![header(KEY, vec![w]), data(&wtns[..100])]).await;
    assert_eq!(e.code(), Code::DeadlineExceeded, "{e:?}");
    assert_eq!(
        e.message(),
        "SubmitProofStream: no message for 1000 ms (server.stream_idle_timeout); the job was not accepted"
    );
    assert_eq!(spilled(d.dir()), 0, "a stalled stream left its file");
    // A stream that ends early is refused in one line.
    let (tx, rx) = mpsc::channel(8);
    tx.send(header(KEY, vec![w])).await.unwrap();
    tx.send(data(&wtns[..100])).await.unwrap();
    drop(tx);
    let e = c
        .submit_proof_stream(ReceiverStream::new(rx))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
    assert_eq!(
        e.message(),
        format!("SubmitProofStream: the stream ended after 100 of the {w} witness bytes the header declared")
    );

    // Refused on the header alone, the stream still open: unknown key, too many bytes
    // in flight.
    let e = refused_while_open(&mut c, vec![header("no-such-key", vec![w])]).await;
    assert_eq!(e.code(), Code::NotFound, "{e:?}");
    assert!(
        e.message().starts_with("unknown key id \"no-such-key\""),
        "{e:?}"
    );
    let e = refused_while_open(&mut c, vec![header(KEY, vec![w; 7])]).await;
    assert_eq!(e.code(), Code::ResourceExhausted, "{e:?}");
    assert!(
        e.message().contains("server.max_inflight_request_bytes"),
        "{e:?}"
    );
    assert_eq!(e.message().lines().count(), 1);
    // ... and by a witness's first bytes: a declared length this key's witnesses do not
    // have, a witness of another circuit.
    let head = data(&wtns[..64]);
    let e = refused_while_open(&mut c, vec![header(KEY, vec![w + 1]), head]).await;
    assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
    assert_eq!(
        e.message(),
        format!("partition 0: malformed witness: declared as {} bytes, but a .wtns of {} values is {w} bytes", w + 1, (w - 76) / 32)
    );
    let other = std::fs::read(key_fixture("bn254-poseidon").join("witness.wtns")).unwrap();
    let e = refused_while_open(
        &mut c,
        vec![
            header(KEY, vec![w, other.len() as u64]),
            data(&wtns),
            data(&other[..64]),
        ],
    )
    .await;
    assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
    assert!(e.message().starts_with("partition 1: witness has"), "{e:?}");
    // The unary call counts against the same limit.
    let unary = pb::SubmitProofRequest {
        key_id: KEY.into(),
        witnesses: vec![wtns.clone(); 7],
        ..Default::default()
    };
    let e = c.submit_proof(unary).await.unwrap_err();
    assert_eq!(e.code(), Code::ResourceExhausted, "{e:?}");
    assert_eq!(spilled(d.dir()), 0, "a refused stream left a witness file");

    // A job of three partitions, streamed in chunks, proves; its proofs verify.
    let sources = (0..3)
        .map(|_| WitnessSource::file(&wtns_path).unwrap())
        .collect();
    let job = submit_streamed(
        &mut c,
        pb::SubmitProofHeader {
            key_id: KEY.into(),
            ..Default::default()
        },
        sources,
    )
    .await
    .unwrap();
    let mut plain = common::client(&d).await;
    let r = common::await_job(&mut plain, job.job_id).await;
    assert_eq!(r.partitions, 3);
    check_done(&r);
    // `zkpipe submit --stream always` takes the same path.
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_zkpipe"))
        .args(["submit", KEY, "--stream", "always", "--server", &d.grpc])
        .arg(&wtns_path)
        .arg(&wtns_path)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", common::text(&o));
    let id: u64 = String::from_utf8_lossy(&o.stdout).trim().parse().unwrap();
    check_done(&common::await_job(&mut plain, id).await);
    // Only the jobs that were sent whole exist.
    let s = plain
        .get_status(pb::GetStatusRequest {})
        .await
        .unwrap()
        .into_inner();
    let mut ids: Vec<u64> = s.jobs.iter().map(|j| j.job_id).collect();
    ids.sort_unstable();
    assert_eq!(ids, [job.job_id, id]);
}

/// A witness packed on the wire (`zkpipe submit` packs one that halves, as a circom
/// witness of 0s and 1s does) proves as its `.wtns` does, streamed or in one message; a
/// damaged one is refused in one line before it is queued.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn packed_witnesses_prove_as_their_wtns_does() {
    let work = tempfile::tempdir().unwrap();
    let (r1cs, wtns) = (work.path().join("s.r1cs"), work.path().join("s.wtns"));
    let run = |args: &[&std::ffi::OsStr]| {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_zkpipe"))
            .args(args)
            .output()
            .unwrap();
        assert!(o.status.success(), "{args:?}: {}", common::text(&o));
        o
    };
    run(&[
        "synth".as_ref(),
        r1cs.as_os_str(),
        wtns.as_os_str(),
        "--constraints".as_ref(),
        "1024".as_ref(),
        "--values".as_ref(),
        "sha256".as_ref(),
    ]);
    let zkey = work.path().join("sha.zkey");
    run(&[
        "setup".as_ref(),
        "--dev".as_ref(),
        r1cs.as_os_str(),
        zkey.as_os_str(),
    ]);
    let d = common::start_daemon_with_more_keys(&[], "", |keys| {
        std::fs::copy(&zkey, keys.join("sha.zkey")).unwrap();
    });
    let raw = std::fs::read(&wtns).unwrap();
    let packed = zkpipe_formats::packed_wtns::pack(&raw).expect("0s and 1s pack");
    assert!(
        packed.len() * 10 < raw.len(),
        "{} of {}",
        packed.len(),
        raw.len()
    );

    // The packed bytes by hand, in one message; then `zkpipe submit` as it packs by
    // default (in one message and streamed), and as it is with --no-pack.
    let mut c = common::client(&d).await;
    let mut jobs = vec![
        c.submit_proof(pb::SubmitProofRequest {
            key_id: "sha".into(),
            witnesses: vec![packed.clone()],
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .job_id,
    ];
    for extra in [&[][..], &["--stream", "always"], &["--no-pack"]] {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_zkpipe"))
            .args(["submit", "sha", "--server", &d.grpc])
            .args(extra)
            .arg(&wtns)
            .output()
            .unwrap();
        assert!(o.status.success(), "{extra:?}: {}", common::text(&o));
        jobs.push(String::from_utf8_lossy(&o.stdout).trim().parse().unwrap());
    }
    let mut public = Vec::new();
    for job in jobs {
        let r = common::await_job(&mut c, job).await;
        assert_eq!(r.state, pb::JobState::Done as i32, "job {job}: {}", r.error);
        common::assert_verifies::<Bn254>(&zkey, &r.proofs[0]);
        public.push(r.proofs[0].public_json.clone());
    }
    assert!(public.windows(2).all(|p| p[0] == p[1]), "{public:?}");

    // Streamed, a packed witness is checked by the .wtns head it carries as soon as that
    // arrives: one that declares another signal count is refused, the stream still open.
    let mut other = packed.clone();
    let count_at = zkpipe_formats::packed_wtns::HEAD_AT + 24 + 4 + 32;
    other[count_at] ^= 1;
    let head = StreamPlan::head_bytes(&other);
    let mut streams = connect(&ClientOptions::new(d.grpc.clone())).await.unwrap();
    let e = refused_while_open(
        &mut streams,
        vec![
            header("sha", vec![other.len() as u64]),
            data(&other[..head]),
        ],
    )
    .await;
    assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
    assert!(e.message().starts_with("partition 0: witness has"), "{e:?}");

    // Cut short, or a value above the modulus: refused, nothing queued.
    let mut above = raw.clone();
    let last = above.len() - 32;
    above[last..].fill(0xff); // the last value above the modulus
    let bad_value = zkpipe_formats::packed_wtns::pack(&above).expect("still 0s and 1s");
    for (bad, needle) in [
        (packed[..packed.len() - 1].to_vec(), "truncated"),
        (bad_value, "not below the field modulus"),
    ] {
        let e = c
            .submit_proof(pb::SubmitProofRequest {
                key_id: "sha".into(),
                witnesses: vec![bad],
                ..Default::default()
            })
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
        assert!(
            e.message().starts_with("partition 0: malformed witness: ")
                && e.message().contains(needle),
            "{e:?}"
        );
        assert!(!e.message().contains('\n'), "{e:?}");
    }
}
