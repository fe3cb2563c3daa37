//! Witnesses written to the job store while they arrive: a streamed submission
//! (`SubmitProofStream`) hands each large witness's chunks to the store's file as they
//! come, so a request holds a few chunks in memory instead of its gigabytes, and the store
//! records that file when the job is accepted instead of writing the witness again.
//!
//! A store that spills witnesses to files offers [`JobStore::stage`](super::JobStore::stage);
//! the others (memory, a shared store) answer `None` and the witness is received in memory.

use super::StoreError;

/// A witness file being written, chunk by chunk, in order.
pub trait StagingWitness: Send {
    /// Appends `data`.
    fn write(&mut self, data: &[u8]) -> Result<(), StoreError>;

    /// Every byte is written: makes the file durable and maps it for reading. The file is
    /// removed when the returned witness is dropped, unless a job named it first
    /// ([`StagedWitness::keep`]).
    fn finish(self: Box<Self>) -> Result<Box<dyn StagedWitness>, StoreError>;
}

/// A witness the store holds in a file of its own, complete and durable.
pub trait StagedWitness: Send + Sync {
    /// Its bytes (the file, mapped).
    fn bytes(&self) -> &[u8];

    /// The store's name for the file, which a job's record names.
    fn name(&self) -> &str;

    /// Its bytes were read (parsed): their pages may leave this process's resident set
    /// (reading them again pages them back in from the file).
    fn release(&self);

    /// A job's record names the file (or may: its commit's fate is unknown): it stays
    /// when this is dropped.
    fn keep(&self);
}

/// A partition's bytes as submitted: in memory (`Vec<u8>`, `&[u8]`, `bytes::Bytes`), or a
/// [`Staged`] witness that the job store already holds, which it records instead of
/// writing the bytes again.
pub trait PartitionBytes: AsRef<[u8]> + Sync {
    /// The store's file holding these bytes, if it holds them already.
    fn staged(&self) -> Option<&dyn StagedWitness> {
        None
    }
}

impl PartitionBytes for Vec<u8> {}
impl PartitionBytes for &[u8] {}
impl PartitionBytes for bytes::Bytes {}

/// A partition received either way: in memory or staged in the store.
pub enum Staged {
    /// Held in memory (small, or the store stages nothing).
    Memory(bytes::Bytes),
    /// Written to the store's file as it arrived.
    File(Box<dyn StagedWitness>),
}

impl AsRef<[u8]> for Staged {
    fn as_ref(&self) -> &[u8] {
        match self {
            Staged::Memory(b) => b,
            Staged::File(f) => f.bytes(),
        }
    }
}

impl PartitionBytes for Staged {
    fn staged(&self) -> Option<&dyn StagedWitness> {
        match self {
            Staged::Memory(_) => None,
            Staged::File(f) => Some(f.as_ref()),
        }
    }
}

impl std::fmt::Debug for Staged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Staged::Memory(b) => write!(f, "Staged::Memory({} bytes)", b.len()),
            Staged::File(s) => write!(f, "Staged::File({}, {} bytes)", s.name(), s.bytes().len()),
        }
    }
}
