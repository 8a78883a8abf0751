//! Every walk-through in the docs is a test: the `sh` and `console` blocks of
//! each section whose prose says it is run by `tests/e2e/walkthrough`
//! (README's "Run it", each "Try it on the simulator", selectors.md's
//! `match` examples, configuration.md's check) run in order against the real
//! gpusliced and gpuslicectl on the shipped `examples/gpuslice-sim.toml`, and
//! what each command prints is compared with the output the doc shows. Every
//! other shell block of README.md and docs/*.md must carry a marker saying
//! which test runs it or why none can (`markdown`); an unmarked one fails.
//!
//! Why a runner of our own around snapbox, not trycmd: trycmd runs each
//! `$ cmd` line as one program with its arguments, without a shell, so the
//! docs' `ctl() { … }` function, variables like `MPS='…'`, `&` jobs, pipes
//! (`| grep`), `>>` and `"$(mem 20Gi)"` cannot run under it. So the commands
//! run in one persistent bash per walk-through (`session`), and snapbox (its
//! comparison and diff, which trycmd uses too) judges the output (`script`).
//!
//! How a walk-through runs (`run_page`):
//!
//! - In its own temp folder laid out like the repository (`examples/` and
//!   `tests/tools/` copied, `run/` made by gpusliced), so the docs' relative
//!   paths (`run/cdi/…`, `examples/dra/…`) work as written.
//! - The commands a user types stay in the docs. A shell function `cargo`
//!   stands for `cargo run [-q] --bin NAME -- ARGS`: it runs the binary cargo
//!   built for this test with ARGS (cargo's own progress lines are not
//!   reproduced; shown commands use `-q`, which prints none).
//! - The `sh` block `cargo run --bin gpusliced -- ARGS` (the "first
//!   terminal") is started in the background with the e2e harness, which
//!   binds NOTIFY_SOCKET and waits for READY=1; at the end the walk-through
//!   must have unprepared every claim and ended every job, and gpusliced
//!   must exit 0 on SIGTERM.
//! - A command that appends to `run/sim-health-events` is followed by a wait
//!   for gpusliced's STATUS= line to report an unhealthy device (the event
//!   file is polled by the daemon; the status line is its answer). A
//!   command ending in `&` is followed until its first stderr line
//!   (`session`). Nothing else waits, and nothing sleeps.
//! - The example config binds the metrics listener to 127.0.0.1:9464, so
//!   the walk-throughs run one after another in this one test, no other test
//!   binds that port, and the test fails at once, naming it, when something
//!   else holds it (a gpusliced of the user's own running the demo).
//!
//! A page's claim uids (`--uid`, `--claim`) must be its own: a uid in two
//! pages' shell blocks fails, since following two docs in one sitting would
//! then collide.

mod markdown;
mod script;
mod session;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use markdown::{Block, Marker, Role};
use script::Step;
use session::Session;

use crate::harness::{Daemon, gpusliced_binary};
use crate::tools;

/// `cargo run [-q] --bin NAME -- ARGS` as the walk-throughs type it, run on
/// the binaries this test was built with.
const CARGO_STAND_IN: &str = r#"cargo() {
  local bin
  if [ "$1" != run ]; then
    echo "walkthrough: only 'cargo run [-q] --bin NAME -- ARGS' runs here, not: cargo $*" >&2
    return 127
  fi
  shift
  if [ "$1" = -q ]; then shift; fi
  if [ "$1" != --bin ]; then echo "walkthrough: cargo run needs --bin NAME" >&2; return 127; fi
  bin=$2
  shift 2
  if [ "$1" = -- ]; then shift; fi
  case $bin in
    gpusliced) "$WALKTHROUGH_GPUSLICED" "$@" ;;
    gpuslicectl) "$WALKTHROUGH_GPUSLICECTL" "$@" ;;
    *) echo "walkthrough: no binary $bin" >&2; return 127 ;;
  esac
}"#;

/// A block to run and its steps.
struct Run {
    block: Block,
    steps: Vec<Step>,
}

#[test]
fn sim_docs_walkthroughs_run_as_written() {
    if let Some(tool) = tools::first_missing(&["bash", "python3", "curl"]) {
        tools::skip(
            "sim_docs_walkthroughs_run_as_written",
            &format!(
                "{tool} is not installed (the walk-throughs run in bash, with the MPS stand-in \
                 in python3, and scrape metrics with curl)"
            ),
        );
        return;
    }
    let root = tools::repo_root();
    if let Err(why) = metrics_port_free(&root) {
        panic!("{why}");
    }
    let Plan {
        pages,
        mut problems,
    } = plan(&root);
    for (page, runs) in &pages {
        eprintln!("walkthrough: {page} ({} blocks)", runs.len());
        problems.extend(run_page(&root, page, runs));
    }
    assert!(
        problems.is_empty(),
        "the docs and the program disagree ({} problem(s)):\n\n{}",
        problems.len(),
        problems.join("\n\n")
    );
}

/// What the pages ask for: each page's blocks to run, and the problems found
/// by reading them (unmarked blocks, bad markers, shared uids).
struct Plan {
    pages: Vec<(String, Vec<Run>)>,
    problems: Vec<String>,
}

/// Reads README.md and docs/*.md.
fn plan(root: &Path) -> Plan {
    let mut plan = Plan {
        pages: Vec::new(),
        problems: Vec::new(),
    };
    let mut uids: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for page in page_names(root) {
        let text = std::fs::read_to_string(root.join(&page))
            .unwrap_or_else(|e| panic!("cannot read {page}: {e}"));
        let blocks = match markdown::blocks(&text) {
            Ok(blocks) => blocks,
            Err(found) => {
                plan.problems
                    .extend(found.into_iter().map(|p| format!("{page}:{p}")));
                continue;
            }
        };
        let mut runs = Vec::new();
        for block in blocks {
            if block.is_shell() {
                for uid in claim_uids(&block.text) {
                    uids.entry(uid).or_default().insert(page.clone());
                }
            }
            let at = format!("{page}:{}", block.line);
            match block.role() {
                Err(why) => plan.problems.push(format!("{at}: the block {why}")),
                Ok(Role::Silent) => {
                    let steps = script::silent_steps(block.line, &block.text);
                    runs.push(Run { block, steps });
                }
                Ok(Role::Shown) => match script::shown_steps(block.line, &block.text) {
                    Ok(steps) => runs.push(Run { block, steps }),
                    Err(why) => plan.problems.push(format!("{page}:{why}")),
                },
                Ok(Role::Marked(Marker::RunBy(path))) if !root.join(&path).exists() => {
                    plan.problems.push(format!(
                        "{at}: marked as run by {path}, which does not exist"
                    ));
                }
                Ok(_) => {}
            }
        }
        if !runs.is_empty() {
            plan.pages.push((page, runs));
        }
    }
    for (uid, in_pages) in &uids {
        if in_pages.len() > 1 {
            plan.problems.push(format!(
                "the claim uid {uid} is used in {}: give each page its own uids",
                in_pages.iter().cloned().collect::<Vec<_>>().join(" and ")
            ));
        }
    }
    plan
}

/// Ok when the example config's metrics address can be bound, else why the
/// walk-throughs cannot run (said at once, not as a daemon that never
/// becomes ready).
fn metrics_port_free(root: &Path) -> Result<(), String> {
    let path = root.join("examples/gpuslice-sim.toml");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let config: toml::Table = text
        .parse()
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let Some(listen) = config
        .get("metrics")
        .and_then(|m| m.get("listen"))
        .and_then(toml::Value::as_str)
    else {
        return Ok(());
    };
    std::net::TcpListener::bind(listen).map(drop).map_err(|e| {
        format!(
            "the walk-throughs start gpusliced on examples/gpuslice-sim.toml, whose metrics \
             listener is {listen}, and that cannot be bound here ({e}): is a gpusliced of \
             yours running the demo? (`ss -ltnp | grep {listen}`)"
        )
    })
}

/// README.md and every page under docs/, sorted.
fn page_names(root: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(root.join("docs"))
        .expect("read docs/")
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .map(|n| format!("docs/{n}"))
        .collect();
    names.sort();
    names.insert(0, "README.md".to_owned());
    names
}

/// The values of `--uid` and `--claim` in a block.
fn claim_uids(text: &str) -> Vec<String> {
    let words: Vec<&str> = text.split_whitespace().collect();
    words
        .windows(2)
        .filter(|w| w[0] == "--uid" || w[0] == "--claim")
        .map(|w| w[1].to_owned())
        .collect()
}

/// Runs one page's walk-through in a fresh folder; returns what went wrong.
fn run_page(root: &Path, page: &str, runs: &[Run]) -> Vec<String> {
    let dir = tempfile::tempdir().expect("temp dir");
    let repo = dir.path().join("repo");
    let scratch = dir.path().join("scratch");
    for folder in ["examples", "tests/tools"] {
        copy_tree(&root.join(folder), &repo.join(folder));
    }
    std::fs::create_dir_all(&scratch).expect("scratch folder");
    let ctl = crate::binaries::gpuslicectl();
    let gpusliced = gpusliced_binary();
    let session = Session::start(
        &repo,
        &scratch,
        &[
            ("WALKTHROUGH_GPUSLICED", &gpusliced),
            ("WALKTHROUGH_GPUSLICECTL", &ctl),
        ],
    )
    .and_then(|mut s| s.define(CARGO_STAND_IN).map(|()| s));
    let mut walk = match session {
        Ok(session) => Walk {
            repo,
            session,
            folder: Some(dir),
            daemon: None,
        },
        Err(why) => return vec![format!("{page}: {why}")],
    };
    let mut problems = Vec::new();
    'blocks: for run in runs {
        for step in &run.steps {
            let at = format!(
                "{page}:{} (the block at line {}), `{}`",
                step.line, run.block.line, step.command
            );
            match walk.step(step) {
                Ok(None) => {}
                Ok(Some(why)) => problems.push(format!("{at}: {why}")),
                Err(why) => {
                    problems.push(format!("{at}: {why}"));
                    break 'blocks;
                }
            }
        }
    }
    problems.extend(clean_up(page, &mut walk.session, walk.daemon));
    problems
}

/// A page's walk-through under way.
struct Walk {
    /// The folder laid out like the repository.
    repo: PathBuf,
    session: Session,
    /// The temp folder, until gpusliced takes it.
    folder: Option<tempfile::TempDir>,
    daemon: Option<Daemon>,
}

impl Walk {
    /// Runs one step: `Ok(None)` when it printed what the doc shows,
    /// `Ok(Some(why))` when not, `Err` when the walk-through cannot go on.
    fn step(&mut self, step: &Step) -> Result<Option<String>, String> {
        if step.shown.is_none()
            && let Some(args) = daemon_args(&step.command)
        {
            let dir = self.folder.take().ok_or("gpusliced is started twice")?;
            let run = self.repo.join("run");
            self.daemon = Some(Daemon::start_as_user(dir, &self.repo, &args, &run));
            return Ok(None);
        }
        let printed = self.session.run(&step.command)?;
        if step.command.contains("run/sim-health-events")
            && let Some(daemon) = &self.daemon
        {
            daemon.wait_for_status(|s| s.contains(" unhealthy"));
        }
        Ok(match &step.shown {
            None if !printed.text.is_empty() || printed.status != 0 => Some(format!(
                "a ```sh block's command must succeed and print nothing (show its output in a \
                 ```console block); it exited {} and printed:\n{}",
                printed.status, printed.text
            )),
            None => None,
            Some(shown) => script::compare(shown, &printed.text)
                .err()
                .map(|diff| format!("the doc shows other output\n{}", diff.trim_end())),
        })
    }
}

/// Checks the walk-through left nothing behind, and stops gpusliced.
fn clean_up(page: &str, session: &mut Session, daemon: Option<Daemon>) -> Vec<String> {
    let mut problems = Vec::new();
    match session.run("jobs -r") {
        Ok(jobs) if jobs.text.is_empty() => {}
        Ok(jobs) => problems.push(format!(
            "{page}: the walk-through ends with jobs still running (end them: kill %N; wait):\n{}",
            jobs.text
        )),
        Err(why) => problems.push(format!("{page}: `jobs -r`: {why}")),
    }
    if let Some(daemon) = daemon {
        let records = daemon.record_files();
        if !records.is_empty() {
            problems.push(format!(
                "{page}: the walk-through ends with claims still prepared (unprepare them): {}",
                records.join(", ")
            ));
        }
        let log = daemon.log();
        let (status, _dir) = daemon.stop();
        if !status.success() {
            problems.push(format!(
                "{page}: gpusliced exited {status} on SIGTERM; its log:\n{log}"
            ));
        }
    }
    problems
}

/// The arguments of `cargo run [-q] --bin gpusliced -- ARGS` that starts
/// the daemon (not a `--check-config`).
fn daemon_args(command: &str) -> Option<Vec<String>> {
    let words: Vec<&str> = command.split_whitespace().collect();
    let rest = match words.as_slice() {
        ["cargo", "run", "--bin", "gpusliced", "--", rest @ ..]
        | ["cargo", "run", "-q", "--bin", "gpusliced", "--", rest @ ..] => rest,
        _ => return None,
    };
    (!rest.contains(&"--check-config")).then(|| rest.iter().map(|w| (*w).to_owned()).collect())
}

/// Copies `from` to `to`, symbolic links as links.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("make folder");
    for entry in std::fs::read_dir(from)
        .expect("read folder")
        .filter_map(Result::ok)
    {
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type().expect("file type");
        if kind.is_symlink() {
            let target = std::fs::read_link(&src).expect("read link");
            std::os::unix::fs::symlink(target, &dst).expect("copy link");
        } else if kind.is_dir() {
            copy_tree(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).expect("copy file");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_daemon_block_is_recognised_and_a_check_is_not() {
        assert_eq!(
            daemon_args("cargo run --bin gpusliced -- --config examples/gpuslice-sim.toml"),
            Some(vec![
                "--config".to_owned(),
                "examples/gpuslice-sim.toml".to_owned()
            ])
        );
        assert_eq!(
            daemon_args("cargo run -q --bin gpusliced -- --config x --check-config"),
            None
        );
        assert_eq!(
            daemon_args("cargo run -q --bin gpuslicectl -- status"),
            None
        );
    }

    #[test]
    fn claim_uids_are_the_values_of_uid_and_claim() {
        assert_eq!(
            claim_uids("ctl prepare --uid a-1 --device gpu-2\nctl sim exec --claim b-2 -- x"),
            ["a-1", "b-2"]
        );
    }
}
