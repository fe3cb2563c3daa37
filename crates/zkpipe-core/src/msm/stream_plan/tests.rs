use super::*;
use zkpipe_formats::CurveId;

/// A key of domain `n` with `n` signals, 4 of them public; BN254's sizes in memory.
fn sets(n: usize) -> KeySets {
    let shape = KeyShape {
        curve: CurveId::Bn254,
        n_vars: n,
        n_public: 4,
        domain_size: n,
        n_coefficients: 0,
    };
    KeySets::new(&shape, 64, 128, 32, 0)
}

/// Every set's chunks cover it in order, none longer than a chunk buffer holds, and
/// the plan within `budget`.
fn check_cover(s: &KeySets, p: &StreamPlan, budget: u64) {
    for set in KeySet::ALL {
        let chunks = p.chunks(set);
        assert_eq!(chunks.len(), p.chunk_count(set), "{set:?}");
        let mut next = 0;
        for c in &chunks {
            assert_eq!(c.start, next, "{set:?}: {chunks:?}");
            assert!(!c.is_empty(), "{set:?}: {chunks:?}");
            assert!(
                (c.len() * s.point_bytes(set)) as u64 <= p.walk_chunk_bytes(),
                "{set:?}: {c:?} over {} B",
                p.walk_chunk_bytes()
            );
            next = c.end;
        }
        assert_eq!(next, s.len(set), "{set:?}");
    }
    assert!(
        p.device_bytes() <= budget,
        "{} > {budget}",
        p.device_bytes()
    );
}

#[test]
fn a_2_16_key_streams_in_8_chunks_or_more_under_a_small_budget() {
    let s = sets(1 << 16);
    assert_eq!(s.proof_bytes, 4 << 20); // 2 · 2^16 scalars of 32 B
                                        // 2^16 G1 points are 4 MiB: chunks of 512 KiB make 8 of each G1 set, 16 of B2.
    let budget = 2 * s.proof_bytes + 2 * (512 << 10);
    let p = StreamPlan::new(&s, budget, 2).unwrap();
    assert_eq!(p.chunk_bytes(), 512 << 10);
    assert_eq!(p.device_bytes(), budget);
    for set in [KeySet::A, KeySet::B1, KeySet::H] {
        assert_eq!(p.chunk_count(set), 8, "{set:?}");
    }
    assert_eq!(p.chunk_count(KeySet::C), 8); // 2^16 − 5 points
    assert_eq!(p.chunk_count(KeySet::B2), 16);
    check_cover(&s, &p, budget);
    let r = Residency::decide(&s, Some(budget), 2).unwrap();
    assert_eq!(r.plan(), Some(&p));
    assert_eq!(
        r.to_string(),
        "streamed: batch 2, chunks of 512.0 KiB, A 8, B1 8, B2 16, C 8, H 8"
    );
}

#[test]
fn the_budget_is_exact_at_the_boundaries() {
    let s = sets(1000);
    // In-core exactly where the points and one proof fit.
    let whole = s.key_bytes() + s.proof_bytes;
    assert_eq!(
        Residency::decide(&s, Some(whole), 4).unwrap(),
        Residency::InCore
    );
    assert_eq!(Residency::decide(&s, None, 4).unwrap(), Residency::InCore);
    assert!(Residency::decide(&s, Some(whole - 1), 4)
        .unwrap()
        .plan()
        .is_some());
    // The smallest chunk: 64 G2 points, twice, beside the batch's buffers.
    assert_eq!(s.min_chunk_bytes(), 64 * 128);
    let least = 3 * s.proof_bytes + 2 * 64 * 128;
    let p = StreamPlan::new(&s, least, 3).unwrap();
    assert_eq!(p.chunk_bytes(), 64 * 128);
    assert_eq!(p.chunk_count(KeySet::B2), 16); // ⌈1000 / 64⌉
    assert_eq!(p.chunk_count(KeySet::A), 8); // ⌈1000 / 128⌉
    check_cover(&s, &p, least);
    let err = StreamPlan::new(&s, least - 1, 3).unwrap_err();
    assert_eq!(
        err,
        StreamPlanError::DoesNotFit {
            budget: least - 1,
            key: s.key_bytes(),
            batch: 3,
            proofs: 3 * s.proof_bytes,
            min_chunk: 64 * 128,
            scratch: 0,
        }
    );
    // The largest batch that fits is taken, never more than asked.
    assert_eq!(
        StreamPlan::largest_batch(&s, least - 1, 8).unwrap().batch(),
        2
    );
    assert_eq!(StreamPlan::largest_batch(&s, least, 3).unwrap().batch(), 3);
    assert_eq!(StreamPlan::largest_batch(&s, least, 2).unwrap().batch(), 2);
}

#[test]
fn one_point_sets_are_one_chunk() {
    // One signal (the constant): A, B1, B2 hold one point, C none.
    let s = sets(1);
    assert_eq!(s.points, [1, 1, 1, 0, 1]);
    assert_eq!(s.min_chunk_bytes(), 128);
    let p = StreamPlan::new(&s, s.proof_bytes + 2 * 128, 1).unwrap();
    for set in [KeySet::A, KeySet::B1, KeySet::B2, KeySet::H] {
        assert_eq!(p.chunks(set), vec![0..1], "{set:?}");
    }
    assert_eq!(p.chunks(KeySet::C), Vec::<Range<usize>>::new());
    check_cover(&s, &p, s.proof_bytes + 2 * 128);
    assert!(StreamPlan::new(&s, s.proof_bytes + 2 * 128 - 1, 1).is_err());
}

#[test]
fn chunks_are_as_large_as_the_budget_allows_and_no_larger_than_the_largest_set() {
    let s = sets(1000);
    // A generous budget (the key does not fit it, but any one set does): one chunk each.
    let p = StreamPlan::new(&s, s.key_bytes(), 1).unwrap();
    check_cover(&s, &p, s.key_bytes());
    assert_eq!(p.chunk_bytes(), s.set_bytes(KeySet::B2));
    for set in KeySet::ALL {
        assert_eq!(p.chunk_count(set), 1, "{set:?}");
    }
    // Uneven lengths differ by one at most.
    let budget = s.proof_bytes + 2 * 300 * 64;
    let p = StreamPlan::new(&s, budget, 1).unwrap();
    let lens: Vec<usize> = p.chunks(KeySet::A).iter().map(|c| c.len()).collect();
    assert_eq!(lens, vec![250; 4]);
    let lens: Vec<usize> = p.chunks(KeySet::C).iter().map(|c| c.len()).collect();
    assert_eq!(lens, vec![249, 249, 249, 248]); // 995 private signals
    check_cover(&s, &p, budget);
}

#[test]
fn a_batch_that_does_not_fit_is_refused_in_one_line_naming_sizes() {
    let s = sets(1 << 16);
    let budget = 3 << 20;
    // 2 proofs' scalars alone are 8 MiB.
    let err = StreamPlan::new(&s, budget, 2).unwrap_err();
    let msg = err.to_string();
    assert_eq!(
        msg,
        "a device budget of 3.0 MiB cannot stream this key (24.0 MiB of points): 2 proof(s) \
         keep 8.0 MiB on the device, and two chunks of at least 8.0 KiB each with the MSMs' \
         scratch need 16.0 KiB more"
    );
    assert!(!msg.contains('\n'));
    assert_eq!(
        StreamPlan::largest_batch(&s, budget, 4).unwrap_err(),
        StreamPlan::new(&s, budget, 1).unwrap_err()
    );
    assert_eq!(
        StreamPlan::new(&s, budget, 0).unwrap_err(),
        StreamPlanError::NoProofs
    );
    assert_eq!(
        StreamPlan::largest_batch(&s, budget, 0).unwrap_err(),
        StreamPlanError::NoProofs
    );
}

#[test]
fn a_devices_scratch_shrinks_the_chunks_and_stays_in_the_budget() {
    let s = sets(1 << 16).with_scratch(ChunkScratch {
        per_point: 192,
        fixed: 1 << 20,
        long: None,
    });
    // Per G1 point of a chunk: 2 × 64 B in flight and 192 B of scratch.
    let budget = 2 * s.proof_bytes + (1 << 20) + (1 << 17) * 5;
    let p = StreamPlan::new(&s, budget, 2).unwrap();
    assert_eq!(p.chunk_bytes(), 1 << 17); // 2^11 G1 points
    assert_eq!(p.longest_chunk(KeySet::A), 1 << 11);
    assert_eq!(p.chunk_count(KeySet::A), 32);
    assert_eq!(p.device_bytes(), budget);
    check_cover(&s, &p, budget);
    assert!(StreamPlan::new(&s, budget - 1, 2).unwrap().chunk_bytes() < 1 << 17);
    // Where the batch and the fixed scratch leave too little, the refusal counts it.
    let err = StreamPlan::new(&s, 2 * s.proof_bytes + (1 << 20), 2).unwrap_err();
    assert!(
        err.to_string().ends_with("scratch need 1.0 MiB more"),
        "{err}"
    );
    assert!(!p.walk_in_room());
}

/// A lower rate for long chunks makes them longer where they are long enough for it,
/// and is not taken where they would not be.
#[test]
fn long_chunks_take_the_lower_scratch_rate_only_where_they_are_long() {
    let long = LongChunkRate {
        from: 1 << 12,
        per_point: 64,
    };
    let scratch = ChunkScratch {
        per_point: 192,
        fixed: 1 << 20,
        long: Some(long),
    };
    let s = sets(1 << 16).with_scratch(scratch);
    // 2^21 bytes beside two proofs: 2^21 · 64 / (128 + 64) = 2^13 + ... G1 points.
    let budget = 2 * s.proof_bytes + (1 << 20) + (2 << 20);
    let p = StreamPlan::new(&s, budget, 2).unwrap();
    assert_eq!(p.chunk_bytes(), (2u64 << 20) * 64 / 192);
    assert!(p.longest_chunk(KeySet::A) as u64 >= long.from);
    check_cover(&s, &p, budget);
    let flat = sets(1 << 16).with_scratch(ChunkScratch {
        long: None,
        ..scratch
    });
    assert!(StreamPlan::new(&flat, budget, 2).unwrap().chunk_bytes() < p.chunk_bytes());
    // A budget whose chunks at the lower rate would be short: the flat rate's plan.
    let small = 2 * s.proof_bytes + (1 << 20) + (1 << 19);
    let q = StreamPlan::new(&s, small, 2).unwrap();
    assert_eq!(
        q,
        StreamPlan {
            scratch,
            ..StreamPlan::new(&flat, small, 2).unwrap()
        }
    );
    assert!((q.longest_chunk(KeySet::A) as u64) < long.from);
    check_cover(&s, &q, small);
}

/// Where each proof's buffers leave room idle during the walk, the walk's chunks go
/// there: as large as the room and the scratch beside the proofs allow, in halves of
/// one proof's room for a batch of one; the matrices' chunks stay beside the proofs.
#[test]
fn the_walk_takes_the_proofs_idle_room_where_it_makes_chunks_larger() {
    let scratch = ChunkScratch {
        per_point: 192,
        fixed: 1 << 20,
        long: None,
    };
    let room = 3 * (1 << 16) * 32; // a GPU quotient's a, b, c at 2^16
    let s = sets(1 << 16).with_scratch(scratch).with_walk_room(room);
    // Two proofs: the walk's chunks in halves of the first one's room all the same.
    let budget = 2 * s.proof_bytes + (1 << 20) + (1 << 17) * 5;
    let p = StreamPlan::new(&s, budget, 2).unwrap();
    assert_eq!(p.chunk_bytes(), 1 << 17);
    assert!(p.walk_in_room());
    // The scratch beside the proofs bounds it: 640 KiB for 192 B a G1 point.
    assert_eq!(p.walk_chunk_bytes(), (5 << 17) * 64 / 192);
    assert_eq!(p.chunk_count(KeySet::A), 20); // ⌈2^16 / 3413⌉
    check_cover(&s, &p, budget);
    assert!(p.device_bytes() > 2 * s.proof_bytes + 2 * p.chunk_bytes());
    let shown = Residency::Streamed(p.clone()).to_string();
    assert!(
        shown.contains(", points in 213.3 KiB in the proofs' room"),
        "{shown}"
    );
    // With more beside the proofs the room bounds it, for one proof or two.
    let larger = s.proof_bytes + (12 << 20);
    let one = StreamPlan::new(&s, larger, 1).unwrap();
    assert!(one.walk_in_room());
    assert_eq!(one.walk_chunk_bytes(), room / 2);
    check_cover(&s, &one, larger);
    let two = StreamPlan::new(&s, 2 * s.proof_bytes + (12 << 20), 2).unwrap();
    assert_eq!(two.walk_chunk_bytes(), room / 2);
    // A budget whose chunks beside the proofs hold a whole set needs no room.
    let p = StreamPlan::new(&s, s.proof_bytes + (64 << 20), 1).unwrap();
    assert!(!p.walk_in_room());
    // Chunks beside the proofs as large as the room: no reason to use it.
    let small = sets(1 << 16).with_scratch(scratch).with_walk_room(64 << 10);
    let p = StreamPlan::new(&small, budget, 2).unwrap();
    assert!(!p.walk_in_room());
    assert_eq!(p.walk_chunk_bytes(), p.chunk_bytes());
}
