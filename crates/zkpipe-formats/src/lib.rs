//! snarkjs and circom file formats, as bytes: no proving math lives here.
//!
//! ```text
//!  .zkey ─► zkey::ZkeyFile (mmap, sections checked against the header)
//!  .wtns ─► wtns::Wtns      (values, standard form)
//!  .r1cs ─► r1cs::R1cs      (constraints, flat)
//!  proof.json / public.json / verification_key.json ◄─► json::*
//!  verification_key.json ─► solidity::verifier (Verifier.sol); proof + public ─► calldata
//! ```
//!
//! Every binary file shares one container layout ([`container`]); the curve a file belongs
//! to is decided by the primes in its header ([`curve::CurveId`]).
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod cache_dir;
pub mod container;
pub mod curve;
pub mod error;
pub mod files;
pub mod json;
pub mod mapped;
pub mod packed_wtns;
pub mod r1cs;
pub mod solidity;
pub mod wtns;
pub mod zkey;

pub use curve::CurveId;
pub use error::{Error, ErrorKind};

/// Which snarkjs file a path holds, judged by its magic bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// A proving key.
    Zkey,
    /// A witness.
    Wtns,
    /// A constraint system.
    R1cs,
    /// Something that starts like JSON.
    Json,
}

/// Peeks at a file's first bytes to tell what it is.
pub fn sniff(path: impl AsRef<std::path::Path>) -> Result<FileKind, Error> {
    use std::io::Read;
    let path = path.as_ref();
    let mut head = [0u8; 4];
    let mut f = files::open_input(path)?;
    let n = f
        .read(&mut head)
        .map_err(|e| Error::new(path, ErrorKind::Io(e)))?;
    match &head[..n] {
        [] => Err(Error::new(path, ErrorKind::Empty)),
        b"zkey" => Ok(FileKind::Zkey),
        b"wtns" => Ok(FileKind::Wtns),
        b"r1cs" => Ok(FileKind::R1cs),
        h if h.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{')
            || h.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[') =>
        {
            Ok(FileKind::Json)
        }
        h => Err(Error::new(
            path,
            ErrorKind::BadMagic {
                expected: "zkey, wtns, r1cs or JSON",
                found: String::from_utf8_lossy(h).into_owned(),
            },
        )),
    }
}
