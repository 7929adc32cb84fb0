//! No panic may unwind into C, and no pointer Slurm lends may outlive the call that lent it.
//!
//! - [`export!`] is the only way to give Slurm a symbol to call (`#[no_mangle]` anywhere else
//!   is refused: `exports.rs` denies `unsafe_code`, and build.rs rejects `#[no_mangle] fn`
//!   outside this file). Each generated function runs its body inside [`guarded`].
//! - [`callback!`] does the same for functions Slurm calls through a pointer we hand it.
//! - [`guarded`] turns a panic into an error return plus a log line, and opens a [`Call`]
//!   scope: wrappers of Slurm's pointers borrow it, so the compiler rejects keeping one.
//!
//! Logging goes to Slurm's own log through `log`.

use std::cell::RefCell;
use std::panic::{catch_unwind, AssertUnwindSafe};

use super::call::Call;
use super::slurm;

/// Runs `f` in a new [`Call`] scope; on panic logs `entry` and the panic message and returns
/// `on_panic`. Values borrowed from the scope cannot be part of `T` (`'c` is higher-ranked).
pub fn guarded<T>(entry: &str, on_panic: T, f: impl for<'c> FnOnce(&Call<'c>) -> T) -> T {
    let call = Call::new();
    match catch_unwind(AssertUnwindSafe(|| f(&call))) {
        Ok(v) => v,
        Err(_) => {
            let msg = LAST_PANIC
                .with(|p| p.borrow_mut().take())
                .unwrap_or_else(|| "unknown panic".into())
                .replace('\n', " "); // one log line, so grep finds the message with the entry
            slurm::log_error(&format!("{entry}: internal error ({msg}); request refused"));
            on_panic
        }
    }
}

/// Defines `#[no_mangle] extern "C"` functions for Slurm's plugin loader, each a guarded call
/// of its implementation:
///
/// ```ignore
/// export! {
///     /// doc
///     fn topology_p_whole_topo(node_mask: *mut b::bitstr_t) -> c_int
///         = ops::whole_topo, on_panic slurm::ERROR;
/// }
/// ```
///
/// The implementation is an `unsafe fn(&Call, args...)` whose safety contract is the
/// calling convention Slurm documents for that symbol. It returns the C value, or a
/// `Result<(), PluginError>` that `error::IntoC` maps to the symbol's code (`SLURM_SUCCESS`
/// or the error's), so that mapping is written once.
///
/// Arguments after a `;` are part of the C signature but not passed on (the topology context
/// pointer of 25.05+, which this plugin does not need).
macro_rules! export {
    ($(
        $(#[$meta:meta])*
        fn $name:ident($($arg:ident: $ty:ty),* $(,)? $(; $($unused:ident: $uty:ty),+ $(,)?)?)
            -> $ret:ty = $imp:path, on_panic $fallback:expr;
    )*) => {$(
        $(#[$meta])*
        #[no_mangle]
        #[allow(unsafe_code)] // the one place symbols are exported, each behind the guard
        #[allow(unused_unsafe)] // some implementations are safe functions
        pub extern "C" fn $name($($arg: $ty,)* $($($unused: $uty),+)?) -> $ret {
            $crate::guard::guarded(stringify!($name), $fallback, |call| {
                // SAFETY: Slurm calls this symbol with the arguments its topology interface
                // documents, which is the contract of the implementation.
                let result = unsafe { $imp(call, $($arg),*) };
                $crate::error::IntoC::<$ret>::into_c(result)
            })
        }
    )*};
}

/// Defines an `extern "C"` function that Slurm calls through a pointer (not by name), with
/// the same guard as [`export!`].
macro_rules! callback {
    (
        $(#[$meta:meta])*
        fn $name:ident($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty = $imp:path, on_panic $fallback:expr;
    ) => {
        $(#[$meta])*
        extern "C" fn $name($($arg: $ty),*) -> $ret {
            $crate::guard::guarded(stringify!($name), $fallback, |call| {
                // SAFETY: Slurm calls the callback with the arguments documented where we
                // hand it over, which is the contract of the implementation.
                let result = unsafe { $imp(call, $($arg),*) };
                $crate::error::IntoC::<$ret>::into_c(result)
            })
        }
    };
}

pub(crate) use {callback, export};

/// Bridges the `log` crate to Slurm's logger, with Slurm's current log level as the filter.
struct SlurmLogger;

impl log::Log for SlurmLogger {
    fn enabled(&self, metadata: &log::Metadata) -> bool {
        metadata.level() <= slurm::log_level_filter()
    }

    fn log(&self, record: &log::Record) {
        if self.enabled(record.metadata()) {
            slurm::log_line(record.level(), &record.args().to_string());
        }
    }

    fn flush(&self) {}
}

static LOGGER: SlurmLogger = SlurmLogger;

thread_local! {
    /// The message and location of this thread's last panic, for the guard's log line.
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Idempotent: the logger stays installed for the life of the process.
pub fn install_logger() {
    if log::set_logger(&LOGGER).is_ok() {
        log::set_max_level(log::LevelFilter::Trace);
    }
    // The default hook writes to stderr, which daemons may have closed; the guard logs instead.
    std::panic::set_hook(Box::new(|info| {
        LAST_PANIC.with(|p| *p.borrow_mut() = Some(info.to_string()));
    }));
}
