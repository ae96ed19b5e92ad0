//! The newest pages of one CPU's trace, kept in memory handed in, and the
//! windows of spikes cut from them.

use super::{Decoder, Missed, Page, PageHeader};
use crate::explain::{Attribution, Classifier, EventKind, Loss, Window};
use crate::Error;

/// The newest pages a reader copied out of one CPU's `trace_pipe_raw`,
/// oldest dropped first, in a store of whole pages handed in (a `Vec` or
/// a static array; its length fixes how many). One slot is always free:
/// the reader reads the next page straight into it ([`History::slot`])
/// and keeps it ([`History::keep`]) without touching a page held.
///
/// A spike's window is explained from the pages that cover it
/// ([`History::explain`]), and what they cannot say is told apart: the
/// kernel's losses as its pages flag them, and what is older than the
/// oldest page held.
///
/// ```
/// use latscope_core::ringbuf::{History, PageHeader};
/// let mut h = History::new([0u8; 3 * 4096], PageHeader::LONG_8, 4096).unwrap();
/// for ts in [10u64, 20, 30] {
///     h.slot()[..8].copy_from_slice(&ts.to_le_bytes());
///     h.keep(4096);
/// }
/// // two slots hold pages, one is the next read's: the oldest went
/// assert_eq!((h.len(), h.dropped(), h.oldest_ns()), (2, 1, Some(20)));
/// ```
#[derive(Debug, Clone)]
pub struct History<S> {
    store: S,
    header: PageHeader,
    page_size: usize,
    /// Slots in the store; one is always free.
    slots: usize,
    /// The free slot, where the next page goes.
    next: usize,
    /// Pages held.
    len: usize,
    /// Pages dropped to make room for newer ones.
    dropped: u64,
    /// Pages kept since the start.
    kept: u64,
}

impl<S: AsRef<[u8]> + AsMut<[u8]>> History<S> {
    /// A history of pages of `page_size` bytes, laid out as `header` says,
    /// in `store` (its length rounded down to whole pages).
    ///
    /// # Errors
    ///
    /// [`Error::BadTraceFormat`] if a page cannot hold its own header, or
    /// the store fewer than two pages.
    pub fn new(store: S, header: PageHeader, page_size: usize) -> Result<Self, Error> {
        if page_size < usize::from(header.data) + 8 {
            return Err(Error::BadTraceFormat("page smaller than its header"));
        }
        let slots = store.as_ref().len() / page_size;
        if slots < 2 {
            return Err(Error::BadTraceFormat(
                "trace history of fewer than two pages",
            ));
        }
        Ok(Self {
            store,
            header,
            page_size,
            slots,
            next: 0,
            len: 0,
            dropped: 0,
            kept: 0,
        })
    }

    /// The free slot: read the next page into it, then
    /// [`History::keep`] it. Nothing held is in it.
    pub fn slot(&mut self) -> &mut [u8] {
        let at = self.next * self.page_size;
        &mut self.store.as_mut()[at..at + self.page_size]
    }

    /// Keeps the page just read into [`History::slot`], `len` bytes of it
    /// (the rest is cleared; 0 keeps nothing). When the history is full,
    /// the oldest page is dropped.
    pub fn keep(&mut self, len: usize) {
        if len == 0 {
            return;
        }
        let len = len.min(self.page_size);
        self.slot()[len..].fill(0);
        self.next = (self.next + 1) % self.slots;
        self.kept += 1;
        if self.len == self.slots - 1 {
            self.dropped += 1;
        } else {
            self.len += 1;
        }
    }

    /// Pages held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True if no page is held.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Most pages it holds.
    pub fn capacity(&self) -> usize {
        self.slots - 1
    }

    /// Pages dropped for newer ones.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Pages kept since the start.
    pub fn kept(&self) -> u64 {
        self.kept
    }

    /// The `i`-th oldest page held.
    fn page(&self, i: usize) -> &[u8] {
        let slot = (self.next + self.slots - self.len + i) % self.slots;
        let at = slot * self.page_size;
        &self.store.as_ref()[at..at + self.page_size]
    }

    /// The timestamp of the `i`-th oldest page held.
    fn page_ns(&self, i: usize) -> u64 {
        let at = usize::from(self.header.timestamp);
        super::read_le(self.page(i), at, 8).unwrap_or(0)
    }

    /// The oldest page's timestamp.
    pub fn oldest_ns(&self) -> Option<u64> {
        (self.len > 0).then(|| self.page_ns(0))
    }

    /// The newest page's timestamp.
    pub fn newest_ns(&self) -> Option<u64> {
        self.len.checked_sub(1).map(|i| self.page_ns(i))
    }

    /// Whether the history may still hold a window from `deadline_ns` on:
    /// nothing was dropped yet, or the oldest page began by then.
    pub fn may_hold(&self, deadline_ns: u64) -> bool {
        self.dropped == 0 || self.oldest_ns().is_some_and(|o| o <= deadline_ns)
    }

    /// The page to start decoding a window at `deadline_ns` from: the one
    /// before the page the deadline falls in (what ran before it names
    /// the tasks), or the oldest. Also whether the history begins after
    /// the deadline.
    fn start(&self, deadline_ns: u64) -> (usize, bool) {
        // the pages beginning at or before the deadline (timestamps grow)
        let (mut lo, mut hi) = (0, self.len);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.page_ns(mid) <= deadline_ns {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        (lo.saturating_sub(2), lo == 0)
    }

    /// The pages held that cover `from_ns` to `to_ns`, oldest first: from
    /// the one before the page `from_ns` falls in (as
    /// [`History::explain`] begins) to the last page that begins by
    /// `to_ns`, at most `most` (the newest kept). A spike's window as
    /// evidence (a trace.dat).
    pub fn window(&self, from_ns: u64, to_ns: u64, most: usize) -> impl Iterator<Item = &[u8]> {
        let (start, _) = self.start(from_ns);
        let end = (start..self.len)
            .find(|&i| self.page_ns(i) > to_ns)
            .unwrap_or(self.len);
        let start = start.max(end.saturating_sub(most));
        (start..end).map(move |i| self.page(i))
    }

    /// Explains `window` (of this history's CPU) from the pages that cover
    /// it, decoding with `dec`. `recorded_to_ns` is when the reader last
    /// found the kernel's buffer empty: a wake-up before it with no event
    /// since the last one was untraced time, not time beyond the history.
    ///
    /// The kernel's losses come out as its pages flag them
    /// ([`Loss::Events`] or [`Loss::Unknown`]); the part of the window
    /// older than the oldest page, once pages were dropped, as
    /// [`Loss::Beyond`]. A page or an event that does not decode is a loss
    /// of unknown count, never a panic.
    pub fn explain(&self, dec: &mut Decoder, window: Window, recorded_to_ns: u64) -> Attribution {
        let mut c = Classifier::new(window);
        c.recorded_to(recorded_to_ns);
        let (start, after) = self.start(window.deadline_ns);
        if after && (self.dropped > 0 || self.len == 0) {
            c.lost(Loss::Beyond);
        }
        for i in start..self.len {
            let Ok(page) = Page::new(self.header, self.page(i)) else {
                c.lost(Loss::Unknown);
                continue;
            };
            match page.missed() {
                Missed::Nothing => {}
                Missed::Events(n) => c.lost(Loss::Events(n)),
                Missed::Unknown => c.lost(Loss::Unknown),
            }
            for raw in page.events() {
                let decoded = raw.and_then(|r| dec.decode(window.cpu, &r).map(|e| c.feed(&e)));
                if decoded.is_err() {
                    c.lost(Loss::Unknown);
                }
            }
            if c.done() {
                break;
            }
        }
        c.finish()
    }

    /// Whether thread `tid` was switched in on this history's CPU `cpu`
    /// between `from_ns` and `to_ns`: the CPU an unpinned thread woke on.
    pub fn switched_in(
        &self,
        dec: &mut Decoder,
        cpu: u32,
        tid: u32,
        from_ns: u64,
        to_ns: u64,
    ) -> bool {
        let (start, _) = self.start(from_ns);
        for i in start..self.len {
            let Ok(page) = Page::new(self.header, self.page(i)) else {
                continue;
            };
            for raw in page.events().flatten() {
                if raw.ts_ns > to_ns {
                    return false;
                }
                let Ok(e) = dec.decode(cpu, &raw) else {
                    continue;
                };
                if raw.ts_ns >= from_ns
                    && matches!(e.kind, EventKind::Switch { next, .. } if next.pid == tid)
                {
                    return true;
                }
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explain::{classify_text, CauseKind, Culprit, Untraced};
    use crate::ringbuf::EventFormats;
    use std::vec::Vec;

    const PAGES: &[u8] = include_bytes!("fixtures/x86_64-6.18/cpu0.pages");
    const TEXT: &str = include_str!("fixtures/x86_64-6.18/cpu0.trace");

    fn decoder() -> Decoder {
        let mut f = EventFormats::new();
        for text in super::super::tests::FIXTURE_FORMATS {
            assert_eq!(f.add(text), Ok(true));
        }
        Decoder::new(f)
    }

    /// The fixture's pages in a history of `slots` slots.
    fn history(slots: usize) -> History<Vec<u8>> {
        let mut h = History::new(std::vec![0u8; slots * 4096], PageHeader::LONG_8, 4096).unwrap();
        for p in PAGES.chunks(4096) {
            h.slot().copy_from_slice(p);
            h.keep(p.len());
        }
        h
    }

    /// Every event's time of the fixture, in order.
    fn times() -> Vec<u64> {
        let mut dec = decoder();
        let mut t = Vec::new();
        for p in PAGES.chunks(4096) {
            for raw in Page::new(PageHeader::LONG_8, p).unwrap().events() {
                let raw = raw.unwrap();
                dec.decode(0, &raw).unwrap();
                t.push(raw.ts_ns);
            }
        }
        t
    }

    fn window(deadline_ns: u64, wake_ns: u64) -> Window {
        Window {
            cpu: 0,
            cycle: 1,
            deadline_ns,
            wake_ns,
            pid: 0,
        }
    }

    #[test]
    fn a_windows_pages_cover_it_and_no_more_than_asked() {
        let t = times();
        let h = history(8);
        let page_of = |p: &[u8]| PAGES.chunks(4096).position(|q| q == p).unwrap();
        let pages = |a: u64, b: u64, most| h.window(a, b, most).map(page_of).collect::<Vec<_>>();
        let last = *t.last().unwrap();
        assert_eq!(pages(t[0], last, 8), [0, 1, 2]);
        // before the first page: from the oldest
        assert_eq!(pages(0, t[0], 8), [0]);
        // the newest page alone, when only one may go
        assert_eq!(pages(t[0], last, 1), [2]);
        // a window in the last page starts a page before it, as explain does
        assert_eq!(pages(last, last, 8), [1, 2]);
        // a window before everything held is empty past its first page
        assert!(pages(0, 0, 8).len() <= 1);
    }

    #[test]
    fn a_window_from_pages_says_what_the_kernels_text_says() {
        let t = times();
        let h = history(8);
        assert_eq!((h.len(), h.dropped()), (3, 0));
        // windows across the pages' seams, each from one event to another
        for (a, b) in [(5, 60), (40, 120), (100, 169), (0, 169)] {
            let w = window(t[a], t[b]);
            let from_pages = h.explain(&mut decoder(), w, t[b]);
            // the text's times are rounded to the microsecond: a window on
            // the same microseconds
            let us = |ns: u64| (ns + 500) / 1000 * 1000;
            let from_text = classify_text(&window(us(t[a]), us(t[b])), TEXT);
            assert_eq!(from_pages.total_ns(), from_pages.latency_ns);
            assert_eq!(
                from_pages.causes.len(),
                from_text.causes.len(),
                "window {a}..{b}: {from_pages:?} vs {from_text:?}"
            );
            for p in &from_pages.causes {
                let x = from_text
                    .causes
                    .iter()
                    .find(|x| x.culprit.same(&p.culprit) && x.label() == p.label())
                    .unwrap_or_else(|| panic!("{p:?} not in {from_text:?}"));
                assert_eq!(p.count, x.count, "{p:?} vs {x:?}");
                let slack = 2_000 * u64::from(p.count.max(1));
                assert!(p.ns.abs_diff(x.ns) <= slack, "{p:?} vs {x:?}");
            }
        }
    }

    #[test]
    fn what_the_kernel_lost_before_a_page_is_counted_as_it_stored_it() {
        // the first page stores 139 events lost before it
        let t = times();
        let h = history(8);
        let w = window(t[0] - 50_000, t[10]);
        let a = h.explain(&mut decoder(), w, t[10]);
        let lost = a
            .find(CauseKind::Untraced, "trace lost")
            .expect("lost line");
        assert_eq!(
            (&lost.culprit, lost.count, lost.ns),
            (
                &Culprit::Untraced(Untraced::Lost { events: 139 }),
                1,
                50_000
            )
        );
        assert!(a.partial);
        assert_eq!(a.total_ns(), a.latency_ns);
    }

    #[test]
    fn a_window_older_than_the_pages_held_is_beyond_the_history() {
        let t = times();
        // two slots: one page held, the two before it dropped
        let h = history(2);
        assert_eq!((h.len(), h.dropped()), (1, 2));
        let first = h.oldest_ns().unwrap();
        let w = window(t[0], t[169]);
        assert!(!h.may_hold(w.deadline_ns));
        let a = h.explain(&mut decoder(), w, t[169]);
        let beyond = a
            .find(CauseKind::Untraced, "beyond latscope's history")
            .unwrap();
        assert_eq!(beyond.culprit, Culprit::Untraced(Untraced::Beyond));
        // from the deadline to the held page's first event
        let first_event = Page::new(PageHeader::LONG_8, h.page(0))
            .unwrap()
            .events()
            .next()
            .unwrap()
            .unwrap()
            .ts_ns;
        assert!(first_event >= first);
        assert_eq!(beyond.ns, first_event - t[0]);
        assert!(h.may_hold(first));
    }

    #[test]
    fn after_the_last_event_it_is_untraced_if_recorded_else_beyond() {
        let t = times();
        let h = history(8);
        let w = window(t[160], t[169] + 80_000);
        let seen = h.explain(&mut decoder(), w, t[169] + 100_000);
        let unseen = h.explain(&mut decoder(), w, 0);
        let ns_of = |a: &Attribution, why: Untraced| {
            a.causes
                .iter()
                .filter(|c| c.culprit == Culprit::Untraced(why))
                .map(|c| c.ns)
                .sum::<u64>()
        };
        // not read: the tail is beyond the history, the rest as it was
        assert_eq!(ns_of(&unseen, Untraced::Beyond), 80_000);
        assert_eq!(ns_of(&seen, Untraced::Beyond), 0);
        // read, and nothing came: untraced (or the thread's own way out)
        let off = ns_of(&unseen, Untraced::Off);
        assert!(
            ns_of(&seen, Untraced::Off) == off + 80_000
                || seen.causes.iter().any(|c| c.kind() == CauseKind::Task),
            "{seen:?}"
        );
        assert_eq!(seen.total_ns(), seen.latency_ns);
        assert_eq!(unseen.total_ns(), unseen.latency_ns);
    }

    #[test]
    fn a_corrupt_page_is_a_loss_of_unknown_count_not_a_panic() {
        let t = times();
        let mut h = history(8);
        // the middle page's commit word past its end
        let mut bad = PAGES[4096..8192].to_vec();
        bad[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
        let mut h2 = History::new(std::vec![0u8; 8 * 4096], PageHeader::LONG_8, 4096).unwrap();
        for p in [&PAGES[..4096], &bad[..], &PAGES[8192..]] {
            h2.slot().copy_from_slice(p);
            h2.keep(4096);
        }
        let w = window(t[5], t[169]);
        let a = h2.explain(&mut decoder(), w, t[169]);
        assert!(a
            .find(CauseKind::Untraced, "trace lost (count unknown)")
            .is_some());
        assert_eq!(a.total_ns(), a.latency_ns);
        // an empty slot kept is nothing
        h.keep(0);
        assert_eq!(h.len(), 3);
    }

    #[test]
    fn an_unpinned_thread_is_found_where_it_was_switched_in() {
        let h = history(8);
        let mut dec = decoder();
        // the first switch of the fixture, and who came in
        let mut found = None;
        'pages: for p in PAGES.chunks(4096) {
            for raw in Page::new(PageHeader::LONG_8, p).unwrap().events() {
                let raw = raw.unwrap();
                if let EventKind::Switch { next, .. } = dec.decode(0, &raw).unwrap().kind {
                    if next.pid != 0 {
                        found = Some((next.pid, raw.ts_ns));
                        break 'pages;
                    }
                }
            }
        }
        let (pid, ts) = found.expect("a switch in the fixture");
        assert!(h.switched_in(&mut decoder(), 0, pid, ts - 10, ts + 10));
        assert!(!h.switched_in(&mut decoder(), 0, pid, ts + 1, ts + 2));
        assert!(!h.switched_in(&mut decoder(), 0, u32::MAX, 0, u64::MAX));
    }

    #[test]
    fn too_small_a_store_or_page_is_refused() {
        assert!(History::new([0u8; 4096], PageHeader::LONG_8, 4096).is_err());
        assert!(History::new([0u8; 8192], PageHeader::LONG_8, 16).is_err());
    }
}
