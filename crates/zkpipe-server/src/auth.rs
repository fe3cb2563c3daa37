//! Bearer-token authentication: with a token configured, every gRPC call and the HTTP
//! `/metrics` and `/trace` endpoints need `authorization: Bearer <token>` (`/healthz`
//! stays open for load balancers). The comparison takes the same time wherever the
//! tokens differ. [`ClientAuth`] is the client side (`zkpipe-proto`'s): it adds the
//! header to each call.

use axum::extract::Request;
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use subtle::ConstantTimeEq;
use tonic::service::Interceptor;
use tonic::Status;
pub use zkpipe_proto::ClientAuth;

/// A shared secret that callers present as `authorization: Bearer <token>`.
#[derive(Clone)]
pub struct Token(String);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

impl Token {
    /// Fewest characters a token may have: a guessable one is no protection.
    pub const MIN_LEN: usize = 16;

    /// A token from text as written in a file or variable (surrounding whitespace is
    /// dropped); it must be printable ASCII without spaces, at least [`Token::MIN_LEN`] long.
    pub fn new(text: &str) -> Result<Self, String> {
        let t = text.trim();
        if !t.bytes().all(|b| b.is_ascii_graphic()) {
            return Err("the token must be printable ASCII without spaces".into());
        }
        if t.len() < Self::MIN_LEN {
            return Err(format!(
                "the token has {} characters; use at least {} (e.g. `openssl rand -hex 32`)",
                t.len(),
                Self::MIN_LEN
            ));
        }
        Ok(Self(t.to_string()))
    }

    /// Whether an `authorization` header value presents this token.
    fn accepts(&self, header: Option<&[u8]>) -> Result<(), &'static str> {
        let h = header.ok_or("missing bearer token")?;
        let presented = h
            .get(..7)
            .filter(|p| p.eq_ignore_ascii_case(b"bearer "))
            .map(|_| &h[7..])
            .ok_or("the authorization header is not `Bearer <token>`")?;
        // `ct_eq` returns at once only when the lengths differ; that reveals no content.
        if bool::from(presented.ct_eq(self.0.as_bytes())) {
            Ok(())
        } else {
            Err("invalid bearer token")
        }
    }
}

/// The gRPC interceptor: passes every call when no token is configured.
#[derive(Clone, Debug)]
pub struct RequireToken(pub Option<Token>);

impl Interceptor for RequireToken {
    fn call(&mut self, req: tonic::Request<()>) -> Result<tonic::Request<()>, Status> {
        let Some(token) = &self.0 else {
            return Ok(req);
        };
        let h = req.metadata().get("authorization").map(|v| v.as_bytes());
        match token.accepts(h) {
            Ok(()) => Ok(req),
            Err(why) => {
                let peer = req.remote_addr().map(|a| a.to_string()).unwrap_or_default();
                tracing::warn!(peer, "gRPC call refused: {why}");
                Err(Status::unauthenticated(format!(
                    "{why}: this daemon needs `authorization: Bearer <token>` (zkpipe clients: --token-file or ZKPIPE_TOKEN)"
                )))
            }
        }
    }
}

/// The HTTP middleware for `/metrics` and `/trace`: 401 without the token.
pub async fn require_token_http(token: Token, req: Request, next: Next) -> Response {
    let h = req
        .headers()
        .get(header::AUTHORIZATION)
        .map(|v| v.as_bytes());
    match token.accepts(h) {
        Ok(()) => next.run(req).await,
        Err(why) => (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer")],
            format!("{why}\n"),
        )
            .into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_checked_when_made_and_when_presented() {
        assert!(Token::new("short").unwrap_err().contains("at least 16"));
        assert!(Token::new("has a space in it somewhere").is_err());
        let t = Token::new("  0123456789abcdef0123\n").unwrap();
        assert_eq!(format!("{t:?}"), "Token(<redacted>)");
        assert_eq!(t.accepts(Some(b"Bearer 0123456789abcdef0123")), Ok(()));
        assert_eq!(t.accepts(Some(b"bearer 0123456789abcdef0123")), Ok(()));
        assert_eq!(t.accepts(None), Err("missing bearer token"));
        assert_eq!(
            t.accepts(Some(b"Bearer 0123456789abcdef0124")),
            Err("invalid bearer token")
        );
        assert_eq!(t.accepts(Some(b"Bearer 0123")), Err("invalid bearer token"));
        assert!(t.accepts(Some(b"Basic dXNlcjpwYXNz")).is_err());
    }
}
