//! The one sort of the target's few ordered lists (the classifier's
//! causes, the `--spike` list, the coarse explanation's IRQ lines): a
//! heapsort, in place, O(n log n) in every case, without allocating.
//!
//! The standard library's `sort_unstable` is faster on large inputs, but
//! each use of it costs several kilobytes of code (quicksort, small sorts,
//! a heapsort fallback and pivot selection, per element type), where this
//! costs a few hundred bytes (`bench/results/opt-level.md`). The lists
//! sorted here are short (the causes and IRQ lines of one spike) or
//! sorted once at the end of a run (the `--spike` list). Not stable: every
//! caller's key is total, so the order is the same as any sort's.

/// Sort `v` by `key`, smallest first.
pub fn by_key<T, K: Ord>(v: &mut [T], mut key: impl FnMut(&T) -> K) {
    let n = v.len();
    for root in (0..n / 2).rev() {
        sift_down(v, root, &mut key);
    }
    for end in (1..n).rev() {
        v.swap(0, end);
        if let Some(heap) = v.get_mut(..end) {
            sift_down(heap, 0, &mut key);
        }
    }
}

/// Move `heap[root]` down until neither child's key is larger.
fn sift_down<T, K: Ord>(heap: &mut [T], mut root: usize, key: &mut impl FnMut(&T) -> K) {
    loop {
        let left = 2 * root + 1;
        let Some(l) = heap.get(left) else {
            return;
        };
        let mut child = left;
        let mut child_key = key(l);
        if let Some(r) = heap.get(left + 1) {
            let right_key = key(r);
            if right_key > child_key {
                child = left + 1;
                child_key = right_key;
            }
        }
        match heap.get(root) {
            Some(x) if key(x) < child_key => heap.swap(root, child),
            _ => return,
        }
        root = child;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every length to 40, many orders and duplicate keys: the result is
    /// sorted and a permutation of the input.
    #[test]
    fn sorts_like_the_standard_sort() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for len in 0..40 {
            for range in [1u64, 3, 1000] {
                let mut v: Vec<(u64, usize)> = (0..len)
                    .map(|i| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        (x % range, i)
                    })
                    .collect();
                let mut want = v.clone();
                want.sort_unstable();
                by_key(&mut v, |e| *e);
                assert_eq!(v, want, "len {len} range {range}");
            }
        }
    }

    #[test]
    fn reverse_keys_sort_largest_first() {
        let mut v = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5];
        by_key(&mut v, |e| core::cmp::Reverse(*e));
        assert_eq!(v, [9, 6, 5, 5, 5, 4, 3, 3, 2, 1, 1]);
    }
}
