//! The async runtime every verb runs on: one worker thread, unless
//! `TOKIO_WORKER_THREADS` asks for more.
//!
//! Tokio's default is a worker per core, and a task spawned while another
//! worker sleeps wakes it to steal the task. Serenity spawns a task per
//! gateway event, so each message's work passed between the two workers of
//! a two-core machine, and between its CPUs: measured with the load harness
//! (README, "Performance"), an answer cost about a tenth more CPU that way.
//! One worker keeps a message on one thread, and at 0.1–0.2 ms a message it
//! serves thousands a second, more than one process should take before it
//! is split across processes ("Running at scale"). Blocking work (the
//! store's commits, the garden's cycles, voice) has threads of its own.

use std::ffi::OsString;
use std::time::Duration;

use tokio::runtime::{Builder, Runtime};

/// The environment variable tokio itself reads; the bot reads it instead,
/// so a bad value is an error that says what would do, not tokio's panic.
pub(crate) const WORKERS_ENV: &str = "TOKIO_WORKER_THREADS";

#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error(
        "{WORKERS_ENV}={value:?}: expected a whole number of worker threads, 1 or more \
         (unset, the bot uses 1)"
    )]
    BadWorkers { value: String },
    #[error("cannot start the async runtime: {0}")]
    Start(#[from] std::io::Error),
}

/// The number of worker threads `value` (the variable's value) asks for.
pub(crate) fn workers(value: Option<OsString>) -> Result<usize, RuntimeError> {
    let Some(value) = value else {
        return Ok(1);
    };
    let text = value.to_string_lossy();
    match text.trim().parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(RuntimeError::BadWorkers {
            value: text.into_owned(),
        }),
    }
}

/// How long a verb's leftover blocking work may run once the verb itself
/// has returned. Dropping a runtime waits for every blocking task however
/// long it takes, and one stuck in a system call (a file system that
/// stopped answering) kept a stopped bot's process alive; the bot has
/// already stopped its own work by then (`discord::run` within 1.5 s).
pub(crate) const FINISH_WITHIN: Duration = Duration::from_millis(300);

/// Runs `verb` on `runtime` to its end, then ends the runtime within
/// [`FINISH_WITHIN`].
pub fn block_on<T>(runtime: Runtime, verb: impl Future<Output = T>) -> T {
    let out = runtime.block_on(verb);
    runtime.shutdown_timeout(FINISH_WITHIN);
    out
}

/// The runtime, with as many workers as the environment asks (see [`workers`]).
pub fn build() -> Result<Runtime, RuntimeError> {
    let workers = workers(std::env::var_os(WORKERS_ENV))?;
    let runtime = Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()?;
    tracing::info!(
        workers,
        "tasks run on {workers} worker thread{} ({WORKERS_ENV} sets how many)",
        if workers == 1 { "" } else { "s" }
    );
    Ok(runtime)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_worker_unless_the_environment_asks_for_more() {
        assert_eq!(workers(None).unwrap(), 1);
        assert_eq!(workers(Some("4".into())).unwrap(), 4);
        assert_eq!(workers(Some(" 2 ".into())).unwrap(), 2);
    }

    #[test]
    fn no_workers_or_not_a_number_is_refused_naming_the_variable() {
        for bad in ["0", "two", "-1", ""] {
            let e = workers(Some(bad.into())).unwrap_err().to_string();
            assert_eq!(
                e,
                format!(
                    "TOKIO_WORKER_THREADS={bad:?}: expected a whole number of worker threads, \
                     1 or more (unset, the bot uses 1)"
                )
            );
        }
    }
}
