//! The one parallel splitter: a flat iteration space (the elements of a ufunc call, the loop
//! items of a gufunc, or the items of any chosen sub-space of axes, see
//! [`select_axes`](crate::shape::select_axes)) cut into pieces that rayon's pool runs, each
//! piece walked by the serial code.

use rayon::prelude::*;
use std::ops::Range;

/// How many threads a CPU call may use: what the `cpu` and `parallel` targets mean to the
/// engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Threads {
    /// The calling thread only (`cpu`).
    One,
    /// Rayon's pool, where the work is large enough (`parallel`).
    All,
}

impl Threads {
    /// How many threads the call may use: 1, or the size of rayon's pool.
    pub(crate) fn count(self) -> usize {
        match self {
            Threads::One => 1,
            Threads::All => rayon::current_num_threads(),
        }
    }

    /// The fewest items a piece of a rayon iterator may hold (`with_min_len`): with `One` it is
    /// never split, so all of it runs on the calling thread.
    pub(crate) fn min_len(self) -> usize {
        match self {
            Threads::One => usize::MAX,
            Threads::All => 1,
        }
    }
}

/// How a kind of work is cut.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Split {
    /// Below this much work in all (items times work per item), the call stays on the calling
    /// thread: rayon costs some microseconds.
    pub min_work: usize,
    /// Also stay on the calling thread below this many items.
    pub min_items: usize,
    /// Pieces per thread, so that threads that finish early take more.
    pub pieces_per_thread: usize,
    /// Each piece but the last holds a multiple of this many items (whole cache lines and
    /// vectors for element-wise work).
    pub align: usize,
}

impl Split {
    /// The pieces of `0..items`, in order, or one piece where the work is too small to split.
    pub(crate) fn pieces(
        &self,
        items: usize,
        work_per_item: usize,
        threads: usize,
    ) -> Vec<Range<usize>> {
        let work = items.saturating_mul(work_per_item.max(1));
        if threads < 2 || items < self.min_items.max(2) || work < self.min_work {
            #[allow(clippy::single_range_in_vec_init)] // one piece: the whole range
            return vec![0..items];
        }
        let pieces = (threads * self.pieces_per_thread)
            .min(work / (self.min_work / 2).max(1))
            .max(2)
            .min(items);
        let per = items.div_ceil(pieces).next_multiple_of(self.align.max(1));
        (0..items.div_ceil(per))
            .map(|p| p * per..((p + 1) * per).min(items))
            .collect()
    }

    /// Runs `piece` over `0..items`: with [`Threads::All`] on rayon's pool, else (or where the
    /// work is small) on this thread.
    pub(crate) fn run(
        &self,
        threads: Threads,
        items: usize,
        work_per_item: usize,
        piece: impl Fn(Range<usize>) + Sync + Send,
    ) {
        let pieces = self.pieces(items, work_per_item, threads.count());
        if let [only] = pieces.as_slice() {
            return piece(only.clone());
        }
        // A worker runs the piece as quietly as the calling thread would (see `panic`).
        let quiet = crate::panic::is_quiet();
        pieces
            .into_par_iter()
            .for_each(|r| crate::panic::quiet_if(quiet, || piece(r)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ELEMENTWISE: Split = Split {
        min_work: 1 << 15,
        min_items: 1,
        pieces_per_thread: 4,
        align: 64,
    };

    fn covers(pieces: &[Range<usize>], items: usize) -> bool {
        pieces.first().is_some_and(|p| p.start == 0)
            && pieces.last().is_some_and(|p| p.end == items)
            && pieces.windows(2).all(|w| w[0].end == w[1].start)
    }

    #[test]
    fn pieces_cover_the_space_aligned() {
        let p = ELEMENTWISE.pieces(1_000_003, 1, 2);
        assert_eq!(p.len(), 8);
        assert!(covers(&p, 1_000_003));
        assert!(p[..p.len() - 1].iter().all(|r| r.len() % 64 == 0));
        assert_eq!(
            ELEMENTWISE.pieces(100, 1, 8),
            vec![0..100],
            "too little work"
        );
        assert_eq!(
            ELEMENTWISE.pieces(1 << 20, 1, 1),
            vec![0..1 << 20],
            "one thread"
        );
        // Few items with much work each still split, never into empty pieces.
        let gu = Split {
            min_work: 1 << 16,
            min_items: 2,
            pieces_per_thread: 8,
            align: 1,
        };
        let p = gu.pieces(3, 1 << 20, 16);
        assert_eq!(p, vec![0..1, 1..2, 2..3]);
    }
}
