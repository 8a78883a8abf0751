//! Logging: journald (structured fields) when systemd connected stderr to the
//! journal (JOURNAL_STREAM is set), plain stderr otherwise. The filter comes
//! from GPUSLICE_LOG, else the config's `log.level`. Colors only on a
//! terminal: a log file or pipe gets plain lines a grep can read.

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// Why logging could not start.
#[derive(Debug, thiserror::Error)]
pub enum LoggingError {
    /// The filter does not parse.
    #[error(
        "log level {filter:?} is not a valid filter (try \"info\" or \"gpuslice=debug\"): {reason}"
    )]
    BadFilter {
        /// The filter text.
        filter: String,
        /// The parser's message.
        reason: String,
    },
}

/// Installs the global subscriber. Returns where logs go ("journald" or "stderr").
pub fn init(level: &str) -> Result<&'static str, LoggingError> {
    let text = std::env::var("GPUSLICE_LOG").unwrap_or_else(|_| level.to_owned());
    let filter = EnvFilter::try_new(&text).map_err(|e| LoggingError::BadFilter {
        filter: text.clone(),
        reason: e.to_string(),
    })?;
    let registry = tracing_subscriber::registry().with(filter);
    if std::env::var_os("JOURNAL_STREAM").is_some() {
        match tracing_journald::layer() {
            Ok(journald) => {
                registry
                    .with(journald.with_syslog_identifier("gpusliced".into()))
                    .init();
                return Ok("journald");
            }
            Err(err) => {
                registry.with(stderr_layer()).init();
                tracing::warn!(error = %err, "JOURNAL_STREAM is set but journald is unreachable; logging to stderr");
                return Ok("stderr");
            }
        }
    }
    registry.with(stderr_layer()).init();
    Ok("stderr")
}

/// Lines on stderr, colored only when it is a terminal.
fn stderr_layer<S>() -> impl tracing_subscriber::Layer<S>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    tracing_subscriber::fmt::layer()
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr)
}
