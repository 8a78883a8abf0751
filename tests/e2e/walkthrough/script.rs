//! A walk-through block as commands and the output the doc shows for each,
//! and the comparison of that output with what the command printed.
//!
//! - ```` ```sh ````: each command line (a line ending in `\` goes on) is a
//!   step that must print nothing and exit 0; blank and `#` lines are skipped.
//! - ```` ```console ````: a line starting `$ ` is a command (a line ending in
//!   `\` goes on, on the next line); the lines up to the next `$ ` are what it
//!   prints, stdout and stderr together as a terminal shows them. Its exit
//!   status is not compared: a doc that means it shows `echo "exit $?"`.
//!
//! Shown output is compared with snapbox, after two readable redactions:
//! `…` inside a line matches any text in that line, and a line holding only
//! `…` (indented or not) matches any lines, none included. Trailing blanks are not compared,
//! nor a missing last newline (a terminal shows the prompt there). A failure
//! shows snapbox's diff, where the doc's `…` reads as snapbox's own
//! wildcards, `[..]` in a line and `...` for lines.
//!
//! Pure: text in, steps and verdicts out.

use snapbox::{Assert, Data};

/// One command of a block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// 1-based line in the doc where the command starts.
    pub line: usize,
    /// The command as typed (continuation lines joined with newlines).
    pub command: String,
    /// What it prints: `None` for a `sh` block's step (nothing at all).
    pub shown: Option<String>,
}

/// The steps of a `sh` block starting at doc line `fence_line`.
pub fn silent_steps(fence_line: usize, text: &str) -> Vec<Step> {
    let mut steps = Vec::new();
    let mut lines = text.lines().enumerate().peekable();
    while let Some((i, line)) = lines.next() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        steps.push(Step {
            line: fence_line + 1 + i,
            command: joined(line, &mut lines),
            shown: None,
        });
    }
    steps
}

/// The command starting with `first`, with the continuation lines it asks
/// for (a trailing `\`) taken from `rest` and joined with newlines.
fn joined<'a>(first: &str, rest: &mut impl Iterator<Item = (usize, &'a str)>) -> String {
    let mut command = first.to_owned();
    while command.ends_with('\\') {
        let Some((_, next)) = rest.next() else { break };
        command.push('\n');
        command.push_str(next);
    }
    command
}

/// The steps of a `console` block starting at doc line `fence_line`, or
/// what is wrong with it.
pub fn shown_steps(fence_line: usize, text: &str) -> Result<Vec<Step>, String> {
    let mut steps: Vec<Step> = Vec::new();
    let mut lines = text.lines().enumerate().peekable();
    while let Some((i, line)) = lines.next() {
        if let Some(first) = line.strip_prefix("$ ") {
            steps.push(Step {
                line: fence_line + 1 + i,
                command: joined(first, &mut lines),
                shown: Some(String::new()),
            });
        } else if let Some(Step {
            shown: Some(shown), ..
        }) = steps.last_mut()
        {
            shown.push_str(line);
            shown.push('\n');
        } else {
            return Err(format!(
                "line {}: output before the first `$ ` command",
                fence_line + 1 + i
            ));
        }
    }
    Ok(steps)
}

/// `shown` as a snapbox pattern: `…` alone on a line becomes `...`, inside a
/// line `[..]`; trailing blanks go.
pub fn pattern(shown: &str) -> String {
    shown
        .lines()
        .map(|line| {
            let line = line.trim_end();
            if line.trim() == "…" {
                "...".to_owned()
            } else {
                line.replace('…', "[..]")
            }
        })
        .map(|line| line + "\n")
        .collect()
}

/// `printed` as compared: trailing blanks go, the last line ends.
fn normalized(printed: &str) -> String {
    printed
        .lines()
        .map(|l| l.trim_end().to_owned() + "\n")
        .collect()
}

/// Ok when `printed` is what `shown` shows, else the difference.
pub fn compare(shown: &str, printed: &str) -> Result<(), String> {
    Assert::new()
        .normalize_paths(false)
        .try_eq(
            Some(&"printed"),
            Data::text(normalized(printed)),
            Data::text(pattern(shown)),
        )
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sh_block_is_one_step_per_command_line() {
        let steps = silent_steps(
            10,
            "# start\nctl() { x; }\n\nctl prepare --uid u \\\n    --device gpu-2\n",
        );
        assert_eq!(
            steps,
            [
                Step {
                    line: 12,
                    command: "ctl() { x; }".to_owned(),
                    shown: None
                },
                Step {
                    line: 14,
                    command: "ctl prepare --uid u \\\n    --device gpu-2".to_owned(),
                    shown: None
                },
            ]
        );
    }

    #[test]
    fn a_console_block_pairs_each_command_with_its_output() {
        let steps = shown_steps(
            3,
            "$ ctl status\nok\n$ ctl prepare \\\n  --uid u\n$ ctl claims\nA\n\nB\n",
        )
        .expect("parses");
        let pairs: Vec<_> = steps
            .iter()
            .map(|s| (s.line, s.command.as_str(), s.shown.as_deref()))
            .collect();
        assert_eq!(
            pairs,
            [
                (4, "ctl status", Some("ok\n")),
                (6, "ctl prepare \\\n  --uid u", Some("")),
                (8, "ctl claims", Some("A\n\nB\n")),
            ]
        );
        assert!(
            shown_steps(3, "out\n$ x\n")
                .is_err_and(|e| e == "line 4: output before the first `$ ` command")
        );
    }

    #[test]
    fn an_ellipsis_matches_text_in_a_line_and_lines_on_its_own() {
        let shown = "uptime  …\n…\nlast\n";
        assert_eq!(compare(shown, "uptime  3s\na\nb\nlast\n"), Ok(()));
        assert_eq!(compare(shown, "uptime  3s\nlast"), Ok(()));
        assert_eq!(compare("a  \nb\n", "a\nb   \n"), Ok(()));
        let diff = compare(shown, "uptime  3s\nnot last\n").expect_err("differs");
        assert!(diff.contains("last"), "{diff}");
    }

    #[test]
    fn only_the_ellipsis_is_a_wildcard() {
        // Backslashes (JSON) stay as they are; dots are dots.
        assert_eq!(compare("\"\\\"gpu\\\"\"\n", "\"\\\"gpu\\\"\"\n"), Ok(()));
        assert!(compare("a.b\n", "axb\n").is_err());
        assert!(compare("2 of 16 devices\n", "2 of 14 devices\n").is_err());
    }
}
