//! What `crate::shape` decides from a key's shape, checked without a GPU.

use super::*;
use zkpipe_core::msm::stream_plan::KeySet;

fn shape(domain_size: usize) -> KeyShape {
    KeyShape {
        curve: CurveId::Bn254,
        n_vars: domain_size - domain_size / 8,
        n_public: 4,
        domain_size,
        n_coefficients: 3 * domain_size,
    }
}

/// Plans of more proofs or points take longer runs.
#[test]
fn runs_lengthen_with_the_plan() {
    let lab = LabSwitches::default();
    assert_eq!(run_len(&lab, 1, 1 << 13), 4);
    assert_eq!(run_len(&lab, 1, 1 << 14), 4);
    assert_eq!(run_len(&lab, 4, 1 << 14), 8);
    assert_eq!(run_len(&lab, 1, 1 << 16), 8);
    assert_eq!(run_len(&lab, 32, 1 << 14), 16);
    assert_eq!(run_len(&lab, 1, 1 << 20), 32);
    let forced = LabSwitches {
        run: Some(0),
        piece: Some(4),
        ..lab
    };
    assert_eq!(run_len(&forced, 1, 1 << 20), 0);
    // Out of range: not forced.
    assert_eq!(piece_len(&forced, 1, 1 << 20), piece_len(&lab, 1, 1 << 20));
}

/// Runs stop at digit steps over 4 unless forced, and a pass's estimate counts the runs
/// those stops may add: at most one per 5 bucket keys of a proof, so no more than the
/// keys' share, and none where steps never stop a run.
#[test]
fn runs_stop_at_wide_steps_and_the_estimate_counts_them() {
    let lab = LabSwitches::default();
    assert_eq!(run_gap(&lab), 4);
    let any = LabSwitches {
        run_gap: Some(0),
        ..lab
    };
    assert_eq!(run_gap(&any), 0);
    for log in [10, 14, 16, 20] {
        let (n_vars, n) = ((1usize << log) + 2, 1usize << log);
        let (with, without) = (batch_bytes(&lab, n_vars, n), batch_bytes(&any, n_vars, n));
        let keys = plan_keys(n_vars);
        assert!(keys >= 1 << table_wbits(n_vars, 255), "2^{log}");
        // Five MSMs, two entries a run, 256 bytes an entry.
        assert_eq!(with - without, 5 * 2 * keys.div_ceil(5) * 256, "2^{log}");
    }
}

/// A key's constant work is its own: it puts a lone proof on the batched kernels and
/// counts its mask.
#[test]
fn constant_work_is_per_key() {
    let plain = Tuning::default();
    let constant = Tuning {
        constant_work: true,
        ..plain
    };
    let big = 2 * LONE_BATCH_MAX_DOMAIN;
    assert!(!lone_on_batch(&plain, big) && lone_on_batch(&constant, big));
    assert_eq!(constant_work(&plain), None);
    assert!(constant_work(&constant).is_some_and(|c| c.mask && !c.full_width));
    let s = shape(1 << 12);
    assert!(
        device_bytes_for_shape(&constant, &s, false) > device_bytes_for_shape(&plain, &s, false)
    );
}

/// The bit path is every key's but a constant-work one's (whose MSMs must not depend
/// on the values), and its bitmap and scratch are counted with each proof, in core
/// and streamed: a word per 32 signals, two past the end, 1 MiB of scratch.
#[test]
fn the_bit_path_is_counted_per_proof_and_never_constant_work() {
    let plain = Tuning::default();
    assert!(takes_bits(&plain));
    let constant = Tuning {
        constant_work: true,
        ..plain
    };
    assert!(!takes_bits(&constant));
    let off = Tuning {
        lab: LabSwitches {
            no_bits: true,
            ..plain.lab
        },
        ..plain
    };
    assert!(!takes_bits(&off));
    assert_eq!(bitmap_bytes(64), (2 + 2) * 4);
    assert_eq!(bitmap_bytes(65), (3 + 2) * 4);
    let s = shape(1 << 25);
    let bits = bits_bytes(s.n_vars);
    assert_eq!(bits, (s.n_vars.div_ceil(32) + 2) * 4 + (1 << 20));
    let without_bits = 5 * s.domain_size * 32 + s.n_vars * 32;
    assert!(device_bytes_per_pass(&plain, &s) as usize >= without_bits + bits);
    let sets = gpu_key_sets(&plain.lab, &s);
    assert!(sets.proof_bytes >= (4 * s.domain_size * 32 + bits) as u64);
}

/// Small keys batch, large ones prove alone; G2 is always on the GPU.
#[test]
fn caps_batch_small_keys_only() {
    let lab = LabSwitches::default();
    let in_core = Residency::InCore;
    let small = caps(&lab, &shape(BATCH_MAX_DOMAIN), &in_core);
    assert_eq!((small.batch_limit, small.g2), (BATCH_MAX_PROOFS, true));
    let large = shape(2 * BATCH_MAX_DOMAIN);
    assert_eq!(caps(&lab, &large, &in_core).batch_limit, 1);
    // The lab's pass size moves small keys' batches only.
    let wide = LabSwitches {
        batch: Some(64),
        ..lab
    };
    let small_key = shape(BATCH_MAX_DOMAIN);
    assert_eq!(caps(&wide, &small_key, &in_core).batch_limit, 64);
    assert_eq!(caps(&wide, &large, &in_core).batch_limit, 1);
    assert!(small.reduces && small.montgomery_w);
}

/// A key that fits the budget stays in-core; one that does not streams, in as many
/// chunks as the budget makes it, with its plan's batch and a, b, c from the host,
/// its plan within the budget; one that cannot stream is refused in one line.
#[test]
fn keys_larger_than_the_budget_stream() {
    let t = Tuning::default();
    for curve in [CurveId::Bn254, CurveId::Bls12_381] {
        let s = KeyShape {
            curve,
            ..shape(1 << 16)
        };
        let whole = device_bytes_for_shape(&t, &s, true);
        assert_eq!(residency(&t, &s, true, whole, 2), Ok(Residency::InCore));
        // A budget that streams 2^16 in ≥ 8 chunks: two proofs, the fixed scratch
        // and the scratch of a sixteenth of H, the walk's chunks in the first
        // proof's idle quotient vectors (larger there than beside the proofs).
        let sets = gpu_key_sets(&t.lab, &s);
        let budget = 2 * sets.proof_bytes + (16 << 20) + (1 << 12) * 128;
        let r = residency(&t, &s, true, budget, 2).unwrap();
        let plan = r.plan().expect("streamed");
        assert_eq!(plan.batch(), 2);
        assert!(plan.device_bytes() <= budget);
        assert!(plan.walk_in_room(), "{r}");
        for set in [KeySet::A, KeySet::B1, KeySet::C, KeySet::H] {
            assert!(plan.chunk_count(set) >= 8, "{curve:?} {set:?}: {r}");
        }
        // Beside the proofs (the lab switch), the same budget makes smaller chunks.
        let beside = Tuning {
            lab: LabSwitches {
                walk_beside: true,
                ..LabSwitches::default()
            },
            ..t
        };
        let r2 = residency(&beside, &s, true, budget, 2).unwrap();
        let p2 = r2.plan().expect("streamed");
        assert!(!p2.walk_in_room() && p2.device_bytes() <= budget, "{r2}");
        assert!(
            p2.chunk_count(KeySet::A) > plan.chunk_count(KeySet::A),
            "{r2}"
        );
        // A streamed key reduces on the GPU too (its matrices cross in chunks of
        // rows), unless the lab switch puts the reduce on the host.
        let c = caps(&LabSwitches::default(), &s, &r);
        assert_eq!((c.batch_limit, c.reduces, c.g2), (2, true, true));
        let host = LabSwitches {
            host_reduce: true,
            ..LabSwitches::default()
        };
        assert!(!caps(&host, &s, &r).reduces);
        // Four asked for, two fit.
        let r4 = residency(&t, &s, true, budget, 4).unwrap();
        assert_eq!(r4.plan().map(|p| p.batch()), Some(2));
        let err = residency(&t, &s, true, sets.proof_bytes, 2).unwrap_err();
        assert!(err.to_string().starts_with("a device budget of"), "{err}");
    }
}

/// The estimates grow with the key, and a BLS12-381 key (larger points) needs more.
#[test]
fn memory_estimates_grow_with_the_key() {
    let (a, b) = (shape(1 << 12), shape(1 << 16));
    let bls = KeyShape {
        curve: CurveId::Bls12_381,
        ..b
    };
    let t = Tuning::default();
    for tables in [false, true] {
        assert!(device_bytes_for_shape(&t, &a, tables) < device_bytes_for_shape(&t, &b, tables));
        assert!(device_bytes_for_shape(&t, &b, tables) < device_bytes_for_shape(&t, &bls, tables));
    }
    assert!(device_bytes_per_pass(&t, &a) < device_bytes_per_pass(&t, &b));
}

/// Window tables are for resident keys, and cost ⌈bits/c⌉ copies of the points: a
/// 2^16 key's estimate grows by more than its points' size with them.
#[test]
fn window_tables_are_for_resident_keys_and_counted() {
    let b = shape(1 << 16);
    let t = Tuning::default();
    assert!(!binds_tables(&t, false, b.domain_size));
    assert!(binds_tables(&t, true, b.domain_size));
    let with = device_bytes_for_shape(&t, &b, true);
    let without = device_bytes_for_shape(&t, &b, false);
    assert!(with > without + 5 * b.n_vars as u64 * 64);
}
