//! The daemon's request decoding: a `SubmitProof` or `Prove` call's body, as the daemon
//! decodes it, then the checks the engine makes before it queues anything that need no
//! key (the key id, every witness parsed and converted). The engine's remaining checks
//! compare a witness with a key's header (curve, length): two integer comparisons.

use prost::bytes::Bytes;
use prost::Message;
use zkpipe_engine::keys::valid_key_id;
use zkpipe_engine::SubmitRequest;
use zkpipe_server::decode::{decode_prove, decode_submit};
use zkpipe_server::pb;
use zkpipe_server::protocol::priority_from_wire;

/// Both messages that carry a job, decoded from the same bytes.
pub fn request(data: &[u8]) {
    let body = Bytes::copy_from_slice(data);

    let daemon = decode_submit(body.clone());
    let client = pb::SubmitProofRequest::decode(data);
    agree(daemon.as_ref(), client.as_ref().map(Some));
    if let Ok(c) = &client {
        let again = decode_submit(c.encode_to_vec().into());
        agree(again.as_ref(), Ok(Some(c)));
    }
    if let Ok(r) = &daemon {
        engine_checks(r);
    }

    let daemon = decode_prove(body);
    let client = pb::ProveRequest::decode(data);
    let inner = client.as_ref().map(|c| c.submit.as_ref());
    agree(daemon.as_ref().map(|(r, _)| r), inner);
    if let (Ok((_, wait)), Ok(c)) = (&daemon, &client) {
        assert_eq!(*wait, c.timeout_ms);
    }
    if let Ok((r, _)) = &daemon {
        engine_checks(r);
    }
}

/// The daemon's decoding (`Bytes` witnesses, priority converted) and the public client
/// types (`Vec<u8>` witnesses) agree: both refuse the bytes, or both read the same request,
/// or the daemon refuses only what the conversion refuses (an unknown priority, a
/// `ProveRequest` without its request).
fn agree(
    daemon: Result<&SubmitRequest<Bytes>, &tonic::Status>,
    client: Result<Option<&pb::SubmitProofRequest>, &prost::DecodeError>,
) {
    match (daemon, client) {
        (Ok(d), Ok(Some(c))) => {
            assert_eq!(d.key_id, c.key_id);
            assert_eq!(d.request_id, c.request_id);
            assert_eq!(
                Ok(d.priority),
                priority_from_wire(c.priority).map_err(|_| ())
            );
            assert_eq!(d.witnesses, c.witnesses);
        }
        (Ok(_), Ok(None)) => panic!("the daemon accepted a ProveRequest without its request"),
        (Ok(_), Err(e)) => panic!("the daemon decoded what the client types refuse: {e}"),
        (Err(s), Ok(c)) => {
            assert_eq!(s.code(), tonic::Code::InvalidArgument, "{s}");
            assert!(
                c.is_none_or(|c| priority_from_wire(c.priority).is_err()),
                "{s}"
            );
        }
        (Err(s), Err(_)) => assert_eq!(s.code(), tonic::Code::Internal, "{s}"),
    }
}

/// What the engine checks before it looks at the key (see the module doc).
fn engine_checks(r: &SubmitRequest<Bytes>) {
    let _ = valid_key_id(&r.key_id);
    for w in &r.witnesses {
        crate::wtns(w);
    }
}
