//! Running one test of this binary alone, in a child process of its own:
//! for what is global to a process, such as the log subscriber every thread
//! writes to, which the other tests of this one binary would share.

use std::process::Command;

/// Set in the child: this process runs the one test alone.
const ALONE: &str = "AMBIENT_TEST_ALONE";

/// Whether this process runs `test` alone. If not, runs it alone in a
/// child process of this test binary, fails (with the child's output) if
/// it fails there, and returns false: the caller then returns.
///
/// `module` is the caller's `module_path!()`, `test` its test function's name.
pub fn here(module: &str, test: &str) -> bool {
    // The harness names a test by its path inside the crate.
    let path = module.split_once("::").map_or(module, |(_, inner)| inner);
    let name = format!("{path}::{test}");
    if std::env::var(ALONE).as_deref() == Ok(name.as_str()) {
        return true;
    }
    let out = Command::new(std::env::current_exe().unwrap())
        .args([name.as_str(), "--exact", "--nocapture", "--test-threads=1"])
        .env(ALONE, &name)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("test result: ok. 1 passed"),
        "{name}, run alone, failed:\n{stdout}\n{stderr}"
    );
    false
}
