//! Slurm's allocator (xmalloc, xstrdup, xfree) and C strings lent or copied.

use std::ffi::{c_char, CStr, CString};
use std::ptr;

use super::super::bindings as b;
use super::super::call::Call;

/// Copies `s` into memory from Slurm's allocator, which the caller frees with `xfree`.
pub fn xstrdup(s: &str) -> *mut c_char {
    let c = CString::new(s.replace('\0', " ")).unwrap_or_default();
    // SAFETY: c is a valid NUL-terminated string; xstrdup copies it.
    unsafe { b::slurm_xstrdup(c.as_ptr()) }
}

/// Frees memory that Slurm's allocator returned (xmalloc/xstrdup).
///
/// # Safety
/// `p` must be NULL or come from Slurm's allocator and not be used afterwards.
pub unsafe fn xfree(p: *mut c_char) {
    let mut p = p.cast::<std::ffi::c_void>();
    // SAFETY: per the contract above; slurm_xfree takes the address of the pointer.
    unsafe { b::slurm_xfree(&mut p) };
}

/// Allocates zeroed memory for `T` with Slurm's allocator (the caller frees with xfree).
pub fn xmalloc<T>() -> *mut T {
    // SAFETY: xcalloc(1, size, clear=true, try=false) aborts on OOM and never returns NULL.
    unsafe {
        b::slurm_xcalloc(
            1,
            std::mem::size_of::<T>(),
            true,
            false,
            c"topology_nvl72".as_ptr(),
            0,
            c"xmalloc".as_ptr(),
        )
        .cast()
    }
}

#[cfg(slurm_eval_action)]
/// Allocates `n` zeroed `T`s with Slurm's allocator (the caller frees with xfree).
pub fn xmalloc_array<T>(n: usize) -> *mut T {
    // SAFETY: xcalloc(n, size, clear=true, try=false) aborts on OOM and never returns NULL.
    unsafe {
        b::slurm_xcalloc(
            n.max(1),
            std::mem::size_of::<T>(),
            true,
            false,
            c"topology_nvl72".as_ptr(),
            0,
            c"xmalloc_array".as_ptr(),
        )
        .cast()
    }
}

/// Borrows a C string argument for the rest of the call.
///
/// # Safety
/// `p` must be NULL or a NUL-terminated string valid for the whole of `call`.
pub unsafe fn str_arg<'c>(_call: &Call<'c>, p: *const c_char) -> Option<&'c str> {
    // SAFETY: per the contract above.
    unsafe { borrowed_str(p) }
}

/// Borrows a C string for `'a` (None for NULL or invalid UTF-8).
///
/// # Safety
/// `p` must be NULL or a NUL-terminated string that stays valid and unchanged for `'a`.
pub unsafe fn borrowed_str<'a>(p: *const c_char) -> Option<&'a str> {
    if p.is_null() {
        None
    } else {
        // SAFETY: per the contract above.
        unsafe { CStr::from_ptr(p) }.to_str().ok()
    }
}

/// Copies a C string (for strings the caller frees or Slurm may replace later).
///
/// # Safety
/// `p` must be NULL or a valid NUL-terminated string.
pub unsafe fn owned_str(p: *const c_char) -> Option<String> {
    // SAFETY: per the contract above; the bytes are copied before returning.
    (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

pub fn null<T>() -> *mut T {
    ptr::null_mut()
}
