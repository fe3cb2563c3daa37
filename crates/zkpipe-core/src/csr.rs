//! The compiled key's sparse matrices (A and B) in compressed-row form: what the reduce
//! stage multiplies the witness by.

use ark_ff::Field;
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

/// How a device holds a chunk of A's and B's rows, cut together (rows `r` of both): each
/// matrix's offsets of those rows (`r.len() + 1` u32s), the indices of the rows longer
/// than `long_row` entries in either matrix (a u32 each: a device sums those by a group of
/// threads), the rows' columns (a u32 per entry), padding to `align`, and their values
/// (`value_bytes` each). What [`row_chunks`] sizes chunks by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowChunkShape {
    /// Bytes of one value.
    pub value_bytes: u64,
    /// Rows with more entries than this (in A or B) are listed as long.
    pub long_row: u32,
    /// The values start at a multiple of this (and at most this − 1 bytes of padding).
    pub align: u64,
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
    /// A's row offsets, then B's.
    pub starts: [u64; 2],
    /// The long rows' indices (within the chunk).
    pub long: u64,
    /// A's columns, then B's.
    pub cols: [u64; 2],
    /// A's values, then B's.
    pub vals: [u64; 2],
    /// Bytes of the whole chunk.
    pub bytes: u64,
}

impl RowChunkShape {
    /// Whether row `i` of matrices with offsets `a` and `b` is long.
    pub fn is_long(&self, a: &[u32], b: &[u32], i: usize) -> bool {
        a[i + 1] - a[i] > self.long_row || b[i + 1] - b[i] > self.long_row
    }

    /// The layout of `rows` rows with `entries` entries (A's, B's), `long_rows` of them long.
    pub fn layout(&self, rows: usize, entries: [usize; 2], long_rows: usize) -> RowChunkLayout {
        let u32s = |n: usize| 4 * n as u64;
        let starts = [0, u32s(rows + 1)];
        let long = 2 * u32s(rows + 1);
        let cols = [long + u32s(long_rows), long + u32s(long_rows + entries[0])];
        let end_of_cols = cols[1] + u32s(entries[1]);
        let align = self.align.max(1);
        let vals0 = end_of_cols.div_ceil(align) * align;
        let vals = [vals0, vals0 + entries[0] as u64 * self.value_bytes];
        RowChunkLayout {
            rows,
            entries,
            long_rows,
            starts,
            long,
            cols,
            vals,
            bytes: vals[1] + entries[1] as u64 * self.value_bytes,
        }
    }

    /// The layout of rows `r` of matrices with offsets `a` and `b`.
    pub fn layout_of(&self, a: &[u32], b: &[u32], r: &Range<usize>) -> RowChunkLayout {
        let entries = [
            (a[r.end] - a[r.start]) as usize,
            (b[r.end] - b[r.start]) as usize,
        ];
        let long = r.clone().filter(|&i| self.is_long(a, b, i)).count();
        self.layout(r.len(), entries, long)
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

/// Cuts the rows of two matrices with row offsets `a` and `b` (the same number of rows)
/// into consecutive chunks that each need at most `max` bytes as `shape` lays them out:
/// each chunk as long as fits, in order, covering every row (none where there are no
/// rows). Streams the matrices through a device that cannot hold them whole.
pub fn row_chunks(
    a: &[u32],
    b: &[u32],
    shape: RowChunkShape,
    max: u64,
) -> Result<Vec<Range<usize>>, RowTooLarge> {
    let rows = a.len().saturating_sub(1).min(b.len().saturating_sub(1));
    let mut chunks = Vec::new();
    let (mut start, mut long) = (0, 0);
    for i in 0..rows {
        let row_long = usize::from(shape.is_long(a, b, i));
        let with_row = |from: usize, long: usize| {
            let entries = [(a[i + 1] - a[from]) as usize, (b[i + 1] - b[from]) as usize];
            shape.layout(i + 1 - from, entries, long + row_long).bytes
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
        long_row: 2,
        align: 64,
    };

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
        let l = SHAPE.layout(3, [5, 2], 1);
        assert_eq!(l.starts, [0, 16]);
        assert_eq!(l.long, 32);
        assert_eq!(l.cols, [36, 56]);
        // Columns end at 64: the values start there, aligned.
        assert_eq!(l.vals, [64, 64 + 5 * 32]);
        assert_eq!(l.bytes, 64 + 7 * 32);
        assert_eq!(SHAPE.layout(0, [0, 0], 0).bytes, 64);
    }

    #[test]
    fn chunks_cover_the_rows_in_order_each_as_long_as_fits() {
        let a = starts(&[1, 3, 0, 1, 7, 1, 1, 2, 0, 1, 1, 5]);
        let b = starts(&[1, 1, 2, 0, 1, 1, 4, 1, 1, 1, 0, 1]);
        let rows = a.len() - 1;
        for max in [400u64, 500, 700, 1000, 5000] {
            let chunks = row_chunks(&a, &b, SHAPE, max).unwrap();
            assert_eq!(chunks.first().unwrap().start, 0, "max {max}");
            assert_eq!(chunks.last().unwrap().end, rows, "max {max}");
            for w in chunks.windows(2) {
                assert_eq!(w[0].end, w[1].start, "max {max}");
            }
            for c in &chunks {
                assert!(!c.is_empty());
                assert!(SHAPE.layout_of(&a, &b, c).bytes <= max, "max {max}: {c:?}");
                if c.end < rows {
                    // One more row would not fit.
                    let more = c.start..c.end + 1;
                    assert!(
                        SHAPE.layout_of(&a, &b, &more).bytes > max,
                        "max {max}: {c:?}"
                    );
                }
            }
        }
        assert_eq!(row_chunks(&a, &b, SHAPE, 5000).unwrap(), vec![0..rows]);
    }

    #[test]
    fn a_row_larger_than_a_chunk_is_refused_by_its_index() {
        let a = starts(&[1, 1, 30, 1]);
        let b = starts(&[1, 1, 1, 1]);
        let err = row_chunks(&a, &b, SHAPE, 600).unwrap_err();
        assert_eq!(err.row, 2);
        assert!(err.bytes > 600);
        assert!(row_chunks(&starts(&[]), &starts(&[]), SHAPE, 1)
            .unwrap()
            .is_empty());
    }
}
