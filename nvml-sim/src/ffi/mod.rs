//! NVML's C ABI: the `extern "C"` functions libnvidia-ml.so.1 exports,
//! each a thin shell that reads its arguments, asks the safe layer
//! (`node`, `device`, `mig`, `process`, `events`) and writes the answer
//! into the caller's memory. The only `unsafe` code of the crate: each
//! block turns one of the caller's pointers into a checked wrapper
//! ([`Out`], [`OutBuf`], [`OutSlice`], [`c_str`]) under NVML's contract
//! for that argument, stated in its `SAFETY` comment.
//!
//! Types and signatures are nvml-wrapper-sys 0.10.0's (NVML 13.0's
//! header); `signatures` checks every export against the crate's
//! function table at compile time. A panic never unwinds into C: [`guard`]
//! turns one into NVML's UNKNOWN. NULL where NVML wants a pointer is
//! INVALID_ARGUMENT.

mod device;
mod events;
mod export_table;
#[cfg(test)]
mod exports_tests;
mod mig;
mod process;
#[cfg(test)]
mod signatures;
mod stubs;
mod system;

use std::ffi::{CStr, c_char, c_uint};
use std::panic::AssertUnwindSafe;
use std::ptr::NonNull;

use nvml_wrapper_sys::bindings as sys;

use crate::code::{Answer, INSUFFICIENT_SIZE, INVALID_ARGUMENT, SUCCESS, UNKNOWN};

/// Runs one call: its code, or UNKNOWN if it panicked.
pub(crate) fn guard(call: impl FnOnce() -> Answer<()>) -> sys::nvmlReturn_t {
    match std::panic::catch_unwind(AssertUnwindSafe(call)) {
        Ok(Ok(())) => SUCCESS,
        Ok(Err(code)) => code,
        Err(_) => UNKNOWN,
    }
}

/// An out-parameter: a caller's pointer to one `T`, not NULL.
#[derive(Debug)]
pub(crate) struct Out<T>(NonNull<T>);

impl<T> Out<T> {
    /// The out-parameter at `ptr`; INVALID_ARGUMENT for NULL.
    ///
    /// # Safety
    /// `ptr` is NULL, or valid and aligned for reads and writes of one `T`
    /// for as long as the wrapper lives (the call it was passed to).
    pub(crate) unsafe fn new(ptr: *mut T) -> Answer<Self> {
        NonNull::new(ptr).map(Out).ok_or(INVALID_ARGUMENT)
    }

    /// Writes `value`.
    pub(crate) fn set(&self, value: T) {
        // SAFETY: `new`'s contract: valid and aligned for a write of `T`.
        unsafe { self.0.as_ptr().write(value) }
    }

    /// Reads the value (an in-out count).
    pub(crate) fn get(&self) -> T
    where
        T: Copy,
    {
        // SAFETY: `new`'s contract: valid and aligned for a read of `T`,
        // which the caller initialised (NVML's in-out parameters).
        unsafe { self.0.as_ptr().read() }
    }

    /// The version word a versioned struct starts with.
    pub(crate) fn version(&self) -> u32 {
        // SAFETY: every versioned NVML struct starts with its `unsigned int
        // version`, which the caller sets; `new`'s contract makes the
        // struct, so its first field, readable.
        unsafe { self.0.as_ptr().cast::<u32>().read() }
    }

    /// The same memory as another struct of the same version family.
    ///
    /// # Safety
    /// The caller's struct is a `U`: the version it wrote says so.
    pub(crate) unsafe fn as_version<U>(&self) -> Out<U> {
        Out(self.0.cast())
    }
}

/// A character buffer of `len` bytes for a NUL-terminated string.
#[derive(Debug)]
pub(crate) struct OutBuf {
    ptr: NonNull<c_char>,
    len: usize,
}

impl OutBuf {
    /// The buffer at `ptr` of `len` bytes; INVALID_ARGUMENT for NULL.
    ///
    /// # Safety
    /// `ptr` is NULL, or valid for writes of `len` bytes during the call.
    pub(crate) unsafe fn new(ptr: *mut c_char, len: c_uint) -> Answer<Self> {
        let ptr = NonNull::new(ptr).ok_or(INVALID_ARGUMENT)?;
        let len = usize::try_from(len).map_err(|_| INVALID_ARGUMENT)?;
        Ok(Self { ptr, len })
    }

    /// Writes `text` and its NUL; INSUFFICIENT_SIZE where it does not fit.
    pub(crate) fn put(&self, text: &str) -> Answer<()> {
        let bytes = text.as_bytes();
        if bytes.len() >= self.len {
            return Err(INSUFFICIENT_SIZE);
        }
        // SAFETY: `new`'s contract: `len` writable bytes, and `text` and its
        // NUL fit in them (checked above); the regions cannot overlap, as
        // `text` is this library's.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr().cast(), self.ptr.as_ptr(), bytes.len());
            self.ptr.as_ptr().add(bytes.len()).write(0);
        }
        Ok(())
    }
}

/// `text` in a fixed `[c_char; N]` field of an NVML struct, NUL-terminated
/// and cut to fit.
pub(crate) fn fixed<const N: usize>(text: &str) -> [c_char; N] {
    let mut out = [0 as c_char; N];
    for (slot, byte) in out.iter_mut().zip(text.bytes().take(N.saturating_sub(1))) {
        *slot = c_char::from_ne_bytes([byte]);
    }
    out
}

/// An array out-parameter of `len` elements.
#[derive(Debug)]
pub(crate) struct OutSlice<T> {
    ptr: NonNull<T>,
    len: usize,
}

impl<T> OutSlice<T> {
    /// The array at `ptr` of `len` elements; INVALID_ARGUMENT for NULL.
    ///
    /// # Safety
    /// `ptr` is NULL, or valid and aligned for writes of `len` elements
    /// during the call.
    pub(crate) unsafe fn new(ptr: *mut T, len: usize) -> Answer<Self> {
        let ptr = NonNull::new(ptr).ok_or(INVALID_ARGUMENT)?;
        Ok(Self { ptr, len })
    }

    /// Writes `values` from the start; INSUFFICIENT_SIZE where they do not
    /// fit (nothing written then).
    pub(crate) fn fill(&self, values: impl ExactSizeIterator<Item = T>) -> Answer<()> {
        if values.len() > self.len {
            return Err(INSUFFICIENT_SIZE);
        }
        for (i, value) in values.enumerate() {
            // SAFETY: `new`'s contract: `len` elements writable, and `i` is
            // below `len` (the iterator's length was checked).
            unsafe { self.ptr.as_ptr().add(i).write(value) }
        }
        Ok(())
    }
}

/// The caller's NUL-terminated string, as UTF-8; INVALID_ARGUMENT for NULL
/// or bytes that are not UTF-8.
///
/// # Safety
/// `ptr` is NULL or points to a NUL-terminated string that lives and does
/// not change during the call.
pub(crate) unsafe fn c_str<'a>(ptr: *const c_char) -> Answer<&'a str> {
    if ptr.is_null() {
        return Err(INVALID_ARGUMENT);
    }
    // SAFETY: the function's contract.
    let text = unsafe { CStr::from_ptr(ptr) };
    text.to_str().map_err(|_| INVALID_ARGUMENT)
}

#[cfg(test)]
mod tests {
    use super::{Out, OutBuf, OutSlice, fixed, guard};
    use crate::code::{INSUFFICIENT_SIZE, INVALID_ARGUMENT, SUCCESS, UNKNOWN};

    #[test]
    fn strings_fit_or_are_refused() {
        let mut buf: [std::ffi::c_char; 4] = [1; 4];
        // SAFETY: a live local array of 4 bytes.
        let out = unsafe { OutBuf::new(buf.as_mut_ptr().cast(), 4) }.unwrap();
        assert_eq!(out.put("abc"), Ok(()));
        assert_eq!(buf.map(|c| c.to_ne_bytes()[0]), *b"abc\0");
        assert_eq!(out.put("abcd"), Err(INSUFFICIENT_SIZE));
        // SAFETY: NULL is allowed and refused.
        let null = unsafe { OutBuf::new(std::ptr::null_mut(), 4) };
        assert_eq!(null.unwrap_err(), INVALID_ARGUMENT);
        let field: [std::ffi::c_char; 4] = fixed("abcdef");
        assert_eq!(field.map(|c| c.to_ne_bytes()[0]), *b"abc\0");
    }

    #[test]
    fn arrays_take_what_fits() {
        let mut array = [0u32; 2];
        // SAFETY: a live local array of 2 elements.
        let out = unsafe { OutSlice::new(array.as_mut_ptr(), 2) }.unwrap();
        assert_eq!(out.fill([7, 8].into_iter()), Ok(()));
        assert_eq!(array, [7, 8]);
        assert_eq!(out.fill([1, 2, 3].into_iter()), Err(INSUFFICIENT_SIZE));
        let mut count = 5u32;
        // SAFETY: a live local.
        let count = unsafe { Out::new(&raw mut count) }.unwrap();
        assert_eq!(count.get(), 5);
    }

    #[test]
    fn a_panic_is_unknown() {
        assert_eq!(guard(|| Ok(())), SUCCESS);
        assert_eq!(guard(|| Err(INVALID_ARGUMENT)), INVALID_ARGUMENT);
        assert_eq!(guard(|| panic!("boom")), UNKNOWN);
    }
}
