use super::*;

fn module(path: &str) -> ModulePath {
    path.split("::")
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The paths `text` uses from module `at`, as `line:a::b::c`.
fn paths(at: &str, text: &str) -> Vec<String> {
    scan(&module(at), text)
        .unwrap()
        .paths
        .iter()
        .map(|p| format!("{}:{}", p.line, p.path.join("::")))
        .collect()
}

const FLOORS: FloorTable<'static> = FloorTable {
    floors: &[
        (0, &["crash"]),
        (1, &["gpu"]),
        (2, &["mig", "config"]),
        (8, &["claims"]),
    ],
    parts: &[("claims::access::*::config", "config")],
};

const RULES: &[Forbidden<'static>] = &[Forbidden {
    within: "claims::view",
    not: &["claims::prepare", "claims::unprepare"],
    why: "a view only reads",
}];

#[test]
fn use_items_and_code_paths_are_found_and_made_absolute() {
    let text = "\
use crate::gpu::GpuBackend;
use super::table::{ClaimTable, Share};
use self::inner::Thing;
fn f() {
    crate::crash::hook(\"x\");
    let _ = super::super::gpu::sim::SimModel::H100;
}
";
    assert_eq!(
        paths("claims::view", text),
        [
            "1:gpu::GpuBackend",
            "2:claims::table::ClaimTable",
            "2:claims::table::Share",
            "3:claims::view::inner::Thing",
            "5:crash::hook",
            "6:gpu::sim::SimModel::H100",
        ]
    );
}

#[test]
fn nested_use_groups_globs_renames_and_self_are_expanded() {
    let text = "use crate::{gpu::{self, GpuError as E}, mig::*, config::{mig::{A, B}}};";
    assert_eq!(
        paths("claims", text),
        [
            "1:gpu",
            "1:gpu::GpuError",
            "1:mig",
            "1:config::mig::A",
            "1:config::mig::B"
        ]
    );
}

#[test]
fn comments_docs_strings_and_attributes_are_not_paths() {
    let text = "\
//! See [`crate::claims::Engine`].
/// Uses [`crate::gpu::GpuBackend`].
// crate::mig::plan_layout
/* crate::config::Config */
#[doc = \"crate::claims::x\"]
fn f() -> &'static str { \"crate::claims::y\" }
";
    assert_eq!(paths("gpu", text), Vec::<String>::new());
}

#[test]
fn test_items_and_test_modules_are_skipped() {
    let text = "\
#[cfg(test)]
use crate::claims::Engine;
#[cfg(test)]
pub(crate) use crate::claims::{a, b};
#[cfg(test)]
#[path = \"x_tests.rs\"]
mod tests;
#[cfg(test)]
mod inline {
    use crate::claims::Engine;
}
#[cfg(test)]
fn helper() { crate::claims::x(); }
use crate::crash::hook;
";
    let scanned = scan(&module("gpu"), text).unwrap();
    let found: Vec<String> = scanned.paths.iter().map(|p| p.path.join("::")).collect();
    assert_eq!(found, ["crash::hook"]);
    assert!(scanned.modules.is_empty(), "{:?}", scanned.modules);
}

#[test]
fn a_file_marked_test_only_inside_has_no_paths() {
    assert_eq!(
        paths("gpu", "#![cfg(test)]\nuse crate::claims::Engine;\n"),
        Vec::<String>::new()
    );
}

#[test]
fn declared_modules_are_listed_with_their_path_attribute_and_inline_ones_walked() {
    let text = "\
pub mod observed;
#[cfg(feature = \"failpoints\")]
mod backend;
#[path = \"other.rs\"]
pub(crate) mod renamed;
mod inline {
    use super::super::mig::Occupancy;
}
";
    let scanned = scan(&module("gpu"), text).unwrap();
    let declared: Vec<(String, Option<String>)> = scanned
        .modules
        .iter()
        .map(|d| (d.name.clone(), d.path_attr.clone()))
        .collect();
    assert_eq!(
        declared,
        [
            ("observed".to_owned(), None),
            ("backend".to_owned(), None),
            ("renamed".to_owned(), Some("other.rs".to_owned())),
        ]
    );
    let found: Vec<String> = scanned.paths.iter().map(|p| p.path.join("::")).collect();
    assert_eq!(found, ["mig::Occupancy"]);
}

#[test]
fn a_path_that_climbs_above_the_root_is_dropped() {
    assert_eq!(paths("gpu", "use super::super::x;"), Vec::<String>::new());
}

#[test]
fn text_that_does_not_lex_is_an_error() {
    scan(&module("gpu"), "fn f() { \"unclosed }").unwrap_err();
}

fn judged(at: &str, text: &str) -> Vec<String> {
    let file = format!("daemon/src/{}.rs", at.replace("::", "/"));
    let scanned = scan(&module(at), text).unwrap();
    judge(&file, &module(at), &scanned.paths, &FLOORS, RULES)
        .iter()
        .map(ToString::to_string)
        .collect()
}

/// Asserts `problems` is one problem, which says `says`.
fn assert_one_problem(problems: &[String], says: &str) {
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].contains(says), "{}", problems[0]);
}

#[test]
fn an_import_from_a_lower_floor_or_the_own_module_passes() {
    let text = "use crate::gpu::GpuBackend;\nuse crate::crash::hook;\nuse crate::config::Unlisted;\nuse super::x;\nuse crate::Root;";
    assert_eq!(judged("config::mig", text), Vec::<String>::new());
}

#[test]
fn an_import_from_a_higher_floor_names_the_file_line_and_both_floors() {
    let problems = judged("gpu::sim", "\n\nuse crate::claims::Engine;");
    assert_eq!(problems.len(), 1, "{problems:?}");
    let problem = &problems[0];
    assert!(
        problem.starts_with(
            "daemon/src/gpu/sim.rs:3: gpu (floor 1) uses crate::claims::Engine from claims \
             (floor 8), a higher floor;"
        ),
        "{problem}"
    );
}

#[test]
fn an_import_from_the_same_floor_is_refused_too() {
    let problems = judged("mig", "fn f() { crate::config::Config::default(); }");
    assert_one_problem(
        &problems,
        "mig (floor 2) uses crate::config::Config::default from config (floor 2), its own floor",
    );
}

#[test]
fn a_module_the_table_does_not_list_is_named() {
    let problems = judged("newcomer::part", "use crate::gpu::X;");
    assert_one_problem(&problems, "the top-level module newcomer has no floor");
}

#[test]
fn a_part_stands_with_its_module_wherever_its_folder_is() {
    // config imports a kind's config section: config importing config.
    assert_eq!(
        judged(
            "config",
            "use crate::claims::access::mig::config::MigConfig;"
        ),
        Vec::<String>::new()
    );
    // The section imports what config may, and no more.
    assert_eq!(
        judged("claims::access::mps::config", "use crate::gpu::X;"),
        Vec::<String>::new()
    );
    let problems = judged(
        "claims::access::mig::config::nested",
        "use crate::claims::table::ClaimTable;",
    );
    assert_one_problem(
        &problems,
        "config (floor 2) uses crate::claims::table::ClaimTable from claims (floor 8)",
    );
    // The kind's other files are the claim engine's, which config is below.
    let problems = judged("config", "use crate::claims::access::mig::Mig;");
    assert_eq!(problems.len(), 1, "{problems:?}");
    // `*` is one segment, not several.
    assert_eq!(
        judged("config", "use crate::claims::access::config::X;").len(),
        1
    );
}

#[test]
fn a_forbidden_sibling_is_refused_however_it_is_reached() {
    let text = "\
use super::prepare::Prepared;
use crate::claims::unprepare;
use super::super::prepare::x;
use super::table::Share;
use crate::claims::prepared::Other;
";
    let problems = judged("claims::view", text);
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert_eq!(
        problems[0],
        "daemon/src/claims/view.rs:1: claims::view must not use crate::claims::prepare::Prepared: \
         a view only reads"
    );
    assert!(
        problems[1].starts_with("daemon/src/claims/view.rs:2: "),
        "{}",
        problems[1]
    );
    // From below claims::view, `super::super` is claims: caught as well.
    let deeper = judged("claims::view::mig", "use super::super::prepare::x;");
    assert_eq!(deeper.len(), 1, "{deeper:?}");
    // Outside the rule's folder the same import is fine.
    assert_eq!(judged("claims::reconcile", text), Vec::<String>::new());
}

#[test]
fn the_reading_order_gives_each_numbered_line_its_linked_modules() {
    let lib = "\
//! The crate.
//!
//! Reading order, see [`nothing`] before the list:
//! 0. [`crash`]: points.
//! 1. [`gpu`]: the boundary; [`mig`]: on
//!    top of it, and [`config`].
//! 12. [`api`] and `plain`.
//!
//! After the list.

pub mod crash;
//! 13. [`late`]
";
    assert_eq!(
        reading_order(lib),
        [
            (0, vec!["crash".to_owned()]),
            (
                1,
                vec!["gpu".to_owned(), "mig".to_owned(), "config".to_owned()]
            ),
            (12, vec!["api".to_owned()]),
        ]
    );
}
