//! The README's examples, read the way the tests run them: exactly as
//! written there (a test that quotes an example must fail when it changes).

/// The whole README.
pub fn text() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap()
}

/// The first ```` ```lang ```` block after the README line containing `after`.
pub fn block(after: &str, lang: &str) -> String {
    let readme = text();
    let start = readme
        .find(after)
        .unwrap_or_else(|| panic!("the README has no {after:?}"));
    let open = format!("```{lang}\n");
    let body = start + readme[start..].find(&open).unwrap() + open.len();
    let end = body + readme[body..].find("```").unwrap();
    readme[body..end].to_string()
}

/// The README's shell example that starts with `prefix`, from a code block
/// line or an inline code span, exactly as written there.
pub fn example(prefix: &str) -> String {
    for line in text().lines() {
        if line.starts_with(prefix) {
            return line.to_string();
        }
        for span in line.split('`').skip(1).step_by(2) {
            if span.starts_with(prefix) {
                return span.to_string();
            }
        }
    }
    panic!("the README has no example starting with {prefix:?}");
}
