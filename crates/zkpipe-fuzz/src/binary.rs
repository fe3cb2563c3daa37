//! The binary files: zkey, wtns, r1cs.

use zkpipe_core::curve::{field_to_le, Curve};
use zkpipe_core::{Bls12_381, Bn254, CompiledKey, PointChecks, VerifyingKey, Witness};
use zkpipe_formats::mapped::MappedFile;
use zkpipe_formats::r1cs::R1cs;
use zkpipe_formats::wtns::Wtns;
use zkpipe_formats::zkey::{EncodedCoefficients, PointSection, ZkeyContents, ZkeyFile};
use zkpipe_formats::CurveId;

/// The point sections with their sizes in points, for a header.
fn sections(z: &ZkeyFile) -> [(PointSection, u64, usize); 6] {
    let h = &z.header;
    let (g1, g2) = (h.curve.g1_bytes(), h.curve.g2_bytes());
    let (n_vars, n_public) = (h.n_vars as u64, h.n_public as u64);
    [
        (PointSection::Ic, n_public + 1, g1),
        (PointSection::A, n_vars, g1),
        (PointSection::B1, n_vars, g1),
        (PointSection::B2, n_vars, g2),
        (PointSection::C, n_vars - n_public - 1, g1),
        (PointSection::H, h.domain_size as u64, g1),
    ]
}

/// A zkey as `zkpipe prove`, `verify` and the daemon load one: mapped and validated, then
/// its verification key and its compiled form (every point checked exactly).
pub fn zkey(data: &[u8]) {
    let Ok(z) = ZkeyFile::from_file(MappedFile::from_bytes("fuzz.zkey", data.to_vec())) else {
        return;
    };
    for (s, n, size) in sections(&z) {
        assert_eq!(z.points(s).len() as u64, n * size as u64, "{s:?} size");
    }
    assert_eq!(z.coefficients().count(), z.n_coefficients() as usize);
    // Written again from what was read, it parses to the same key.
    if let Ok(coefficients) = z.coefficients().collect::<Result<Vec<_>, _>>() {
        let contents = ZkeyContents {
            header: z.header.clone(),
            coefficients: coefficients.iter().copied().collect(),
            ic: z.points(PointSection::Ic).to_vec(),
            a: z.points(PointSection::A).to_vec(),
            b1: z.points(PointSection::B1).to_vec(),
            b2: z.points(PointSection::B2).to_vec(),
            c: z.points(PointSection::C).to_vec(),
            h: z.points(PointSection::H).to_vec(),
        };
        let again = ZkeyFile::from_file(MappedFile::from_bytes("again", contents.to_bytes()))
            .expect("a zkey written from a parsed one parses");
        assert_eq!(again.header, z.header);
        for (s, _, _) in sections(&z) {
            assert_eq!(again.points(s), z.points(s), "{s:?}");
        }
        let back: EncodedCoefficients = again
            .coefficients()
            .map(|c| c.expect("coefficients written from valid ones are valid"))
            .collect();
        assert_eq!(back, contents.coefficients);
    }
    match z.header.curve {
        CurveId::Bn254 => compile::<Bn254>(&z),
        CurveId::Bls12_381 => compile::<Bls12_381>(&z),
    }
}

fn compile<E: Curve>(z: &ZkeyFile) {
    let h = &z.header;
    let Ok(vk) = VerifyingKey::<E>::from_zkey(z, PointChecks::PerPoint) else {
        return;
    };
    assert_eq!(vk.ic.len(), h.n_public as usize + 1);
    let Ok(key) = CompiledKey::<E>::compile(z, PointChecks::PerPoint) else {
        return;
    };
    assert_eq!(key.vk, vk);
    assert_eq!(
        (key.n_vars, key.n_public),
        (h.n_vars as usize, h.n_public as usize)
    );
    assert_eq!(key.domain_size(), h.domain_size as usize);
    let nnz = key.a.vals.len() + key.b.vals.len();
    assert_eq!(nnz, z.n_coefficients() as usize);
    // Every accepted point encodes back to the bytes it came from.
    let g1 = |points: &[E::G1Affine], s| {
        let mut b = Vec::new();
        points.iter().for_each(|p| E::g1_to_bytes(p, &mut b));
        assert_eq!(b, z.points(s), "{s:?}");
    };
    g1(&vk.ic, PointSection::Ic);
    g1(&key.points.a, PointSection::A);
    g1(&key.points.b1, PointSection::B1);
    g1(&key.points.c, PointSection::C);
    g1(&key.points.h, PointSection::H);
    let mut b = Vec::new();
    key.points.b2.iter().for_each(|p| E::g2_to_bytes(p, &mut b));
    assert_eq!(b, z.points(PointSection::B2));
}

/// A witness as `zkpipe prove` and the engine read one: parsed, then converted to field
/// elements.
pub fn wtns(data: &[u8]) {
    let Ok(w) = Wtns::parse(data) else {
        return;
    };
    assert_eq!(w.values.len(), w.n_witness as usize * w.curve.n8r());
    let again = Wtns::parse(&w.to_bytes()).expect("a witness written from a parsed one parses");
    assert_eq!(again, w);
    match w.curve {
        CurveId::Bn254 => scalars::<Bn254>(&w),
        CurveId::Bls12_381 => scalars::<Bls12_381>(&w),
    }
}

fn scalars<E: Curve>(w: &Wtns) {
    let witness = Witness::<E::ScalarField>::from_wtns(w)
        .expect("the parser range-checked every value, so each is a field element");
    assert_eq!(witness.values.len(), w.n_witness as usize);
    for (i, x) in witness.values.iter().enumerate() {
        let mut b = field_to_le(x);
        b.resize(w.curve.n8r(), 0);
        assert_eq!(b, w.value(i), "value {i}");
    }
}

/// A constraint system as `zkpipe setup --dev` and `check` read one.
pub fn r1cs(data: &[u8]) {
    let Ok(r) = R1cs::parse(data) else {
        return;
    };
    let h = &r.header;
    assert_eq!(r.lc_starts.len(), 3 * h.n_constraints as usize + 1);
    assert!(r.lc_starts.windows(2).all(|s| s[0] <= s[1]));
    assert_eq!(r.lc_starts.last(), Some(&r.terms.len()));
    assert!(r.terms.iter().all(|t| t.wire < h.n_wires));
    assert!(r.wire_labels.is_empty() || r.wire_labels.len() == h.n_wires as usize);
    // Written without a label section, wire i gets label i: the writer would make up 8 bytes
    // per wire, which for a header claiming billions of wires is no test of the parser.
    if r.wire_labels.is_empty() && h.n_wires > 1 << 16 {
        return;
    }
    let again = R1cs::parse(&r.to_bytes()).expect("an r1cs written from a parsed one parses");
    let expected = if r.wire_labels.is_empty() {
        R1cs {
            wire_labels: (0..h.n_wires as u64).collect(),
            ..r.clone()
        }
    } else {
        r.clone()
    };
    assert_eq!(again, expected);
}
