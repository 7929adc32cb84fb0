//! One call from Slurm into the plugin, as a lifetime: what Slurm lends may not outlive it.

use std::marker::PhantomData;

/// One call from Slurm into the plugin. Pointers Slurm passes are valid only until the call
/// returns; `BitmapRef<'c>` and `&'c str` arguments borrow the `Call<'c>`, and `'c` is
/// chosen afresh for every call by `guard::guarded`, so nothing made from them can be stored.
pub struct Call<'c> {
    /// Invariant in `'c`: a `Call<'c>` cannot pass for a call that lives longer.
    _call: PhantomData<fn(&'c ()) -> &'c ()>,
}

impl Call<'_> {
    /// A new scope; only `guard::guarded` opens one, around each call from Slurm.
    pub(crate) fn new() -> Self {
        Call { _call: PhantomData }
    }
}
