//! Checks of the repository as a new contributor gets it from `git clone`:
//! every relative Markdown link lands on a file of the repository, nothing
//! points outside it, and the vendored upstream files in `third_party/` are
//! the ones their `SOURCE` manifests record; no error type of the workspace
//! says its cause twice; no daemon module imports from a module above it;
//! the daemon links no Kubernetes client, and gpuslicectl no daemon.
//!
//! * [`access_words`]: enums that name kinds of access (the daemon keeps
//!   one).
//! * [`deps`]: the packages a package reaches over normal dependencies, from
//!   `cargo metadata`.
//! * [`error_messages`]: `thiserror` variants that show their source in
//!   their message and also give it as the source.
//! * [`layers`]: the paths a Rust file uses into its crate, judged against
//!   floors (the daemon's reading order) and rules inside a module.
//! * [`markdown`]: the links of a Markdown file, and which of them are dead.
//! * [`vendored`]: the `SOURCE` manifest of a `third_party/` folder, and the
//!   comparison of a folder's files with it.
//! * [`tree`]: the files of the checkout (`git ls-files`), the only I/O.
//!
//! Everything but [`tree`] is pure: the tests read the files and hand their
//! contents in. Problems carry the file, line and target they are about, so a
//! failing test says what to fix.

pub mod access_words;
pub mod deps;
pub mod error_messages;
pub mod layers;
pub mod markdown;
pub mod tree;
pub mod vendored;

/// The 1-based line of byte `offset` in `text`.
#[must_use]
pub fn line_of(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    1 + text.as_bytes()[..end]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
}

/// The 1-based lines of `haystack` that contain `needle` (bytes, so binary
/// files can be searched too).
#[must_use]
pub fn lines_mentioning(haystack: &[u8], needle: &[u8]) -> Vec<usize> {
    if needle.is_empty() {
        return Vec::new();
    }
    haystack
        .split(|&b| b == b'\n')
        .enumerate()
        .filter(|(_, line)| line.windows(needle.len()).any(|w| w == needle))
        .map(|(index, _)| index + 1)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{line_of, lines_mentioning};

    #[test]
    fn line_of_counts_newlines_before_the_offset() {
        let text = "a\nbc\n\nd";
        let lines: Vec<usize> = (0..=text.len()).map(|o| line_of(text, o)).collect();
        assert_eq!(lines, [1, 1, 2, 2, 2, 3, 4, 4]);
        assert_eq!(line_of(text, 99), 4);
    }

    #[test]
    fn lines_mentioning_finds_every_line_once() {
        let text = b"x ab ab\nno\nab\n\xff ab";
        assert_eq!(lines_mentioning(text, b"ab"), [1, 3, 4]);
        assert_eq!(lines_mentioning(text, b"zz"), Vec::<usize>::new());
        assert_eq!(lines_mentioning(text, b""), Vec::<usize>::new());
        assert_eq!(lines_mentioning(b"a\nb", b"a\nb"), Vec::<usize>::new());
    }
}
