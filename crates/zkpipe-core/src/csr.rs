//! The compiled key's sparse matrices (A and B) in compressed-row form: what the reduce
//! stage multiplies the witness by.

use ark_ff::{Field, PrimeField};
use std::ops::Range;

/// A sparse matrix in compressed-row form.
#[derive(Debug, Clone, Default)]
pub struct Csr<F> {
    /// `row_starts[i]..row_starts[i+1]` are row i's entries; length rows + 1.
    pub row_starts: Vec<u32>,
    /// Column (signal) of each entry.
    pub cols: Vec<u32>,
    /// Value of each entry.
    pub vals: Vec<F>,
}

impl<F: Field> Csr<F> {
    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.row_starts.len() - 1
    }

    /// Row i as (columns, values).
    pub fn row(&self, i: usize) -> (&[u32], &[F]) {
        let r = self.row_starts[i] as usize..self.row_starts[i + 1] as usize;
        (&self.cols[r.clone()], &self.vals[r])
    }

    /// ⟨row i, w⟩.
    pub fn dot(&self, i: usize, w: &[F]) -> F {
        let (cols, vals) = self.row(i);
        cols.iter()
            .zip(vals)
            .fold(F::ZERO, |acc, (&c, v)| acc + *v * w[c as usize])
    }
}

/// A matrix's values as a device streams them ([`NarrowValues::of`]): a u32 word an
/// entry, either a value of magnitude below 2^30 itself (with [`NARROW_NEGATIVE`]: its
/// negation, p − v) or, with [`NARROW_FULL`], the index of a full field element in
/// `full`. A circuit's coefficients are mostly small or small negatives (±1, powers of
/// two, a synthetic key's 90% below 2^16), so most entries cross in 4 bytes, not 32.
#[derive(Debug, Clone, Default)]
pub struct NarrowValues<F> {
    /// One word an entry.
    pub words: Vec<u32>,
    /// The values that are not small, in entry order.
    pub full: Vec<F>,
    /// `full_starts[i]` is the index in `full` of row i's first full value; rows + 1.
    pub full_starts: Vec<u32>,
}

/// A [`NarrowValues`] word's flag: the rest is an index into its full values.
pub const NARROW_FULL: u32 = 1 << 31;
/// A [`NarrowValues`] word's flag (without [`NARROW_FULL`]): the value is p − the rest.
pub const NARROW_NEGATIVE: u32 = 1 << 30;

/// Too many full values for a [`NarrowValues`] word's 31-bit index.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a matrix has {0} values that are not small, more than a 31-bit index reaches")]
pub struct TooManyFull(pub usize);

impl<F: PrimeField> NarrowValues<F> {
    /// `m`'s values as words (found in parallel) and its full values.
    pub fn of(m: &Csr<F>) -> Result<Self, TooManyFull> {
        use rayon::prelude::*;
        let small: Vec<Option<u32>> = m.vals.par_iter().map(small_word).collect();
        let n_full = small.iter().filter(|s| s.is_none()).count();
        if n_full >= NARROW_FULL as usize {
            return Err(TooManyFull(n_full));
        }
        let mut full = Vec::with_capacity(n_full);
        let words = small
            .iter()
            .zip(&m.vals)
            .map(|(s, v)| {
                s.unwrap_or_else(|| {
                    full.push(*v);
                    NARROW_FULL | (full.len() - 1) as u32
                })
            })
            .collect();
        let full_starts = std::iter::once(0)
            .chain(m.row_starts.windows(2).scan(0u32, |seen, r| {
                let row = &small[r[0] as usize..r[1] as usize];
                *seen += row.iter().filter(|s| s.is_none()).count() as u32;
                Some(*seen)
            }))
            .collect();
        Ok(Self {
            words,
            full,
            full_starts,
        })
    }

    /// The value of entry `j`.
    pub fn value(&self, j: usize) -> F {
        let w = self.words[j];
        if w & NARROW_FULL != 0 {
            return self.full[(w & !NARROW_FULL) as usize];
        }
        let v = F::from((w & !NARROW_NEGATIVE) as u64);
        if w & NARROW_NEGATIVE != 0 {
            -v
        } else {
            v
        }
    }
}

/// `v` as a word if it or its negation is below 2^30.
fn small_word<F: PrimeField>(v: &F) -> Option<u32> {
    let below = |x: F| {
        let b = x.into_bigint();
        let limbs = b.as_ref();
        (limbs[1..].iter().all(|&l| l == 0) && limbs[0] < u64::from(NARROW_NEGATIVE))
            .then_some(limbs[0] as u32)
    };
    below(*v).or_else(|| below(-*v).map(|m| m | NARROW_NEGATIVE))
}

/// How a device holds a chunk of A's and B's rows, cut together (rows `r` of both): each
/// matrix's offsets of those rows (`r.len() + 1` u32s), the indices of the rows longer
/// than `long_row` entries in either matrix (a u32 each: a device sums those by a group of
/// threads), the rows' columns (a u32 per entry), padding to `align`, their values
/// (`value_bytes` each), and where the values are narrow ([`NarrowValues`]: `full_bytes`
/// not 0) padding to `align` and each matrix's full values in the rows (`full_bytes`
/// each). What [`row_chunks`] sizes chunks by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowChunkShape {
    /// Bytes of one value (a narrow value's word).
    pub value_bytes: u64,
    /// Bytes of one full value where the values are narrow; 0 where they are not.
    pub full_bytes: u64,
    /// Rows with more entries than this (in A or B) are listed as long.
    pub long_row: u32,
    /// The values start at a multiple of this (and at most this − 1 bytes of padding).
    pub align: u64,
}

/// What a chunk's layout is computed from: A's and B's row offsets, and where their
/// values are narrow each one's [`NarrowValues::full_starts`].
#[derive(Debug, Clone, Copy)]
pub struct RowOffsets<'a> {
    /// A's row offsets, then B's.
    pub entries: [&'a [u32]; 2],
    /// A's and B's first full value of each row, where the values are narrow.
    pub full: Option<[&'a [u32]; 2]>,
}

impl RowOffsets<'_> {
    /// Rows of both (the fewer, if they differ).
    fn rows(&self) -> usize {
        let [a, b] = self.entries;
        a.len().saturating_sub(1).min(b.len().saturating_sub(1))
    }

    /// A's and B's entries in rows `r`.
    fn entries_in(&self, r: &Range<usize>) -> [usize; 2] {
        self.entries.map(|s| (s[r.end] - s[r.start]) as usize)
    }

    /// A's and B's full values in rows `r` (none where the values are not narrow).
    pub fn fulls_in(&self, r: &Range<usize>) -> [usize; 2] {
        self.full
            .map_or([0, 0], |f| f.map(|s| (s[r.end] - s[r.start]) as usize))
    }
}

/// Where each part of a chunk of rows lies in its device buffer (byte offsets), and its
/// counts: [`RowChunkShape::layout`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowChunkLayout {
    /// Rows in the chunk.
    pub rows: usize,
    /// A's entries in the chunk, then B's.
    pub entries: [usize; 2],
    /// Long rows in the chunk.
    pub long_rows: usize,
    /// A's full values in the chunk, then B's (none where the values are not narrow).
    pub fulls: [usize; 2],
    /// A's row offsets, then B's.
    pub starts: [u64; 2],
    /// The long rows' indices (within the chunk).
    pub long: u64,
    /// A's columns, then B's.
    pub cols: [u64; 2],
    /// A's values (or narrow words), then B's.
    pub vals: [u64; 2],
    /// A's full values, then B's (where the values are narrow).
    pub full: [u64; 2],
    /// Bytes of the whole chunk.
    pub bytes: u64,
}

impl RowChunkShape {
    /// Whether row `i` of matrices with offsets `a` and `b` is long.
    pub fn is_long(&self, a: &[u32], b: &[u32], i: usize) -> bool {
        a[i + 1] - a[i] > self.long_row || b[i + 1] - b[i] > self.long_row
    }

    /// The layout of `rows` rows with `entries` entries (A's, B's), `long_rows` of them
    /// long, `fulls` full values (A's, B's; where the values are narrow).
    pub fn layout(
        &self,
        rows: usize,
        entries: [usize; 2],
        long_rows: usize,
        fulls: [usize; 2],
    ) -> RowChunkLayout {
        let u32s = |n: usize| 4 * n as u64;
        let align = |at: u64| at.div_ceil(self.align.max(1)) * self.align.max(1);
        let starts = [0, u32s(rows + 1)];
        let long = 2 * u32s(rows + 1);
        let cols = [long + u32s(long_rows), long + u32s(long_rows + entries[0])];
        let end_of_cols = cols[1] + u32s(entries[1]);
        let vals0 = align(end_of_cols);
        let vals = [vals0, vals0 + entries[0] as u64 * self.value_bytes];
        let end_of_vals = vals[1] + entries[1] as u64 * self.value_bytes;
        let (full, bytes) = match self.full_bytes {
            0 => ([end_of_vals; 2], end_of_vals),
            f => {
                let full0 = align(end_of_vals);
                let full = [full0, full0 + fulls[0] as u64 * f];
                (full, full[1] + fulls[1] as u64 * f)
            }
        };
        RowChunkLayout {
            rows,
            entries,
            long_rows,
            fulls,
            starts,
            long,
            cols,
            vals,
            full,
            bytes,
        }
    }

    /// The layout of rows `r` of matrices with offsets `m`.
    pub fn layout_of(&self, m: RowOffsets<'_>, r: &Range<usize>) -> RowChunkLayout {
        let [a, b] = m.entries;
        let long = r.clone().filter(|&i| self.is_long(a, b, i)).count();
        self.layout(r.len(), m.entries_in(r), long, m.fulls_in(r))
    }
}

/// A row of A and B too large for a chunk of the given size.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("row {row} of A and B needs {bytes} bytes on the device, more than a chunk's {max}")]
pub struct RowTooLarge {
    /// The row.
    pub row: usize,
    /// What it needs alone.
    pub bytes: u64,
    /// The chunk size.
    pub max: u64,
}

/// Cuts the rows of two matrices with row offsets `m` (the same number of rows) into
/// consecutive chunks that each need at most `max` bytes as `shape` lays them out: each
/// chunk as long as fits, in order, covering every row (none where there are no rows).
/// Streams the matrices through a device that cannot hold them whole.
pub fn row_chunks(
    m: RowOffsets<'_>,
    shape: RowChunkShape,
    max: u64,
) -> Result<Vec<Range<usize>>, RowTooLarge> {
    let [a, b] = m.entries;
    let rows = m.rows();
    let mut chunks = Vec::new();
    let (mut start, mut long) = (0, 0);
    for i in 0..rows {
        let row_long = usize::from(shape.is_long(a, b, i));
        let with_row = |from: usize, long: usize| {
            let r = from..i + 1;
            let layout = shape.layout(r.len(), m.entries_in(&r), long + row_long, m.fulls_in(&r));
            layout.bytes
        };
        if with_row(start, long) > max {
            if start == i {
                let bytes = with_row(i, 0);
                return Err(RowTooLarge { row: i, bytes, max });
            }
            chunks.push(start..i);
            (start, long) = (i, 0);
            if with_row(i, 0) > max {
                let bytes = with_row(i, 0);
                return Err(RowTooLarge { row: i, bytes, max });
            }
        }
        long += row_long;
    }
    if start < rows {
        chunks.push(start..rows);
    }
    Ok(chunks)
}

#[cfg(test)]
mod row_chunk_tests {
    use super::*;

    const SHAPE: RowChunkShape = RowChunkShape {
        value_bytes: 32,
        full_bytes: 0,
        long_row: 2,
        align: 64,
    };

    /// Narrow values: a word an entry, full values of 32 bytes.
    const NARROW: RowChunkShape = RowChunkShape {
        value_bytes: 4,
        full_bytes: 32,
        ..SHAPE
    };

    fn offsets<'a>(a: &'a [u32], b: &'a [u32]) -> RowOffsets<'a> {
        RowOffsets {
            entries: [a, b],
            full: None,
        }
    }

    /// Row offsets of rows with these entry counts.
    fn starts(lens: &[u32]) -> Vec<u32> {
        std::iter::once(0)
            .chain(lens.iter().scan(0, |s, &l| {
                *s += l;
                Some(*s)
            }))
            .collect()
    }

    #[test]
    fn a_layout_places_every_part_after_the_last() {
        let l = SHAPE.layout(3, [5, 2], 1, [0, 0]);
        assert_eq!(l.starts, [0, 16]);
        assert_eq!(l.long, 32);
        assert_eq!(l.cols, [36, 56]);
        // Columns end at 64: the values start there, aligned.
        assert_eq!(l.vals, [64, 64 + 5 * 32]);
        assert_eq!(l.bytes, 64 + 7 * 32);
        assert_eq!(SHAPE.layout(0, [0, 0], 0, [0, 0]).bytes, 64);
        // Narrow: words after the columns, then the full values, aligned.
        let n = NARROW.layout(3, [5, 2], 1, [1, 2]);
        assert_eq!(n.vals, [64, 64 + 5 * 4]);
        assert_eq!(n.full, [128, 128 + 32]);
        assert_eq!(n.bytes, 128 + 3 * 32);
        assert_eq!(n.fulls, [1, 2]);
    }

    /// Small values and small negatives become words, the rest full values, in entry
    /// order, counted per row; every entry's value comes back.
    #[test]
    fn narrow_values_keep_every_value() {
        use ark_bn254::Fr;
        let vals = vec![
            Fr::from(1u64),
            -Fr::from(1u64),
            Fr::from((1u64 << 30) - 1),
            Fr::from(1u64 << 30),
            -Fr::from(1u64 << 30),
            Fr::from(u64::MAX),
            Fr::from(0u64),
            -Fr::from(7u64),
        ];
        let m = Csr {
            row_starts: vec![0, 3, 3, 6, 8],
            cols: vec![0; 8],
            vals: vals.clone(),
        };
        let n = NarrowValues::of(&m).unwrap();
        assert_eq!(n.words[0], 1);
        assert_eq!(n.words[1], NARROW_NEGATIVE | 1);
        assert_eq!(n.words[2], (1 << 30) - 1);
        assert_eq!(n.words[3], NARROW_FULL);
        assert_eq!(n.words[4], NARROW_FULL | 1);
        assert_eq!(n.words[5], NARROW_FULL | 2);
        assert_eq!(n.full.len(), 3);
        assert_eq!(n.full_starts, vec![0, 0, 0, 3, 3]);
        for (j, v) in vals.iter().enumerate() {
            assert_eq!(n.value(j), *v, "entry {j}");
        }
        // Chunks of narrow rows count their full values.
        let full = [&n.full_starts[..], &n.full_starts[..]];
        let rows = RowOffsets {
            entries: [&m.row_starts, &m.row_starts],
            full: Some(full),
        };
        assert_eq!(rows.fulls_in(&(2..3)), [3, 3]);
        assert_eq!(rows.fulls_in(&(0..2)), [0, 0]);
        let whole = NARROW.layout_of(rows, &(0..4));
        assert_eq!(whole.fulls, [3, 3]);
        let chunks = row_chunks(rows, NARROW, whole.bytes - 1).unwrap();
        assert!(chunks.len() > 1);
        for c in &chunks {
            assert!(NARROW.layout_of(rows, c).bytes < whole.bytes);
        }
    }

    #[test]
    fn chunks_cover_the_rows_in_order_each_as_long_as_fits() {
        let a = starts(&[1, 3, 0, 1, 7, 1, 1, 2, 0, 1, 1, 5]);
        let b = starts(&[1, 1, 2, 0, 1, 1, 4, 1, 1, 1, 0, 1]);
        let rows = a.len() - 1;
        for max in [400u64, 500, 700, 1000, 5000] {
            let chunks = row_chunks(offsets(&a, &b), SHAPE, max).unwrap();
            assert_eq!(chunks.first().unwrap().start, 0, "max {max}");
            assert_eq!(chunks.last().unwrap().end, rows, "max {max}");
            for w in chunks.windows(2) {
                assert_eq!(w[0].end, w[1].start, "max {max}");
            }
            for c in &chunks {
                assert!(!c.is_empty());
                assert!(
                    SHAPE.layout_of(offsets(&a, &b), c).bytes <= max,
                    "max {max}: {c:?}"
                );
                if c.end < rows {
                    // One more row would not fit.
                    let more = c.start..c.end + 1;
                    assert!(
                        SHAPE.layout_of(offsets(&a, &b), &more).bytes > max,
                        "max {max}: {c:?}"
                    );
                }
            }
        }
        assert_eq!(
            row_chunks(offsets(&a, &b), SHAPE, 5000).unwrap(),
            vec![0..rows]
        );
    }

    #[test]
    fn a_row_larger_than_a_chunk_is_refused_by_its_index() {
        let a = starts(&[1, 1, 30, 1]);
        let b = starts(&[1, 1, 1, 1]);
        let err = row_chunks(offsets(&a, &b), SHAPE, 600).unwrap_err();
        assert_eq!(err.row, 2);
        assert!(err.bytes > 600);
        assert!(row_chunks(offsets(&starts(&[]), &starts(&[])), SHAPE, 1)
            .unwrap()
            .is_empty());
    }
}
