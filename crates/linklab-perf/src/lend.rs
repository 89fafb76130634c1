//! Memory lent to sockets and taken back: a fixed set of slices, each lent whole to one
//! socket at a time. A stack's socket keeps the buffers it was made with for its whole life
//! and gives no way to take them back, so the slices are kept as pointers and lent again only
//! after the socket that had them was dropped (the caller's promise, [`Lender::give_back`]).
//! This is what lets the iperf3 server's data sockets and its UDP socket share one memory
//! (they never carry a test at the same time), and keeps the data sockets' windows free
//! between tests.

use core::marker::PhantomData;
use core::ptr::NonNull;

/// Up to `K` slices of `T`, each lent whole (see the module docs).
pub struct Lender<'a, T, const K: usize> {
    slices: heapless::Vec<(NonNull<T>, usize), K>,
    lent: [bool; K],
    _borrow: PhantomData<&'a mut [T]>,
}

impl<'a, T, const K: usize> Lender<'a, T, K> {
    /// Takes `slices` (the first `K`; more are left unused) to lend them out.
    pub fn new(slices: impl IntoIterator<Item = &'a mut [T]>) -> Self {
        let mut kept = heapless::Vec::new();
        for s in slices {
            let len = s.len();
            if kept.push((NonNull::from(s).cast::<T>(), len)).is_err() {
                break;
            }
        }
        Lender {
            slices: kept,
            lent: [false; K],
            _borrow: PhantomData,
        }
    }

    /// Slices held (lent or not).
    pub fn len(&self) -> usize {
        self.slices.len()
    }

    /// True when it holds no slice.
    pub fn is_empty(&self) -> bool {
        self.slices.is_empty()
    }

    /// Lends the first free slice: its index (for [`give_back`](Self::give_back)) and the
    /// slice; None when all are lent.
    pub fn lend(&mut self) -> Option<(usize, &'a mut [T])> {
        let i = (0..self.slices.len()).find(|&i| !self.lent[i])?;
        self.lent[i] = true;
        let (ptr, len) = self.slices[i];
        // SAFETY: the pointer and length came from a `&'a mut [T]` taken by `new`, whose
        // borrow this lender holds for 'a; slice `i` was not lent (or was given back, whose
        // contract says nothing uses it any more), so this is the only reference to it.
        Some((i, unsafe {
            core::slice::from_raw_parts_mut(ptr.as_ptr(), len)
        }))
    }

    /// Lends slice `i` (lent) again: for a socket made anew over it. None when `i` is not lent.
    ///
    /// # Safety
    /// As [`give_back`](Self::give_back): nothing uses the slice lent as `i` any more.
    pub unsafe fn lend_again(&mut self, i: usize) -> Option<&'a mut [T]> {
        if !self.lent.get(i).copied().unwrap_or(false) {
            return None;
        }
        let (ptr, len) = self.slices[i];
        // SAFETY: as in `lend`; the caller's promise makes this the only reference to it.
        Some(unsafe { core::slice::from_raw_parts_mut(ptr.as_ptr(), len) })
    }

    /// Takes slice `i` back; it may be lent again.
    ///
    /// # Safety
    /// Nothing may use the slice lent as `i` any more: the socket it was given to has been
    /// dropped (removed from its socket set and not kept), and no other reference to it
    /// remains.
    pub unsafe fn give_back(&mut self, i: usize) {
        if let Some(l) = self.lent.get_mut(i) {
            *l = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_slice_is_lent_once_until_given_back() {
        let mut a = [1u8; 4];
        let mut b = [2u8; 8];
        let mut l: Lender<'_, u8, 2> = Lender::new([&mut a[..], &mut b[..]]);
        assert_eq!(l.len(), 2);
        let (i, s) = l.lend().unwrap();
        assert_eq!((i, s.len(), s[0]), (0, 4, 1));
        s[0] = 9;
        let (j, t) = l.lend().unwrap();
        assert_eq!((j, t.len()), (1, 8));
        assert!(l.lend().is_none());
        // SAFETY: `s` is not used after this.
        unsafe { l.give_back(i) };
        let (k, s2) = l.lend().unwrap();
        assert_eq!((k, s2[0]), (0, 9));
        // SAFETY: `s2` is not used after this.
        let s3 = unsafe { l.lend_again(k) }.unwrap();
        assert_eq!((s3.len(), s3[0]), (4, 9));
        // SAFETY: `s3` is not used after this.
        unsafe { l.give_back(k) };
        // SAFETY: nothing is lent as `k` (or as 5, which is not held).
        assert!(unsafe { l.lend_again(k) }.is_none() && unsafe { l.lend_again(5) }.is_none());
    }
}
