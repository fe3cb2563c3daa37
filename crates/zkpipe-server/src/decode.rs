//! A request as the daemon decodes it: the protobuf message (prost, as tonic's codec calls
//! it, witnesses as `Bytes` slices of the received body), then the engine request it
//! becomes (priority converted by [`crate::protocol`]). The gRPC service and the `request` fuzz target share
//! these functions; the engine parses and checks every witness when the request is
//! submitted.
// tonic's `Status` is the error type of every gRPC method; boxing it here buys nothing.
#![allow(clippy::result_large_err)]

use crate::protocol::priority_from_wire;
use prost::bytes::Bytes;
use prost::Message;
use tonic::Status;
use zkpipe_engine::SubmitRequest;
use zkpipe_proto::server as wire;

/// The engine request of a decoded `SubmitProofRequest`.
pub(crate) fn submit_request(r: wire::SubmitProofRequest) -> Result<SubmitRequest<Bytes>, Status> {
    Ok(SubmitRequest {
        priority: priority_from_wire(r.priority)?,
        key_id: r.key_id,
        witnesses: r.witnesses,
        request_id: r.request_id,
    })
}

/// The engine request of a decoded `ProveRequest`, and how long to wait for it (ms).
pub(crate) fn prove_request(r: wire::ProveRequest) -> Result<(SubmitRequest<Bytes>, u64), Status> {
    let submit = r
        .submit
        .ok_or_else(|| Status::invalid_argument("ProveRequest.submit is missing"))?;
    Ok((submit_request(submit)?, r.timeout_ms))
}

/// tonic's status for a message that does not decode.
fn decode_error(e: prost::DecodeError) -> Status {
    Status::internal(e.to_string())
}

/// Decodes the body of a `SubmitProof` call into the engine request the daemon submits.
pub fn decode_submit(body: Bytes) -> Result<SubmitRequest<Bytes>, Status> {
    submit_request(wire::SubmitProofRequest::decode(body).map_err(decode_error)?)
}

/// Decodes the body of a `Prove` call into the engine request the daemon submits and the
/// wait in milliseconds.
pub fn decode_prove(body: Bytes) -> Result<(SubmitRequest<Bytes>, u64), Status> {
    prove_request(wire::ProveRequest::decode(body).map_err(decode_error)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use zkpipe_engine::Priority;
    use zkpipe_proto::pb;

    #[test]
    fn decodes_what_the_client_encodes() {
        let submit = pb::SubmitProofRequest {
            key_id: "k".into(),
            witnesses: vec![b"wtns".to_vec(), Vec::new()],
            priority: pb::Priority::High as i32,
            request_id: "r".into(),
        };
        let r = decode_submit(submit.encode_to_vec().into()).unwrap();
        assert_eq!(
            (r.key_id.as_str(), r.priority, r.request_id.as_str()),
            ("k", Priority::High, "r")
        );
        assert_eq!(r.witnesses, [&b"wtns"[..], &[][..]]);
        let prove = pb::ProveRequest {
            submit: Some(submit),
            timeout_ms: 7,
        };
        let (r, wait) = decode_prove(prove.encode_to_vec().into()).unwrap();
        assert_eq!((r.witnesses.len(), wait), (2, 7));
    }

    #[test]
    fn refuses_bad_priority_missing_submit_and_garbage() {
        let bad = pb::SubmitProofRequest {
            priority: 9,
            ..Default::default()
        };
        let e = decode_submit(bad.encode_to_vec().into()).unwrap_err();
        assert_eq!(e.code(), tonic::Code::InvalidArgument);
        let e = decode_prove(pb::ProveRequest::default().encode_to_vec().into()).unwrap_err();
        assert_eq!(e.code(), tonic::Code::InvalidArgument);
        let e = decode_submit(Bytes::from_static(&[0x0a, 0xff])).unwrap_err();
        assert_eq!(e.code(), tonic::Code::Internal);
    }
}
