//! The one error type of this crate: what is wrong, and in which file.

use std::path::{Path, PathBuf};

/// A file that could not be read, parsed or written, and why.
#[derive(Debug, thiserror::Error)]
#[error("{}: {kind}", path.display())]
pub struct Error {
    /// The file the problem is in.
    pub path: PathBuf,
    /// What is wrong with it.
    pub kind: ErrorKind,
}

impl Error {
    /// Attaches a file name to a parse error.
    pub fn new(path: impl AsRef<Path>, kind: ErrorKind) -> Self {
        Self {
            path: path.as_ref().to_path_buf(),
            kind,
        }
    }
}

/// What is wrong with a file. Messages are single lines meant for a user.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The operating system refused to read or write it.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The file ends before the data its headers announce.
    #[error("truncated: {what} needs {needed} bytes at offset {offset}, file has {len}")]
    Truncated {
        /// The structure being read.
        what: &'static str,
        /// Bytes it needs.
        needed: u64,
        /// Where it starts.
        offset: u64,
        /// Length of the file.
        len: u64,
    },
    /// The first four bytes are not the expected magic.
    #[error("not a {expected} file (magic {found:?})")]
    BadMagic {
        /// The file type expected, e.g. "zkey".
        expected: &'static str,
        /// The bytes found, lossily decoded.
        found: String,
    },
    /// The container version is not one we read.
    #[error("unsupported {kind} version {found} (supported: {supported})")]
    UnsupportedVersion {
        /// The file type.
        kind: &'static str,
        /// Version found.
        found: u32,
        /// Versions supported.
        supported: &'static str,
    },
    /// A required section is absent.
    #[error("missing section {id} ({name})")]
    MissingSection {
        /// Section id.
        id: u32,
        /// What it holds.
        name: &'static str,
    },
    /// A section appears twice where it must be unique.
    #[error("section {id} ({name}) appears more than once")]
    DuplicateSection {
        /// Section id.
        id: u32,
        /// What it holds.
        name: &'static str,
    },
    /// A section's size disagrees with what the header implies.
    #[error("section {id} ({name}) has {found} bytes, header implies {expected}")]
    SectionSize {
        /// Section id.
        id: u32,
        /// What it holds.
        name: &'static str,
        /// Size the header implies.
        expected: u64,
        /// Size found.
        found: u64,
    },
    /// The prime in a header is not one of the supported curves' fields.
    #[error("unsupported field: {0}")]
    UnknownField(String),
    /// A protocol other than Groth16.
    #[error("proving system {0} is not Groth16 (only Groth16 keys are supported)")]
    NotGroth16(u32),
    /// A header value that makes no sense.
    #[error("invalid header: {0}")]
    InvalidHeader(String),
    /// A record inside a section is invalid.
    #[error("invalid {what} at index {index}: {why}")]
    InvalidRecord {
        /// The record type.
        what: &'static str,
        /// Its index.
        index: u64,
        /// What is wrong.
        why: String,
    },
    /// A JSON file that does not parse or has the wrong shape.
    #[error("malformed JSON: {0}")]
    Json(String),
    /// A directory where a file was expected.
    #[error("is a directory")]
    IsDirectory,
    /// An input file with no bytes at all.
    #[error("is empty")]
    Empty,
    /// An output whose directory does not exist.
    #[error("directory {} does not exist", .0.display())]
    NoDirectory(PathBuf),
    /// An output whose "directory" is something else.
    #[error("{} is not a directory", .0.display())]
    NotADirectory(PathBuf),
    /// An output that exists where the command does not replace files.
    #[error("already exists")]
    AlreadyExists,
    /// An output that is the same file as an input or another output.
    #[error("is the same file as the {role} {}", other.display())]
    SameFile {
        /// The other path.
        other: PathBuf,
        /// "input" or "output".
        role: &'static str,
    },
    /// A key or proof of a curve the EVM has no pairing precompile for (only BN254 has).
    #[error(
        "curve {0} cannot be verified on the EVM: its pairing precompile is BN254 only \
         (snarkjs's bn128); no Solidity verifier or calldata for this curve"
    )]
    NotEvmCurve(crate::CurveId),
    /// A key without public signals, where the output needs one (a Solidity verifier's
    /// `uint[nPublic]`).
    #[error(
        "the key has no public signals (nPublic = 0): a Solidity verifier needs at least one \
         (uint[0] is not valid Solidity)"
    )]
    NoPublicSignals,
    /// `-` given for two outputs.
    #[error("two outputs go to stdout")]
    StdoutTwice,
}
