//! Slurm's logger: its level as a `log` filter, one line per message, and `fatal`.

use std::ffi::{c_char, CString};

use super::super::bindings as b;

pub fn log_level_filter() -> log::LevelFilter {
    // SAFETY: reads the logger's current level.
    let level = unsafe { b::slurm_get_log_level() } as u32;
    match level {
        l if l > b::log_level_t_LOG_LEVEL_DEBUG => log::LevelFilter::Trace,
        l if l >= b::log_level_t_LOG_LEVEL_VERBOSE => log::LevelFilter::Debug,
        l if l >= b::log_level_t_LOG_LEVEL_INFO => log::LevelFilter::Info,
        l if l >= b::log_level_t_LOG_LEVEL_ERROR => log::LevelFilter::Warn,
        _ => log::LevelFilter::Off,
    }
}

/// One line in Slurm's log, prefixed with the plugin type like Slurm's own plugin messages.
pub fn log_line(level: log::Level, msg: &str) {
    let (slurm_level, prefix) = match level {
        log::Level::Error => (b::log_level_t_LOG_LEVEL_ERROR, ""),
        log::Level::Warn => (b::log_level_t_LOG_LEVEL_INFO, "warning: "),
        log::Level::Info => (b::log_level_t_LOG_LEVEL_INFO, ""),
        log::Level::Debug => (b::log_level_t_LOG_LEVEL_VERBOSE, ""),
        log::Level::Trace => (b::log_level_t_LOG_LEVEL_DEBUG, ""),
    };
    let line = CString::new(format!("{prefix}topology/nvl72: {msg}").replace('\0', " "))
        .unwrap_or_default();
    // SAFETY: "%s" with one NUL-terminated string argument matches log_var's printf contract.
    unsafe { b::slurm_log_var(slurm_level, c"%s".as_ptr(), line.as_ptr()) };
}

pub fn log_error(msg: &str) {
    log_line(log::Level::Error, msg);
}

/// `fatal()`: only for a reconfigure child whose failure makes the old slurmctld resume.
pub fn fatal(msg: &str) -> ! {
    let line =
        CString::new(format!("topology/nvl72: {msg}").replace('\0', " ")).unwrap_or_default();
    // SAFETY: "%s" format with one string; slurm_fatal logs, flushes and exits.
    unsafe { slurm_fatal(c"%s".as_ptr(), line.as_ptr()) };
    #[allow(unreachable_code)]
    {
        std::process::exit(1)
    }
}

extern "C" {
    fn slurm_fatal(fmt: *const c_char, ...);
}
