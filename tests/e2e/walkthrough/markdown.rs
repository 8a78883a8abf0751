//! A Markdown page as the walk-through test reads it: its fenced code blocks,
//! the marker before each, and whether it lies in a walk-through section.
//!
//! Parsed as GitHub renders it (pulldown-cmark). A **walk-through section**
//! is a heading's section (down to the next heading of its level or above)
//! whose prose says it is "run by `tests/e2e/walkthrough`"; its `sh` and
//! `console` blocks are run. A **marker** is an HTML comment alone on the
//! lines right before a block (GitHub shows nothing of it):
//!
//! - `<!-- not run: WHY -->`: not runnable here (a cluster, a GPU, systemd
//!   as PID 1, root);
//! - `<!-- run by PATH -->`: another test runs it (PATH is a file of the
//!   repository, checked to exist).
//!
//! There is no "not run yet": a block a reader can paste is run here, run
//! elsewhere, or cannot run on a machine like this one.
//!
//! Pure: text in, blocks and problems out.

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Parser, Tag, TagEnd};

/// What a section's prose says to make it a walk-through.
pub const WALKTHROUGH_NOTE: &str = "run by `tests/e2e/walkthrough`";

/// The info strings of blocks a reader would paste into a shell.
const SHELL_INFO: &[&str] = &[
    "sh",
    "bash",
    "shell",
    "zsh",
    "console",
    "shell-session",
    "sh-session",
];

/// One fenced (or indented) code block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// 1-based line of the opening fence.
    pub line: usize,
    /// The first word of the info string ("" for none).
    pub info: String,
    /// The block's content.
    pub text: String,
    /// The marker right before it.
    pub marker: Option<Marker>,
    /// The title of the walk-through section it lies in, if any.
    pub walkthrough: Option<String>,
}

/// The comment before a block that says who runs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Marker {
    NotRun(String),
    RunBy(String),
}

/// What the test does with a block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    /// `sh` in a walk-through: each command runs and must print nothing.
    Silent,
    /// `console` in a walk-through: `$ ` commands and the output they print.
    Shown,
    /// Marked: run elsewhere, or not runnable here.
    Marked(Marker),
    /// A file's content (```yaml, ```toml, …) or, outside a walk-through, text
    /// without commands: nothing to run.
    Text,
}

impl Block {
    /// Whether a reader would take it for commands to type.
    pub fn is_shell(&self) -> bool {
        SHELL_INFO.contains(&self.info.as_str())
            || (self.info.is_empty() && self.text.lines().any(|l| l.starts_with("$ ")))
    }

    /// The block's role, or what is wrong with it (without the file name).
    pub fn role(&self) -> Result<Role, String> {
        if let Some(marker) = &self.marker {
            return Ok(Role::Marked(marker.clone()));
        }
        if self.info.is_empty() && self.is_shell() {
            return Err(
                "shows `$ ` commands without a language: label it ```console (its output is \
                 then compared) or mark it"
                    .to_owned(),
            );
        }
        let shell = SHELL_INFO.contains(&self.info.as_str());
        match (&self.walkthrough, self.info.as_str()) {
            (Some(_), "sh") => Ok(Role::Silent),
            (Some(_), "console") => Ok(Role::Shown),
            (Some(section), info) if shell => Err(format!(
                "is a ```{info} block in the walk-through \"{section}\": make it ```sh \
                 (commands that print nothing) or ```console (commands and their output)"
            )),
            (Some(section), "") => Err(format!(
                "shows text without its command in the walk-through \"{section}\": put the \
                 command before it in a ```console block, or mark it <!-- not run: WHY -->"
            )),
            (None, _) if shell => Err(format!(
                "is a ```{} block that no test runs: put it in a walk-through section (prose \
                 saying it is {WALKTHROUGH_NOTE}), or mark it <!-- run by PATH --> or \
                 <!-- not run: WHY -->",
                self.info
            )),
            _ => Ok(Role::Text),
        }
    }
}

/// An HTML block: its text and where it ends.
struct Comment {
    text: String,
    end: usize,
}

/// A code block being read: where it starts, its info word, its text so
/// far, and the comment right before it.
struct Open {
    start: usize,
    info: String,
    body: String,
    before: Option<Comment>,
}

/// The page's blocks, or the problems with its markers.
pub fn blocks(text: &str) -> Result<Vec<Block>, Vec<String>> {
    let sections = walkthrough_sections(text);
    let mut blocks = Vec::new();
    let mut problems = Vec::new();
    // The last HTML block, while nothing else came after it.
    let mut comment: Option<Comment> = None;
    let mut open: Option<Open> = None;
    let mut in_html = false;
    for (event, range) in Parser::new(text).into_offset_iter() {
        match event {
            Event::Start(Tag::HtmlBlock) => {
                in_html = true;
                comment = Some(Comment {
                    text: String::new(),
                    end: range.end,
                });
            }
            Event::Html(html) if in_html => {
                if let Some(comment) = comment.as_mut() {
                    comment.text.push_str(&html);
                }
            }
            Event::End(TagEnd::HtmlBlock) => in_html = false,
            Event::Start(Tag::CodeBlock(kind)) => {
                let info = match kind {
                    CodeBlockKind::Fenced(info) => {
                        info.split_whitespace().next().unwrap_or("").to_owned()
                    }
                    CodeBlockKind::Indented => String::new(),
                };
                let before = comment
                    .take()
                    .filter(|c| text[c.end..range.start].trim().is_empty());
                open = Some(Open {
                    start: range.start,
                    info,
                    body: String::new(),
                    before,
                });
            }
            Event::Text(t) if open.is_some() => {
                if let Some(open) = open.as_mut() {
                    open.body.push_str(&t);
                }
            }
            Event::End(TagEnd::CodeBlock) => {
                if let Some(open) = open.take() {
                    let line = line_of(text, open.start);
                    let marker = match open.before.map(|c| marker(&c.text)) {
                        Some(Ok(m)) => m,
                        Some(Err(why)) => {
                            problems.push(format!("line {line}: {why}"));
                            None
                        }
                        None => None,
                    };
                    let walkthrough = sections
                        .iter()
                        .find(|s| s.range.contains(&open.start))
                        .map(|s| s.title.clone());
                    blocks.push(Block {
                        line,
                        info: open.info,
                        text: open.body,
                        marker,
                        walkthrough,
                    });
                }
            }
            _ if in_html => {}
            _ => comment = None,
        }
    }
    if problems.is_empty() {
        Ok(blocks)
    } else {
        Err(problems)
    }
}

/// The marker an HTML comment holds: `Ok(None)` for a comment that is no
/// marker, an error for a marker without its reason or path.
fn marker(comment: &str) -> Result<Option<Marker>, String> {
    let Some(inner) = comment
        .trim()
        .strip_prefix("<!--")
        .and_then(|c| c.strip_suffix("-->"))
    else {
        return Ok(None);
    };
    let inner = inner.split_whitespace().collect::<Vec<_>>().join(" ");
    let reason = |rest: &str, what: &str| {
        let rest = rest.trim();
        if rest.is_empty() {
            Err(format!("the marker `{inner}` needs {what}"))
        } else {
            Ok(rest.to_owned())
        }
    };
    if let Some(rest) = inner.strip_prefix("not run:") {
        reason(rest, "a reason").map(|r| Some(Marker::NotRun(r)))
    } else if let Some(rest) = inner.strip_prefix("run by ") {
        reason(rest, "the path of the test").map(|r| Some(Marker::RunBy(r)))
    } else if inner.starts_with("not run")
        || inner.starts_with("run by")
        || inner.starts_with("pending")
    {
        Err(format!(
            "`{inner}` is no marker: write <!-- not run: WHY --> or <!-- run by PATH --> \
             (a walk-through block is run, not left pending)"
        ))
    } else {
        Ok(None)
    }
}

/// A walk-through section: its title and its byte range.
struct Section {
    title: String,
    range: std::ops::Range<usize>,
}

/// The sections whose prose carries [`WALKTHROUGH_NOTE`].
fn walkthrough_sections(text: &str) -> Vec<Section> {
    // Every heading: level, title, start.
    let mut headings: Vec<(HeadingLevel, String, usize)> = Vec::new();
    let mut title: Option<String> = None;
    let mut notes = Vec::new();
    let mut in_paragraph = false;
    for (event, range) in Parser::new(text).into_offset_iter() {
        match event {
            Event::Start(Tag::Heading { level, .. }) => {
                headings.push((level, String::new(), range.start));
                title = Some(String::new());
            }
            Event::End(TagEnd::Heading(_)) => {
                if let (Some(t), Some(last)) = (title.take(), headings.last_mut()) {
                    last.1 = t;
                }
            }
            Event::Text(t) | Event::Code(t) => {
                if let Some(title) = title.as_mut() {
                    title.push_str(&t);
                }
            }
            Event::Start(Tag::Paragraph) if !in_paragraph => {
                in_paragraph = true;
                let prose = text[range.clone()].split_whitespace().collect::<Vec<_>>();
                if prose.join(" ").contains(WALKTHROUGH_NOTE) {
                    notes.push(range.start);
                }
            }
            Event::End(TagEnd::Paragraph) => in_paragraph = false,
            _ => {}
        }
    }
    let mut sections = Vec::new();
    for (i, (level, title, start)) in headings.iter().enumerate() {
        let end = headings[i + 1..]
            .iter()
            .find(|(l, _, _)| l <= level)
            .map_or(text.len(), |(_, _, s)| *s);
        // The note belongs to the innermost section holding it.
        let own_end = headings.get(i + 1).map_or(text.len(), |(_, _, s)| *s);
        if notes.iter().any(|n| (*start..own_end).contains(n)) {
            sections.push(Section {
                title: title.clone(),
                range: *start..end,
            });
        }
    }
    sections
}

/// The 1-based line holding byte `offset`.
pub fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: &str = "# Page\n\n\
        ```sh\nsystemctl status gpusliced\n```\n\n\
        <!-- not run: needs systemd as PID 1 -->\n```sh\nsystemctl restart gpusliced\n```\n\n\
        ## Try it\n\nThis walk-through is run by `tests/e2e/walkthrough`.\n\n\
        ```sh\nctl() { :; }\n```\n\n```console\n$ ctl status\nok\n```\n\n\
        ### Details\n\n```\n$ ctl claims\n```\n\n```yaml\na: 1\n```\n\n```\nout\n```\n\n\
        <!-- not run: needs a terminal -->\n\n```sh\nctl top\n```\n\n\
        ## Elsewhere\n\n<!-- run by tests/e2e/metrics.rs -->\n```console\n$ curl x\n```\n\
        \n<!-- a comment -->\nText.\n\n```sh\nls\n```\n";

    fn roles() -> Vec<(usize, Result<Role, String>)> {
        blocks(PAGE)
            .expect("markers parse")
            .iter()
            .map(|b| (b.line, b.role()))
            .collect()
    }

    #[test]
    fn each_block_gets_its_role_from_its_marker_or_its_section() {
        let roles = roles();
        assert!(
            roles[0]
                .1
                .as_ref()
                .is_err_and(|e| e.contains("no test runs")),
            "{roles:?}"
        );
        assert_eq!(
            roles[1].1,
            Ok(Role::Marked(Marker::NotRun(
                "needs systemd as PID 1".to_owned()
            )))
        );
        assert_eq!(roles[2].1, Ok(Role::Silent));
        assert_eq!(roles[3].1, Ok(Role::Shown));
        // A bare block with `$ ` lines must say it is console.
        assert!(
            roles[4].1.as_ref().is_err_and(|e| e.contains("```console")),
            "{roles:?}"
        );
        // A file's content is no command, in a walk-through or not.
        assert_eq!(roles[5].1, Ok(Role::Text));
        // Output without its command, in a subsection of the walk-through.
        assert!(
            roles[6].1.as_ref().is_err_and(|e| e.contains("\"Try it\"")),
            "{roles:?}"
        );
        assert_eq!(
            roles[7].1,
            Ok(Role::Marked(Marker::NotRun("needs a terminal".to_owned())))
        );
        assert_eq!(
            roles[8].1,
            Ok(Role::Marked(Marker::RunBy(
                "tests/e2e/metrics.rs".to_owned()
            )))
        );
        // A comment with prose after it marks nothing.
        assert!(roles[9].1.is_err(), "{roles:?}");
        assert_eq!(roles.len(), 10);
    }

    #[test]
    fn a_block_knows_its_line_and_text() {
        let blocks = blocks(PAGE).expect("markers parse");
        assert_eq!(blocks[3].line, 20);
        assert_eq!(blocks[3].text, "$ ctl status\nok\n");
        assert_eq!(blocks[3].walkthrough.as_deref(), Some("Try it"));
        assert_eq!(blocks[8].walkthrough, None);
    }

    #[test]
    fn a_marker_without_its_reason_or_misspelt_is_a_problem() {
        for (comment, wanted) in [
            ("<!-- not run: -->", "needs a reason"),
            ("<!-- pending: a fresh sample -->", "is no marker"),
            ("<!-- not run because -->", "is no marker"),
            ("<!-- run by -->", "is no marker"),
        ] {
            let page = format!("{comment}\n```sh\nls\n```\n");
            let problems = blocks(&page).expect_err(comment);
            assert!(
                problems[0].contains(wanted) && problems[0].starts_with("line 2:"),
                "{comment}: {problems:?}"
            );
        }
    }
}
