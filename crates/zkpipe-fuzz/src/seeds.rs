//! Seed inputs for the fuzz targets: tiny files made here (a one-constraint circuit, its
//! witness and a development key for it, on both curves) and the small files of
//! `tests/fixtures/`. `scripts/fuzz.sh seeds` writes them out; libFuzzer mutates from them
//! and the minimized corpus keeps what adds coverage.

use prost::Message;
use rand::SeedableRng;
use std::path::Path;
use zkpipe_core::curve::Curve;
use zkpipe_core::setup::dev_setup;
use zkpipe_core::{Bls12_381, Bn254, PointChecks, VerifyingKey};
use zkpipe_formats::json::to_json_bytes;
use zkpipe_formats::mapped::MappedFile;
use zkpipe_formats::r1cs::{R1cs, R1csHeader, Term};
use zkpipe_formats::wtns::Wtns;
use zkpipe_formats::zkey::ZkeyFile;
use zkpipe_server::pb;

/// Fixture files larger than this are left out (they slow every execution down).
pub const MAX_FIXTURE_BYTES: u64 = 64 << 10;

/// One seed input.
#[derive(Debug, Clone)]
pub struct Seed {
    /// The target it is for.
    pub target: &'static str,
    /// A file name for it.
    pub name: String,
    /// The input.
    pub bytes: Vec<u8>,
}

fn seed(target: &'static str, name: impl Into<String>, bytes: Vec<u8>) -> Seed {
    Seed {
        target,
        name: name.into(),
        bytes,
    }
}

/// `w1 = w2 · w3` with one public output (w1), one public input (w2), one private (w3).
fn tiny_r1cs<E: Curve>() -> R1cs {
    let mut one = [0u8; 32];
    one[0] = 1;
    let t = |wire| Term { wire, value: one };
    R1cs {
        header: R1csHeader {
            curve: E::ID,
            n_wires: 4,
            n_pub_out: 1,
            n_pub_in: 1,
            n_prv_in: 1,
            n_labels: 4,
            n_constraints: 1,
        },
        terms: vec![t(2), t(3), t(1)],
        lc_starts: vec![0, 1, 2, 3],
        wire_labels: vec![0, 1, 2, 3],
    }
}

/// The witness of [`tiny_r1cs`] for 2 · 3 = 6.
fn tiny_wtns<E: Curve>() -> Wtns {
    let mut values = vec![0u8; 4 * 32];
    for (i, v) in [1u8, 6, 2, 3].into_iter().enumerate() {
        values[32 * i] = v;
    }
    Wtns {
        curve: E::ID,
        n_witness: 4,
        values,
    }
}

fn request(
    key_id: &str,
    witnesses: Vec<Vec<u8>>,
    priority: pb::Priority,
) -> pb::SubmitProofRequest {
    pb::SubmitProofRequest {
        key_id: key_id.into(),
        witnesses,
        priority: priority as i32,
        request_id: "seed-1".into(),
    }
}

fn made_on<E: Curve>(out: &mut Vec<Seed>) {
    let curve = E::ID.snarkjs_name();
    let r1cs = tiny_r1cs::<E>();
    out.push(seed("r1cs", format!("tiny-{curve}.r1cs"), r1cs.to_bytes()));
    let wtns = tiny_wtns::<E>().to_bytes();
    out.push(seed("wtns", format!("tiny-{curve}.wtns"), wtns.clone()));
    let empty = Wtns {
        n_witness: 0,
        values: Vec::new(),
        ..tiny_wtns::<E>()
    };
    out.push(seed(
        "wtns",
        format!("empty-{curve}.wtns"),
        empty.to_bytes(),
    ));

    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(14);
    if let Ok(key) = dev_setup::<E>(&r1cs, &mut rng, &|_, _| {}) {
        let bytes = key.to_bytes();
        let file = MappedFile::from_bytes("tiny.zkey", bytes.clone());
        if let Ok(vk) = ZkeyFile::from_file(file)
            .map_err(|_| ())
            .and_then(|z| VerifyingKey::<E>::from_zkey(&z, PointChecks::PerPoint).map_err(|_| ()))
        {
            let name = format!("tiny-{curve}-verification_key.json");
            out.push(seed("vk_json", name, to_json_bytes(&vk.to_json())));
        }
        out.push(seed("zkey", format!("tiny-{curve}.zkey"), bytes));
    }

    let submit = request("tiny", vec![wtns.clone(), wtns], pb::Priority::High);
    out.push(seed(
        "request",
        format!("submit-{curve}.pb"),
        submit.encode_to_vec(),
    ));
    let prove = pb::ProveRequest {
        submit: Some(submit),
        timeout_ms: 1000,
    };
    out.push(seed(
        "request",
        format!("prove-{curve}.pb"),
        prove.encode_to_vec(),
    ));
}

/// The seeds made here, then those read from `fixtures` (the repository's `tests/fixtures`)
/// if given: files up to [`MAX_FIXTURE_BYTES`], by extension and name.
pub fn seeds(fixtures: Option<&Path>) -> std::io::Result<Vec<Seed>> {
    let mut out = Vec::new();
    made_on::<Bn254>(&mut out);
    made_on::<Bls12_381>(&mut out);
    out.push(seed("request", "empty.pb", Vec::new()));
    out.push(seed("public_json", "empty.json", b"[]\n".to_vec()));
    if let Some(dir) = fixtures {
        from_fixtures(dir, dir, &mut out)?;
    }
    Ok(out)
}

fn from_fixtures(root: &Path, dir: &Path, out: &mut Vec<Seed>) -> std::io::Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)?.collect::<Result<_, _>>()?;
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let path = e.path();
        if e.file_type()?.is_dir() {
            from_fixtures(root, &path, out)?;
            continue;
        }
        if e.metadata()?.len() > MAX_FIXTURE_BYTES {
            continue;
        }
        let file = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let target = match file {
            "proof.json" => "proof_json",
            "public.json" => "public_json",
            "verification_key.json" => "vk_json",
            f if f.ends_with(".wtns") => "wtns",
            f if f.ends_with(".r1cs") => "r1cs",
            f if f.ends_with(".zkey") => "zkey",
            _ => continue,
        };
        let rel = path.strip_prefix(root).unwrap_or(&path);
        let name = rel.to_string_lossy().replace('/', "-");
        let bytes = std::fs::read(&path)?;
        if target == "wtns" {
            let submit = request("fixture", vec![bytes.clone()], pb::Priority::Normal);
            out.push(seed(
                "request",
                format!("{name}.pb"),
                submit.encode_to_vec(),
            ));
        }
        out.push(seed(target, name, bytes));
    }
    Ok(())
}
