//! No panic may unwind into C: each entry point runs inside [`guarded`], which turns a panic
//! into an error return plus a log line. Logging goes to Slurm's own log through `log`.

use std::cell::RefCell;
use std::panic::{catch_unwind, AssertUnwindSafe};

use super::slurm;

/// Runs `f`; on panic logs `entry` and the panic message and returns `on_panic`.
pub fn guarded<T>(entry: &str, on_panic: T, f: impl FnOnce() -> T) -> T {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(v) => v,
        Err(_) => {
            let msg = LAST_PANIC
                .with(|p| p.borrow_mut().take())
                .unwrap_or_else(|| "unknown panic".into());
            slurm::log_error(&format!("{entry}: internal error ({msg}); request refused"));
            on_panic
        }
    }
}

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
