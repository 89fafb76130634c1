//! The repository's text reads on its own ([`linklab_tidy::docs`] says the rules): every
//! relative link and anchor resolves, and no text names what a reader with only the clone
//! cannot follow. The unit tests of `src/docs/` hold the rules to planted faults.

#[test]
fn every_link_resolves_and_no_text_uses_a_forbidden_word() {
    let (problems, files) = linklab_tidy::docs::check(&linklab_tidy::repository_root());
    assert!(files > 500, "only {files} files read: is this a clone?");
    assert!(
        problems.is_empty(),
        "{} problems in {files} files:\n{}",
        problems.len(),
        problems.join("\n")
    );
}
