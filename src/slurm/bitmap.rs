//! Slurm bitmaps: the owned `Bitmap` (freed on drop) and `BitmapRef<'c>`, borrowed for one call.

use std::marker::PhantomData;
use std::ptr::NonNull;

use super::super::bindings as b;
use super::super::call::Call;

/// An owned Slurm bitmap (`bit_alloc`), freed with `bit_free`.
pub struct Bitmap(*mut b::bitstr_t);

// SAFETY: the bitmap is exclusively owned, so moving it to another thread moves sole access.
unsafe impl Send for Bitmap {}
// SAFETY: after construction the plugin only reads a shared bitmap, and Slurm's bit_*
// readers do not mutate shared state.
unsafe impl Sync for Bitmap {}

impl Bitmap {
    /// # Safety
    /// `raw` must be a valid Slurm bitmap.
    pub unsafe fn copy_of(raw: *mut b::bitstr_t) -> Bitmap {
        // SAFETY: bit_copy duplicates a valid bitmap (it aborts on OOM, never returns NULL).
        Bitmap(unsafe { b::slurm_bit_copy(raw) })
    }

    pub fn with_bits(size: usize, bits: impl IntoIterator<Item = usize>) -> Bitmap {
        // SAFETY: bit_alloc returns a zeroed bitmap of `size` bits (it aborts on OOM).
        let raw = unsafe { b::slurm_bit_alloc(size as b::bitoff_t) };
        let map = Bitmap(raw);
        for i in bits.into_iter().filter(|&i| i < size) {
            // SAFETY: i < size, the allocated length.
            unsafe { b::slurm_bit_set(raw, i as b::bitoff_t) };
        }
        map
    }

    pub fn as_ptr(&self) -> *mut b::bitstr_t {
        self.0
    }

    pub fn len(&self) -> usize {
        // SAFETY: an owned, valid bitmap.
        unsafe { b::slurm_bit_size(self.0) as usize }
    }

    /// Becomes `now` when `now` holds no bit this map lacks (same size), and returns the
    /// bits that were dropped; else `None` and nothing changes. Slurm's retry loop only
    /// drops nodes between the callbacks of one evaluation: this finds which, word by word.
    pub fn shrink_to(&mut self, now: BitmapRef<'_>) -> Option<Vec<usize>> {
        if self.len() != now.len() {
            return None;
        }
        // SAFETY: both valid and of the same size; bit_super_set only reads.
        if unsafe { b::slurm_bit_super_set(now.as_ptr(), self.0) } == 0 {
            return None;
        }
        let left = now.to_owned();
        // SAFETY: `left` and self are owned, valid and of the same size as `now`: bit_not
        // and bit_and write only them (self becomes self and not `now`).
        unsafe {
            b::slurm_bit_not(left.0);
            b::slurm_bit_and(self.0, left.0);
        }
        // SAFETY: self is a valid bitmap.
        let dropped = unsafe { ones_of(self.0) };
        // SAFETY: same size, self owned: bit_copybits writes only self.
        unsafe { b::slurm_bit_copybits(self.0, now.as_ptr()) };
        Some(dropped)
    }
}

/// The set bits of `raw`, in order.
///
/// # Safety
/// `raw` must be a valid Slurm bitmap no longer than the node table (`next_node_bitmap`
/// reads node records for the bits it returns).
unsafe fn ones_of(raw: *mut b::bitstr_t) -> Vec<usize> {
    let mut out = Vec::new();
    let mut i: std::ffi::c_int = 0;
    // SAFETY: next_node_bitmap scans the valid bitmap from index i (updated in place) and
    // returns NULL at the end; it only reads the bitmap and the node table.
    while !unsafe { b::next_node_bitmap(raw, &mut i) }.is_null() {
        out.push(i as usize);
        i += 1;
    }
    out
}

impl Drop for Bitmap {
    fn drop(&mut self) {
        // SAFETY: self.0 came from bit_alloc and is freed exactly once.
        unsafe { b::slurm_bit_free(&mut self.0) };
    }
}

/// A Slurm bitmap we do not own, borrowed for one call from Slurm (`'c`, see [`Call`]).
#[derive(Clone, Copy)]
pub struct BitmapRef<'c> {
    raw: NonNull<b::bitstr_t>,
    _call: PhantomData<&'c Call<'c>>,
}

impl<'c> BitmapRef<'c> {
    /// # Safety
    /// `raw` must be NULL or a valid Slurm bitmap for the whole of `call`. The writing
    /// methods (`set`, `clear_all`, `or`) may only be used when the caller may write it and
    /// nothing else accesses it meanwhile (slurmctld's locks, for `node_map`).
    pub unsafe fn new(_call: &Call<'c>, raw: *mut b::bitstr_t) -> Option<BitmapRef<'c>> {
        NonNull::new(raw).map(|raw| BitmapRef {
            raw,
            _call: PhantomData,
        })
    }

    pub fn as_ptr(self) -> *mut b::bitstr_t {
        self.raw.as_ptr()
    }

    pub fn len(self) -> usize {
        // SAFETY: valid bitmap per the constructor's contract.
        unsafe { b::slurm_bit_size(self.as_ptr()) as usize }
    }

    /// Tests bits, with the size read once, for loops over many nodes.
    pub fn tester(self) -> impl Fn(usize) -> bool + 'c {
        let len = self.len();
        // SAFETY: bounds checked against bit_size, read once (the bitmap is not resized while
        // the caller holds it, per the constructor's contract).
        move |i| i < len && unsafe { b::slurm_bit_test(self.as_ptr(), i as b::bitoff_t) != 0 }
    }

    pub fn ones(self) -> Vec<usize> {
        // SAFETY: a valid bitmap per the constructor's contract; Slurm's node maps are as
        // long as the node table.
        unsafe { ones_of(self.as_ptr()) }
    }

    pub fn set(self, i: usize) {
        if i < self.len() {
            // SAFETY: bounds checked.
            unsafe { b::slurm_bit_set(self.as_ptr(), i as b::bitoff_t) };
        }
    }

    pub fn clear_all(self) {
        // SAFETY: valid bitmap.
        unsafe { b::slurm_bit_clear_all(self.as_ptr()) };
    }

    /// Copies every bit of `from`, which must have the same size (else nothing changes).
    pub fn copy_from(self, from: &Bitmap) {
        if self.len() != from.len() {
            log::warn!("node bitmap sizes differ; bitmap left unchanged");
            return;
        }
        // SAFETY: both valid and of the same size.
        unsafe { b::slurm_bit_copybits(self.as_ptr(), from.as_ptr()) };
    }

    /// A copy owned by the plugin (freed on drop).
    pub fn to_owned(self) -> Bitmap {
        // SAFETY: a valid bitmap per the constructor's contract.
        unsafe { Bitmap::copy_of(self.as_ptr()) }
    }

    /// ORs `other` in. Slurm's bit_or works over the smaller of the two sizes.
    pub fn or(self, other: &Bitmap) {
        if self.len() != other.len() {
            log::warn!("node bitmap sizes differ (node table changed since build_config)");
        }
        // SAFETY: both are valid Slurm bitmaps; bit_or never writes past the smaller size.
        unsafe { b::slurm_bit_or(self.as_ptr(), other.as_ptr()) };
    }

    /// False when the sizes differ: bit_overlap_any reads the second bitmap for the first
    /// one's size (its size check is compiled out with NDEBUG).
    pub fn overlaps(self, other: &Bitmap) -> bool {
        if self.len() != other.len() {
            log::warn!("node bitmap sizes differ (node table changed since build_config)");
            return false;
        }
        // SAFETY: both are valid Slurm bitmaps of the same size; bit_overlap_any only reads.
        unsafe { b::slurm_bit_overlap_any(self.as_ptr(), other.as_ptr()) != 0 }
    }
}
