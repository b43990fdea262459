//! Shared by the tests that drive real NBD clients.

use std::process::Command;

/// Whether `tool` runs; if not, says so and (unless tools are required) tells the test to skip.
pub fn have(tool: &str, package: &str) -> bool {
    let ok = Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        let msg = format!("{tool} not installed (Debian package {package})");
        if std::env::var("SPINDLE_REQUIRE_NBD_TOOLS").is_ok_and(|v| v == "1") {
            panic!("{msg}, and SPINDLE_REQUIRE_NBD_TOOLS=1");
        }
        eprintln!("skipping: {msg}");
    }
    ok
}
