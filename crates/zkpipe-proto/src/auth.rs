//! The client's bearer token: a daemon with a token configured refuses every call without
//! `authorization: Bearer <token>` (UNAUTHENTICATED). [`ClientAuth`] adds that header to
//! each call.

use tonic::metadata::{Ascii, MetadataValue};
use tonic::service::Interceptor;
use tonic::Status;

/// A token that cannot travel in a header.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the token must be printable ASCII")]
pub struct InvalidToken;

/// The client side of the token: adds `authorization: Bearer <token>` to every call
/// (nothing without a token).
#[derive(Clone, Default)]
pub struct ClientAuth(Option<MetadataValue<Ascii>>);

impl std::fmt::Debug for ClientAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let token = if self.0.is_some() {
            "<redacted>"
        } else {
            "none"
        };
        write!(f, "ClientAuth({token})")
    }
}

impl ClientAuth {
    /// Sends `token` (surrounding whitespace dropped, as a token file's newline), or
    /// nothing for `None`.
    pub fn new(token: Option<&str>) -> Result<Self, InvalidToken> {
        token
            .map(|t| {
                format!("Bearer {}", t.trim())
                    .parse()
                    .map_err(|_| InvalidToken)
            })
            .transpose()
            .map(Self)
    }
}

impl Interceptor for ClientAuth {
    fn call(&mut self, mut req: tonic::Request<()>) -> Result<tonic::Request<()>, Status> {
        if let Some(v) = &self.0 {
            req.metadata_mut().insert("authorization", v.clone());
        }
        Ok(req)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(auth: &mut ClientAuth) -> Option<String> {
        let req = auth.call(tonic::Request::new(())).unwrap();
        let v = req.metadata().get("authorization")?;
        Some(v.to_str().unwrap().to_string())
    }

    #[test]
    fn the_token_travels_trimmed_and_only_when_given() {
        let mut auth = ClientAuth::new(Some("  0123456789abcdef\n")).unwrap();
        assert_eq!(
            header(&mut auth).as_deref(),
            Some("Bearer 0123456789abcdef")
        );
        assert_eq!(format!("{auth:?}"), "ClientAuth(<redacted>)");
        assert_eq!(header(&mut ClientAuth::new(None).unwrap()), None);
        assert_eq!(
            ClientAuth::new(Some("two\nlines")).unwrap_err(),
            InvalidToken
        );
    }
}
