//! The daemon's secrets from its configuration: the bearer token (the environment or a
//! token file) and the TLS certificate and key files.

use super::{Overrides, ServerSection, TlsPem};
use crate::auth::Token;
use std::path::Path;

/// Reads the token: `ZKPIPE_TOKEN` itself, else the token file (relative to `base`).
pub(super) fn token(
    o: &Overrides,
    file: Option<&Path>,
    base: &Path,
) -> Result<Option<Token>, String> {
    if let Some(t) = &o.token {
        return Token::new(t)
            .map(Some)
            .map_err(|e| format!("ZKPIPE_TOKEN: {e}"));
    }
    let Some(path) = file else {
        return Ok(None);
    };
    let path = base.join(path);
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("server.token_file: {}: {e}", path.display()))?;
    warn_if_others_can_read(&path);
    Token::new(&text)
        .map(Some)
        .map_err(|e| format!("server.token_file: {}: {e}", path.display()))
}

/// A token file others can read is a warning, not an error: container secrets are often
/// mounted 0644 inside a container nobody else shares.
fn warn_if_others_can_read(path: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if let Ok(m) = std::fs::metadata(path) {
            if m.permissions().mode() & 0o004 != 0 {
                tracing::warn!(path = %path.display(), "the token file is world-readable (chmod 600 it)");
            }
        }
    }
}

pub(super) fn tls(s: &ServerSection, base: &Path) -> Result<Option<TlsPem>, String> {
    let read = |field: &str, p: &Path| {
        let p = base.join(p);
        std::fs::read(&p).map_err(|e| format!("{field}: {}: {e}", p.display()))
    };
    match (&s.tls_cert, &s.tls_key) {
        (None, None) => Ok(None),
        (Some(cert), Some(key)) => Ok(Some(TlsPem {
            cert: read("server.tls_cert", cert)?,
            key: read("server.tls_key", key)?,
        })),
        _ => Err("server.tls_cert and server.tls_key go together: set both or neither".into()),
    }
}
