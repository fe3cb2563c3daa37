//! The core's error type. Messages are one line and say what is wrong; the CLI adds which
//! file an input came from where the error itself cannot know.

use zkpipe_formats::CurveId;

/// Why a point from a file or JSON was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PointError {
    /// A coordinate is not below the base-field modulus.
    #[error("out of range: a coordinate is not a base-field element (it is ≥ the modulus q)")]
    CoordinateOutOfRange,
    /// The coordinates do not satisfy the curve equation.
    #[error("not on the curve")]
    NotOnCurve,
    /// On the curve but outside the prime-order subgroup.
    #[error("not in the prime-order subgroup")]
    NotInSubgroup,
    /// A JSON point whose shape is wrong or whose coordinates are not decimal numbers.
    #[error("malformed (expected decimal coordinates in snarkjs's layout)")]
    Malformed,
}

/// Everything that can go wrong while loading, proving or verifying.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file could not be read or parsed.
    #[error(transparent)]
    Format(#[from] zkpipe_formats::Error),
    /// A witness held in memory (a packed one from the wire) could not be read.
    #[error("{0}")]
    Witness(zkpipe_formats::ErrorKind),
    /// A point in a key or proof was rejected.
    #[error("{what} {index} is {problem}")]
    InvalidPoint {
        /// Which set of points (e.g. "zkey section 5 (A)").
        what: String,
        /// Its index in that set.
        index: usize,
        /// What is wrong.
        problem: PointError,
    },
    /// A scalar (coefficient, public input) is not a field element.
    #[error("{what} is not an element of the scalar field: {value}")]
    InvalidScalar {
        /// Which value.
        what: String,
        /// The value as given.
        value: String,
    },
    /// Inputs belong to different curves.
    #[error("curve mismatch: {what} is for {found}, expected {expected}")]
    CurveMismatch {
        /// Which input.
        what: &'static str,
        /// Its curve.
        found: CurveId,
        /// The curve of the rest.
        expected: CurveId,
    },
    /// A witness whose length is not the key's nVars.
    #[error("witness has {found} values, the key expects nVars = {expected}")]
    WitnessLength {
        /// Key's nVars.
        expected: usize,
        /// Witness length.
        found: usize,
    },
    /// A witness whose length is not an r1cs's number of wires.
    #[error("witness has {found} values, the constraint system (r1cs) has nWires = {expected}")]
    WireCount {
        /// The r1cs's nWires.
        expected: usize,
        /// Witness length.
        found: usize,
    },
    /// The freshly made proof does not verify against the key's own verification key.
    #[error("the witness does not satisfy the circuit's constraints (or belongs to another circuit with the same size): the proof failed its self-check")]
    NotSatisfied,
    /// A constraint of an r1cs is not satisfied by a witness.
    #[error("constraint {index} is not satisfied by the witness ({detail})")]
    ConstraintUnsatisfied {
        /// The first failing constraint.
        index: usize,
        /// Values of the three linear combinations.
        detail: String,
    },
    /// Public inputs that do not match the verification key.
    #[error("{found} public signals given, the verification key expects nPublic = {expected}")]
    PublicInputCount {
        /// nPublic of the key.
        expected: usize,
        /// Count given.
        found: usize,
    },
    /// A JSON document whose fields are inconsistent with the key or curve.
    #[error("{0}")]
    InvalidJson(String),
    /// A key that is well-formed on disk but unusable (e.g. domain too large for the field).
    #[error("unusable key: {0}")]
    InvalidKey(String),
    /// A device was asked for something it cannot do with the inputs given (lengths, an
    /// unbound key).
    #[error("{backend} backend: {message}")]
    Backend {
        /// Device kind ("cpu", "cuda").
        backend: &'static str,
        /// What failed.
        message: String,
    },
    /// A device failed; its own error is the source (a CUDA error, say).
    #[error("{device}: {source}")]
    Device {
        /// The device ("cuda:0").
        device: String,
        /// Its error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}
