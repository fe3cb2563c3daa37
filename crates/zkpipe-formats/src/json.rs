//! The JSON files snarkjs reads and writes: `proof.json`, `public.json`,
//! `verification_key.json`. Numbers are decimal strings; this module checks shapes and
//! digits, the prover's curve code checks that values are field elements.

use crate::error::{Error, ErrorKind};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// A G1 point as snarkjs writes it: `[x, y, "1"]` (or `["0", "1", "0"]` at infinity).
pub type G1Json = Vec<String>;
/// A G2 point: `[[x.c0, x.c1], [y.c0, y.c1], ["1", "0"]]`.
pub type G2Json = Vec<Vec<String>>;

/// `proof.json`, field order as snarkjs writes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProofJson {
    /// π_A ∈ G1.
    pub pi_a: G1Json,
    /// π_B ∈ G2.
    pub pi_b: G2Json,
    /// π_C ∈ G1.
    pub pi_c: G1Json,
    /// Always "groth16".
    pub protocol: String,
    /// snarkjs curve name. snarkjs always writes it; rapidsnark does not (its proofs are
    /// BN254 or whatever curve its key is): readers take the curve from the key then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub curve: Option<String>,
}

/// `verification_key.json`, field order as snarkjs writes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerificationKeyJson {
    /// Always "groth16".
    pub protocol: String,
    /// snarkjs curve name.
    pub curve: String,
    /// Number of public signals.
    #[serde(rename = "nPublic")]
    pub n_public: u64,
    /// α ∈ G1.
    pub vk_alpha_1: G1Json,
    /// β ∈ G2.
    pub vk_beta_2: G2Json,
    /// γ ∈ G2.
    pub vk_gamma_2: G2Json,
    /// δ ∈ G2.
    pub vk_delta_2: G2Json,
    /// e(α, β) ∈ GT (unused by verifiers; written for snarkjs compatibility).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub vk_alphabeta_12: Vec<Vec<Vec<String>>>,
    /// IC: nPublic + 1 G1 points.
    #[serde(rename = "IC")]
    pub ic: Vec<G1Json>,
}

/// `public.json`: the public signals, decimal strings.
pub type PublicJson = Vec<String>;

/// Which snarkjs JSON document a value looks like, judged by its shape (for `inspect`, and
/// for messages when files are given in the wrong order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JsonDoc {
    /// Has `pi_a`: a `proof.json`.
    Proof,
    /// Has `vk_alpha_1`: a `verification_key.json`.
    VerificationKey,
    /// An array: a `public.json`.
    PublicSignals,
    /// None of these.
    Other,
}

impl JsonDoc {
    /// Classifies a parsed JSON value.
    pub fn of(v: &serde_json::Value) -> Self {
        if v.get("pi_a").is_some() {
            Self::Proof
        } else if v.get("vk_alpha_1").is_some() {
            Self::VerificationKey
        } else if v.is_array() {
            Self::PublicSignals
        } else {
            Self::Other
        }
    }
}

impl std::fmt::Display for JsonDoc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Proof => "proof",
            Self::VerificationKey => "verification key",
            Self::PublicSignals => "public signals",
            Self::Other => "unrecognized JSON",
        })
    }
}

/// Reads and parses a JSON file into `T` (see [`parse_json`]).
pub fn read_json<T: DeserializeOwned>(path: impl AsRef<Path>) -> Result<T, Error> {
    let path = path.as_ref();
    let bytes = crate::files::read_input(path)?;
    parse_json(&bytes).map_err(|k| Error::new(path, k))
}

/// Parses a JSON file's bytes into `T`: UTF-8 text, then JSON of `T`'s shape.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ErrorKind> {
    let text =
        std::str::from_utf8(bytes).map_err(|e| ErrorKind::Json(format!("not UTF-8: {e}")))?;
    serde_json::from_str(text).map_err(|e| ErrorKind::Json(e.to_string()))
}

/// Renders JSON byte for byte as snarkjs 0.7.6 writes its files (`bfj.write(name, x,
/// {space: 1})`): one-space indent, `"key": value`, an empty array or object still opened
/// and closed on lines of their own (`[` newline `]`), and no newline at the end.
pub fn to_json_bytes<T: Serialize>(value: &T) -> Vec<u8> {
    let mut out = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(&mut out, SnarkjsFormatter::default());
    // Serializing these plain structs into memory cannot fail; a value that does (a map
    // with non-string keys) writes nothing rather than half a document.
    if value.serialize(&mut ser).is_err() {
        out.clear();
    }
    out
}

/// serde_json's pretty printer as bfj's streamer (snarkjs's writer) prints: it closes
/// every array and object on a new line, empty ones included.
#[derive(Default)]
struct SnarkjsFormatter {
    depth: usize,
}

impl SnarkjsFormatter {
    fn newline<W: ?Sized + std::io::Write>(&self, w: &mut W) -> std::io::Result<()> {
        w.write_all(b"\n")?;
        for _ in 0..self.depth {
            w.write_all(b" ")?;
        }
        Ok(())
    }
}

impl serde_json::ser::Formatter for SnarkjsFormatter {
    fn begin_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.depth += 1;
        w.write_all(b"[")
    }

    fn end_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.depth -= 1;
        self.newline(w)?;
        w.write_all(b"]")
    }

    fn begin_array_value<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        if !first {
            w.write_all(b",")?;
        }
        self.newline(w)
    }

    fn begin_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.depth += 1;
        w.write_all(b"{")
    }

    fn end_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.depth -= 1;
        self.newline(w)?;
        w.write_all(b"}")
    }

    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.begin_array_value(w, first)
    }

    fn begin_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        w.write_all(b": ")
    }
}

/// Checks that a string is a plain decimal number (what snarkjs writes).
pub fn is_decimal(s: &str) -> bool {
    !s.is_empty() && s.len() <= 200 && s.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proof_shape_round_trips_and_rejects_extra_fields() {
        let p = ProofJson {
            pi_a: vec!["1".into(), "2".into(), "1".into()],
            pi_b: vec![vec!["1".into(), "2".into()]; 3],
            pi_c: vec!["1".into(), "2".into(), "1".into()],
            protocol: "groth16".into(),
            curve: Some("bn128".into()),
        };
        let bytes = to_json_bytes(&p);
        assert_eq!(serde_json::from_slice::<ProofJson>(&bytes).unwrap(), p);
        assert!(serde_json::from_str::<ProofJson>(r#"{"pi_a": 3}"#).is_err());
        // rapidsnark: keys in alphabetical order, no `curve`; written back without one.
        let rapidsnark = r#"{"pi_a":["1","2","1"],"pi_b":[["1","2"],["3","4"],["1","0"]],
            "pi_c":["1","2","1"],"protocol":"groth16"}"#;
        let p: ProofJson = serde_json::from_str(rapidsnark).unwrap();
        assert_eq!(p.curve, None);
        assert!(!String::from_utf8(to_json_bytes(&p))
            .unwrap()
            .contains("curve"));
        assert!(is_decimal("0123") && !is_decimal("") && !is_decimal("-1") && !is_decimal("0x1"));
    }

    /// What snarkjs 0.7.6 writes (bfj, `{space: 1}`): the texts below are its bytes.
    #[test]
    fn writes_snarkjs_bytes() {
        let none: PublicJson = Vec::new();
        assert_eq!(to_json_bytes(&none), b"[\n]");
        let two: PublicJson = vec!["1".into(), "22".into()];
        assert_eq!(to_json_bytes(&two), b"[\n \"1\",\n \"22\"\n]");
        let doc = serde_json::json!({"a": [["1"], []], "b": 3, "c": {}});
        assert_eq!(
            String::from_utf8(to_json_bytes(&doc)).unwrap(),
            "{\n \"a\": [\n  [\n   \"1\"\n  ],\n  [\n  ]\n ],\n \"b\": 3,\n \"c\": {\n }\n}"
        );
    }
}
