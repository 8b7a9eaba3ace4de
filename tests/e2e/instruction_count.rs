//! `scripts/instructions.sh`, the instruction-count benchmark (README,
//! "Performance"): its counting is a benchmark, run by hand, not here; what a
//! test can hold it to is saying what is wrong before it builds or runs
//! anything — no valgrind, or counts that would divide by nothing.

use std::path::Path;
use std::process::{Command, Output};

fn script(args: &[&str], path: &str) -> Output {
    Command::new("/bin/sh")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/instructions.sh"))
        .args(args)
        .env("PATH", path)
        .output()
        .expect("run sh")
}

#[test]
fn without_valgrind_the_script_says_how_to_install_it_and_runs_nothing() {
    // A PATH with no valgrind (nor cargo): the script must stop before building.
    let empty = tempfile::tempdir().unwrap();
    let out = script(&[], &empty.path().to_string_lossy());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("valgrind is not installed")
            && stderr.contains("sudo apt-get install valgrind"),
        "{stderr}"
    );
    assert!(!stderr.contains("building"), "{stderr}");
}

#[test]
fn counts_that_would_not_differ_are_refused_with_what_is_valid() {
    let out = script(&["--small", "500", "--large", "500"], "/usr/bin:/bin");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--large must exceed --small"), "{stderr}");
    let out = script(&["--messages", "5"], "/usr/bin:/bin");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("unknown argument --messages"), "{stderr}");
}

#[test]
fn a_binary_to_count_that_is_not_one_is_refused_before_anything_is_built() {
    // AMBIENT_BIN compares another build; a typo must not cost a release build
    // and three callgrind runs before it shows.
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("ambient");
    let out = Command::new("/bin/sh")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/instructions.sh"))
        .env("PATH", "/usr/bin:/bin")
        .env("AMBIENT_BIN", &missing)
        .output()
        .expect("run sh");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "AMBIENT_BIN={} is not an executable file",
            missing.display()
        )),
        "{stderr}"
    );
    assert!(!stderr.contains("building"), "{stderr}");
}
