//! `Array.prototype.sort` as V8 (node 20) runs it: TimSort, step for step.
//!
//! For a consistent comparator every stable sort gives the same order. The reference
//! sorts siblings with `(a, b) => Date.parse(a.timestamp) - Date.parse(b.timestamp)`,
//! and an invalid timestamp makes that `NaN`, which the engine reads as `+0`
//! ("equal"). Equality is then not transitive, and the order depends on which pairs
//! the algorithm happens to compare. To give the reference's order for any number of
//! siblings this module repeats V8's algorithm exactly (V8's
//! `third_party/v8/builtins/array-sort.tq`, itself a port of CPython's
//! `listobject.c`): runs found by count-and-make-run, extended to the minimum run length
//! by binary insertion, merged under the run-stack invariants with galloping whose
//! threshold adapts across merges. Newer V8s sort arrays under 10 elements by binary
//! insertion alone (`kMinTimSortLen`); node 20's V8 (11.3) does not, and neither do
//! we: the two differ on short arrays with `NaN` keys (`[5, NaN, 3, NaN, 0]` stays as
//! it is in node 20).
//!
//! The algorithm only ever asks "is `a` less than `b`" (`order < 0`); everything
//! else (greater, equal, `NaN`) takes the other branch.

use std::cmp::Ordering;

/// The initial galloping threshold (`kMinGallopWins`).
const MIN_GALLOP_WINS: usize = 7;

/// Sorts `v` as V8's `Array.prototype.sort(cmp)` does, for a comparator that returns
/// the sign of its JavaScript result (`Less` for a negative number; `Equal` for zero
/// and for `NaN`).
///
/// ```
/// use session_types::js::sort::sort_by;
/// let mut v = [3, 1, 2];
/// sort_by(&mut v, |a, b| a.cmp(b));
/// assert_eq!(v, [1, 2, 3]);
/// ```
pub fn sort_by<T: Clone, F: FnMut(&T, &T) -> Ordering>(v: &mut [T], mut cmp: F) {
    let n = v.len();
    if n < 2 {
        return;
    }
    let mut less = |a: &T, b: &T| cmp(a, b) == Ordering::Less;
    let mut s = TimSort {
        min_gallop: MIN_GALLOP_WINS,
        runs: Vec::new(),
        tmp: Vec::new(),
    };
    s.sort(v, &mut less);
}

/// Sorts `v` as V8 does with the comparator `(a, b) => key(a) - key(b)`, the
/// reference's sibling order (`key` = `Date.parse(timestamp)`, `NaN` when invalid).
///
/// ```
/// use session_types::js::sort::sort_by_number_key;
/// let mut v = [(2.0, 'a'), (1.0, 'b'), (3.0, 'c')];
/// sort_by_number_key(&mut v, |x| x.0);
/// assert_eq!(v.map(|x| x.1), ['b', 'a', 'c']);
///
/// // NaN compares "equal" to everything: V8 finds one ascending run and stops.
/// let mut v = [(2.0, 'a'), (f64::NAN, 'b'), (1.0, 'c')];
/// sort_by_number_key(&mut v, |x| x.0);
/// assert_eq!(v.map(|x| x.1), ['a', 'b', 'c']);
/// ```
pub fn sort_by_number_key<T: Clone, K: FnMut(&T) -> f64>(v: &mut [T], mut key: K) {
    sort_by(v, |a, b| {
        let d = key(a) - key(b);
        if d < 0.0 {
            Ordering::Less
        } else if d > 0.0 {
            Ordering::Greater
        } else {
            Ordering::Equal
        }
    });
}

/// Sorts `v[low..high]` by binary insertion, given that `v[low..start]` is sorted
/// (`start == low` means nothing is known).
fn binary_insertion_sort<T: Clone>(
    v: &mut [T],
    low: usize,
    start: usize,
    high: usize,
    less: &mut impl FnMut(&T, &T) -> bool,
) {
    let mut start = if low == start { start + 1 } else { start };
    while start < high {
        let (mut left, mut right) = (low, start);
        let pivot = v[start].clone();
        while left < right {
            let mid = left + ((right - left) >> 1);
            if less(&pivot, &v[mid]) {
                right = mid;
            } else {
                left = mid + 1;
            }
        }
        // pivot belongs at `left`: after every element it is not less than.
        v[left..=start].rotate_right(1);
        start += 1;
    }
}

/// The length of the run starting at `low` in `v[low..high]` (`low < high`): the
/// longest non-descending prefix, or the longest strictly descending one, which is
/// reversed in place.
fn count_and_make_run<T>(
    v: &mut [T],
    low: usize,
    high: usize,
    less: &mut impl FnMut(&T, &T) -> bool,
) -> usize {
    let next = low + 1;
    if next == high {
        return 1;
    }
    let mut run = 2;
    let descending = less(&v[next], &v[low]);
    let mut prev = next;
    for idx in next + 1..high {
        let is_less = less(&v[idx], &v[prev]);
        if descending != is_less {
            break;
        }
        prev = idx;
        run += 1;
    }
    if descending {
        v[low..low + run].reverse();
    }
    run
}

/// The minimum run length for `n` elements (`n` itself below 64, else 32..=64 such
/// that `n / minrun` is just under a power of two).
fn min_run_length(mut n: usize) -> usize {
    let mut r = 0;
    while n >= 64 {
        r |= n & 1;
        n >>= 1;
    }
    n + r
}

/// Where `key` belongs in the sorted `a[base..base + len]`: left of any elements equal
/// to it. Gallops from `hint`, then binary-searches, comparing as V8 does.
fn gallop_left<T>(
    a: &[T],
    key: &T,
    base: usize,
    len: usize,
    hint: usize,
    less: &mut impl FnMut(&T, &T) -> bool,
) -> usize {
    let (mut last_ofs, mut ofs): (isize, isize) = (0, 1);
    let hint_i = hint as isize;
    let at = |i: isize| base.wrapping_add_signed(i);
    if less(&a[base + hint], key) {
        // a[base + hint] < key: gallop right.
        let max_ofs = (len - hint) as isize;
        while ofs < max_ofs {
            if !less(&a[at(hint_i + ofs)], key) {
                break;
            }
            last_ofs = ofs;
            ofs = (ofs << 1) + 1;
        }
        ofs = ofs.min(max_ofs);
        last_ofs += hint_i;
        ofs += hint_i;
    } else {
        // key <= a[base + hint]: gallop left.
        let max_ofs = hint_i + 1;
        while ofs < max_ofs {
            if less(&a[at(hint_i - ofs)], key) {
                break;
            }
            last_ofs = ofs;
            ofs = (ofs << 1) + 1;
        }
        ofs = ofs.min(max_ofs);
        let tmp = last_ofs;
        last_ofs = hint_i - ofs;
        ofs = hint_i - tmp;
    }
    last_ofs += 1;
    while last_ofs < ofs {
        let m = last_ofs + ((ofs - last_ofs) >> 1);
        if less(&a[at(m)], key) {
            last_ofs = m + 1;
        } else {
            ofs = m;
        }
    }
    ofs as usize
}

/// Like [`gallop_left`], but right of any elements equal to `key`.
fn gallop_right<T>(
    a: &[T],
    key: &T,
    base: usize,
    len: usize,
    hint: usize,
    less: &mut impl FnMut(&T, &T) -> bool,
) -> usize {
    let (mut last_ofs, mut ofs): (isize, isize) = (0, 1);
    let hint_i = hint as isize;
    let at = |i: isize| base.wrapping_add_signed(i);
    if less(key, &a[base + hint]) {
        // key < a[base + hint]: gallop left.
        let max_ofs = hint_i + 1;
        while ofs < max_ofs {
            if !less(key, &a[at(hint_i - ofs)]) {
                break;
            }
            last_ofs = ofs;
            ofs = (ofs << 1) + 1;
        }
        ofs = ofs.min(max_ofs);
        let tmp = last_ofs;
        last_ofs = hint_i - ofs;
        ofs = hint_i - tmp;
    } else {
        // a[base + hint] <= key: gallop right.
        let max_ofs = (len - hint) as isize;
        while ofs < max_ofs {
            if less(key, &a[at(hint_i + ofs)]) {
                break;
            }
            last_ofs = ofs;
            ofs = (ofs << 1) + 1;
        }
        ofs = ofs.min(max_ofs);
        last_ofs += hint_i;
        ofs += hint_i;
    }
    last_ofs += 1;
    while last_ofs < ofs {
        let m = last_ofs + ((ofs - last_ofs) >> 1);
        if less(key, &a[at(m)]) {
            ofs = m;
        } else {
            last_ofs = m + 1;
        }
    }
    ofs as usize
}

/// The state V8 keeps across one sort: the galloping threshold, the stack of pending
/// runs (base, length) and the merge buffer.
struct TimSort<T> {
    min_gallop: usize,
    runs: Vec<(usize, usize)>,
    tmp: Vec<T>,
}

/// How a merge loop ended.
enum End {
    /// Copy what is left of the buffered run.
    Succeed,
    /// Only one element of the buffered run is left; it goes at the far end.
    CopyRest,
}

impl<T: Clone> TimSort<T> {
    fn sort(&mut self, v: &mut [T], less: &mut impl FnMut(&T, &T) -> bool) {
        let n = v.len();
        let min_run = min_run_length(n);
        let (mut low, mut remaining) = (0, n);
        while remaining != 0 {
            let mut run = count_and_make_run(v, low, low + remaining, less);
            if run < min_run {
                let forced = min_run.min(remaining);
                binary_insertion_sort(v, low, low + run, low + forced, less);
                run = forced;
            }
            self.runs.push((low, run));
            self.merge_collapse(v, less);
            low += run;
            remaining -= run;
        }
        self.merge_force_collapse(v, less);
    }

    fn run_len(&self, i: usize) -> usize {
        self.runs[i].1
    }

    /// `run_length(n - 2) > run_length(n - 1) + run_length(n)` (true for `n < 2`).
    fn invariant_holds(&self, n: usize) -> bool {
        n < 2 || self.run_len(n - 2) > self.run_len(n - 1) + self.run_len(n)
    }

    fn merge_collapse(&mut self, v: &mut [T], less: &mut impl FnMut(&T, &T) -> bool) {
        while self.runs.len() > 1 {
            let mut n = self.runs.len() - 2;
            if !self.invariant_holds(n + 1) || !self.invariant_holds(n) {
                if n > 0 && self.run_len(n - 1) < self.run_len(n + 1) {
                    n -= 1;
                }
                self.merge_at(v, n, less);
            } else if self.run_len(n) <= self.run_len(n + 1) {
                self.merge_at(v, n, less);
            } else {
                break;
            }
        }
    }

    fn merge_force_collapse(&mut self, v: &mut [T], less: &mut impl FnMut(&T, &T) -> bool) {
        while self.runs.len() > 1 {
            let mut n = self.runs.len() - 2;
            if n > 0 && self.run_len(n - 1) < self.run_len(n + 1) {
                n -= 1;
            }
            self.merge_at(v, n, less);
        }
    }

    /// Merges the runs at stack positions `i` and `i + 1`.
    fn merge_at(&mut self, v: &mut [T], i: usize, less: &mut impl FnMut(&T, &T) -> bool) {
        let (mut base_a, mut len_a) = self.runs[i];
        let (base_b, mut len_b) = self.runs[i + 1];
        self.runs[i].1 = len_a + len_b;
        self.runs.remove(i + 1);

        // Elements of A before where B's first belongs are already in place.
        let k = gallop_right(v, &v[base_b], base_a, len_a, 0, less);
        base_a += k;
        len_a -= k;
        if len_a == 0 {
            return;
        }
        // Elements of B after where A's last belongs are already in place.
        len_b = gallop_left(v, &v[base_a + len_a - 1], base_b, len_b, len_b - 1, less);
        if len_b == 0 {
            return;
        }
        if len_a <= len_b {
            self.merge_low(v, base_a, len_a, base_b, len_b, less);
        } else {
            self.merge_high(v, base_a, len_a, base_b, len_b, less);
        }
    }

    /// Merges `v[base_a..][..len_a]` and the following `len_b` elements front to back,
    /// buffering A (`len_a <= len_b`).
    fn merge_low(
        &mut self,
        v: &mut [T],
        base_a: usize,
        mut len_a: usize,
        base_b: usize,
        mut len_b: usize,
        less: &mut impl FnMut(&T, &T) -> bool,
    ) {
        self.tmp.clear();
        self.tmp.extend_from_slice(&v[base_a..base_a + len_a]);
        let tmp = std::mem::take(&mut self.tmp);
        let (mut dest, mut cur_tmp, mut cur_b) = (base_a, 0, base_b);
        v[dest] = v[cur_b].clone();
        dest += 1;
        cur_b += 1;
        len_b -= 1;
        let end = 'merge: {
            if len_b == 0 {
                break 'merge End::Succeed;
            }
            if len_a == 1 {
                break 'merge End::CopyRest;
            }
            let mut min_gallop = self.min_gallop;
            loop {
                let (mut wins_a, mut wins_b) = (0, 0);
                // One at a time until one run wins min_gallop times in a row.
                loop {
                    if less(&v[cur_b], &tmp[cur_tmp]) {
                        v[dest] = v[cur_b].clone();
                        dest += 1;
                        cur_b += 1;
                        wins_b += 1;
                        len_b -= 1;
                        wins_a = 0;
                        if len_b == 0 {
                            break 'merge End::Succeed;
                        }
                        if wins_b >= min_gallop {
                            break;
                        }
                    } else {
                        v[dest] = tmp[cur_tmp].clone();
                        dest += 1;
                        cur_tmp += 1;
                        wins_a += 1;
                        len_a -= 1;
                        wins_b = 0;
                        if len_a == 1 {
                            break 'merge End::CopyRest;
                        }
                        if wins_a >= min_gallop {
                            break;
                        }
                    }
                }
                // Gallop while either run keeps winning by MIN_GALLOP_WINS.
                min_gallop += 1;
                let mut first = true;
                while wins_a >= MIN_GALLOP_WINS || wins_b >= MIN_GALLOP_WINS || first {
                    first = false;
                    min_gallop = min_gallop.saturating_sub(1).max(1);
                    self.min_gallop = min_gallop;

                    wins_a = gallop_right(&tmp, &v[cur_b], cur_tmp, len_a, 0, less);
                    if wins_a > 0 {
                        v[dest..dest + wins_a].clone_from_slice(&tmp[cur_tmp..cur_tmp + wins_a]);
                        dest += wins_a;
                        cur_tmp += wins_a;
                        len_a -= wins_a;
                        if len_a == 1 {
                            break 'merge End::CopyRest;
                        }
                        // Possible with an inconsistent comparator.
                        if len_a == 0 {
                            break 'merge End::Succeed;
                        }
                    }
                    v[dest] = v[cur_b].clone();
                    dest += 1;
                    cur_b += 1;
                    len_b -= 1;
                    if len_b == 0 {
                        break 'merge End::Succeed;
                    }

                    wins_b = gallop_left(v, &tmp[cur_tmp], cur_b, len_b, 0, less);
                    if wins_b > 0 {
                        // Forward copy within v: dest < cur_b, so this is safe.
                        for k in 0..wins_b {
                            v[dest + k] = v[cur_b + k].clone();
                        }
                        dest += wins_b;
                        cur_b += wins_b;
                        len_b -= wins_b;
                        if len_b == 0 {
                            break 'merge End::Succeed;
                        }
                    }
                    v[dest] = tmp[cur_tmp].clone();
                    dest += 1;
                    cur_tmp += 1;
                    len_a -= 1;
                    if len_a == 1 {
                        break 'merge End::CopyRest;
                    }
                }
                // Penalise leaving galloping mode.
                min_gallop += 1;
                self.min_gallop = min_gallop;
            }
        };
        match end {
            End::Succeed => {
                if len_a > 0 {
                    v[dest..dest + len_a].clone_from_slice(&tmp[cur_tmp..cur_tmp + len_a]);
                }
            }
            End::CopyRest => {
                for k in 0..len_b {
                    v[dest + k] = v[cur_b + k].clone();
                }
                v[dest + len_b] = tmp[cur_tmp].clone();
            }
        }
        self.tmp = tmp;
    }

    /// Merges `v[base_a..][..len_a]` and the following `len_b` elements back to front,
    /// buffering B (`len_a > len_b`).
    ///
    /// The mirror of [`Self::merge_low`], kept as a second function as V8 keeps
    /// `MergeLow` / `MergeHigh`: the order of comparisons and gallop-threshold updates
    /// is what the byte-for-byte parity tests pin, and a shared generic walk would
    /// have to reproduce both index directions exactly.
    fn merge_high(
        &mut self,
        v: &mut [T],
        base_a: usize,
        mut len_a: usize,
        base_b: usize,
        mut len_b: usize,
        less: &mut impl FnMut(&T, &T) -> bool,
    ) {
        self.tmp.clear();
        self.tmp.extend_from_slice(&v[base_b..base_b + len_b]);
        let tmp = std::mem::take(&mut self.tmp);
        // Cursors count one past their element so they never go below zero:
        // `dest` is V8's `dest + 1`, `cur_tmp` its `cursorTemp + 1`, `cur_a` its
        // `cursorA + 1`.
        let (mut dest, mut cur_tmp, mut cur_a) = (base_b + len_b, len_b, base_a + len_a);
        v[dest - 1] = v[cur_a - 1].clone();
        dest -= 1;
        cur_a -= 1;
        len_a -= 1;
        let end = 'merge: {
            if len_a == 0 {
                break 'merge End::Succeed;
            }
            if len_b == 1 {
                break 'merge End::CopyRest;
            }
            let mut min_gallop = self.min_gallop;
            loop {
                let (mut wins_a, mut wins_b) = (0, 0);
                loop {
                    if less(&tmp[cur_tmp - 1], &v[cur_a - 1]) {
                        v[dest - 1] = v[cur_a - 1].clone();
                        dest -= 1;
                        cur_a -= 1;
                        wins_a += 1;
                        len_a -= 1;
                        wins_b = 0;
                        if len_a == 0 {
                            break 'merge End::Succeed;
                        }
                        if wins_a >= min_gallop {
                            break;
                        }
                    } else {
                        v[dest - 1] = tmp[cur_tmp - 1].clone();
                        dest -= 1;
                        cur_tmp -= 1;
                        wins_b += 1;
                        len_b -= 1;
                        wins_a = 0;
                        if len_b == 1 {
                            break 'merge End::CopyRest;
                        }
                        if wins_b >= min_gallop {
                            break;
                        }
                    }
                }
                min_gallop += 1;
                let mut first = true;
                while wins_a >= MIN_GALLOP_WINS || wins_b >= MIN_GALLOP_WINS || first {
                    first = false;
                    min_gallop = min_gallop.saturating_sub(1).max(1);
                    self.min_gallop = min_gallop;

                    let k = gallop_right(v, &tmp[cur_tmp - 1], base_a, len_a, len_a - 1, less);
                    wins_a = len_a - k;
                    if wins_a > 0 {
                        dest -= wins_a;
                        cur_a -= wins_a;
                        // Backward copy within v: dest > cur_a.
                        for k in (0..wins_a).rev() {
                            v[dest + k] = v[cur_a + k].clone();
                        }
                        len_a -= wins_a;
                        if len_a == 0 {
                            break 'merge End::Succeed;
                        }
                    }
                    v[dest - 1] = tmp[cur_tmp - 1].clone();
                    dest -= 1;
                    cur_tmp -= 1;
                    len_b -= 1;
                    if len_b == 1 {
                        break 'merge End::CopyRest;
                    }

                    let k = gallop_left(&tmp, &v[cur_a - 1], 0, len_b, len_b - 1, less);
                    wins_b = len_b - k;
                    if wins_b > 0 {
                        dest -= wins_b;
                        cur_tmp -= wins_b;
                        v[dest..dest + wins_b].clone_from_slice(&tmp[cur_tmp..cur_tmp + wins_b]);
                        len_b -= wins_b;
                        if len_b == 1 {
                            break 'merge End::CopyRest;
                        }
                        // Possible with an inconsistent comparator.
                        if len_b == 0 {
                            break 'merge End::Succeed;
                        }
                    }
                    v[dest - 1] = v[cur_a - 1].clone();
                    dest -= 1;
                    cur_a -= 1;
                    len_a -= 1;
                    if len_a == 0 {
                        break 'merge End::Succeed;
                    }
                }
                min_gallop += 1;
                self.min_gallop = min_gallop;
            }
        };
        match end {
            End::Succeed => {
                if len_b > 0 {
                    v[dest - len_b..dest].clone_from_slice(&tmp[..len_b]);
                }
            }
            End::CopyRest => {
                // The first element of B belongs before what is left of A.
                dest -= len_a;
                cur_a -= len_a;
                for k in (0..len_a).rev() {
                    v[dest + k] = v[cur_a + k].clone();
                }
                v[dest - 1] = tmp[cur_tmp - 1].clone();
            }
        }
        self.tmp = tmp;
    }
}
