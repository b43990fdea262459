//! For tests only: the real traces and drives live outside the repository, in `../shared`.

/// A check whose `../shared` data is missing: skipped, saying so on stderr, unless
/// `SPINDLE_REQUIRE_SHARED=1` (set by `.ci/run`), which makes the absence a failure (a
/// skipped test otherwise looks like a pass: its message is hidden).
pub fn shared_missing(what: &str) {
    skip_or_fail(
        std::env::var("SPINDLE_REQUIRE_SHARED").ok().as_deref(),
        what,
    );
}

/// [`shared_missing`] with the variable's value given.
pub fn skip_or_fail(require: Option<&str>, what: &str) {
    assert!(
        require != Some("1"),
        "{what}, and SPINDLE_REQUIRE_SHARED=1 makes that a failure"
    );
    eprintln!("skipping: {what}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_required_shared_folder_fails_the_test() {
        skip_or_fail(None, "absent");
        skip_or_fail(Some("0"), "absent");
        let failed = std::panic::catch_unwind(|| skip_or_fail(Some("1"), "../shared is absent"));
        let msg = failed.expect_err("a failure, not a skip");
        let msg = msg.downcast_ref::<String>().expect("a message");
        assert!(
            msg.contains("../shared is absent, and SPINDLE_REQUIRE_SHARED=1"),
            "{msg}"
        );
    }
}
