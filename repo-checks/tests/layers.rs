//! The daemon's floors: each top-level module of `daemon/src` stands on a
//! floor, and imports only from lower ones; `daemon/src/lib.rs` gives the same
//! floors in its reading order. Inside the claim engine, the view and the
//! access kinds stay below the verbs that use them.
//!
//! The files are found as rustc finds them: from `lib.rs`, through every
//! `mod name;` outside test code. Test code may import anything.
//!
//! Two more rules keep the claim engine's shape: `impl Engine` blocks live
//! only in the files of its verbs and its view (a kind of access is a
//! component in `claims/access`, never more methods on `Engine`), and `api/`
//! never calls the hardware backend (it maps what the engine answers). A
//! last one keeps MPS's machinery in its kind: outside its folder only the
//! wiring names it ([`MPS_WIRING`]).

use std::path::{Path, PathBuf};

use gpuslice_repo_checks::layers::{FloorTable, Forbidden, ModulePath, judge, reading_order, scan};
use gpuslice_repo_checks::tree::repo_root;

/// The floors, from the ground up (the same as lib.rs's reading order).
const FLOORS: FloorTable<'static> = FloorTable {
    floors: &[
        (0, &["crash"]),
        (1, &["gpu", "supervise"]),
        (2, &["mig", "config", "features"]),
        (3, &["inventory", "driver", "health"]),
        (4, &["cdi_build"]),
        (5, &["opaque"]),
        (6, &["state"]),
        (7, &["claims", "compute_domains"]),
        (8, &["advice", "node"]),
        (9, &["activity"]),
        (10, &["limits"]),
        (11, &["metrics"]),
        (12, &["api"]),
        (13, &["systemd", "logging"]),
        (14, &["run", "preflight"]),
        (15, &["testkit"]),
    ],
    parts: PARTS,
};

/// The files of a kind of access that stand on a lower floor than the claim
/// engine around them: a kind's folder holds its config section and its
/// opaque configs, while `config` and `opaque` stay below the engine. What
/// such a file may import is what its module may.
const PARTS: &[(&str, &str)] = &[
    ("claims::access::*::config", "config"),
    ("claims::access::*::opaque", "opaque"),
];

/// Rules inside the claim engine.
const RULES: &[Forbidden<'static>] = &[
    Forbidden {
        within: "claims::access",
        not: &[
            "claims::prepare",
            "claims::unprepare",
            "claims::reconcile",
            "claims::view",
        ],
        why: "a kind of access is a component the verbs drive; it must not call back into them \
              or read the engine's view",
    },
    Forbidden {
        within: "claims::view",
        not: &["claims::prepare", "claims::unprepare"],
        why: "the view only reads what the engine holds; it must not reach the verbs that change \
              it",
    },
];

const SRC: &str = "daemon/src";

/// One non-test source file of the daemon library, with its module path.
struct SourceFile {
    /// Relative to the repository root.
    file: String,
    module: ModulePath,
    text: String,
}

/// Every non-test file of the library, from lib.rs down; problems with
/// finding them go to `problems`.
fn library_files(problems: &mut Vec<String>) -> Vec<SourceFile> {
    let root = repo_root();
    let mut out = Vec::new();
    let mut queue = vec![(format!("{SRC}/lib.rs"), ModulePath::new())];
    while let Some((file, module)) = queue.pop() {
        let text = std::fs::read_to_string(root.join(&file))
            .unwrap_or_else(|e| panic!("read {file}: {e}"));
        let scanned = match scan(&module, &text) {
            Ok(scanned) => scanned,
            Err(err) => {
                problems.push(format!("{file}: does not lex: {err:?}"));
                continue;
            }
        };
        for declared in &scanned.modules {
            if let Some(path) = &declared.path_attr {
                problems.push(format!(
                    "{file}: mod {} has #[path = {path:?}] outside test code; the layers check \
                     follows modules by their names only: name the file after the module",
                    declared.name
                ));
                continue;
            }
            let mut child = module.clone();
            child.push(declared.name.clone());
            match module_file(&root, &child) {
                Some(found) => queue.push((found, child)),
                None => problems.push(format!(
                    "{file}: mod {} has no file {SRC}/{}.rs or .../mod.rs",
                    declared.name,
                    child.join("/")
                )),
            }
        }
        out.push(SourceFile { file, module, text });
    }
    out.sort_by(|a, b| a.file.cmp(&b.file));
    out
}

/// `daemon/src/<a>/<b>.rs` or `daemon/src/<a>/<b>/mod.rs`.
fn module_file(root: &Path, module: &[String]) -> Option<String> {
    let base = format!("{SRC}/{}", module.join("/"));
    [format!("{base}.rs"), format!("{base}/mod.rs")]
        .into_iter()
        .find(|candidate| PathBuf::from(root).join(candidate).is_file())
}

#[test]
fn no_daemon_module_imports_from_its_own_floor_or_above() {
    let mut problems = Vec::new();
    let files = library_files(&mut problems);
    assert!(
        files.len() > 100,
        "only {} files found from {SRC}/lib.rs",
        files.len()
    );
    for source in &files {
        let scanned = scan(&source.module, &source.text).unwrap_or_default();
        problems.extend(
            judge(&source.file, &source.module, &scanned.paths, &FLOORS, RULES)
                .iter()
                .map(ToString::to_string),
        );
    }
    assert!(
        problems.is_empty(),
        "{} import(s) break the floors (daemon/src/lib.rs):\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn the_floor_table_is_lib_rs_reading_order_and_lists_every_module() {
    let lib = std::fs::read_to_string(repo_root().join(SRC).join("lib.rs"))
        .unwrap_or_else(|e| panic!("read {SRC}/lib.rs: {e}"));
    let mut listed: Vec<(u32, Vec<String>)> = FLOORS
        .floors
        .iter()
        .map(|(floor, names)| {
            let mut names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
            names.sort();
            (*floor, names)
        })
        .collect();
    let mut read = reading_order(&lib);
    for (_, names) in &mut read {
        names.sort();
    }
    listed.sort();
    read.sort();
    assert_eq!(
        read, listed,
        "{SRC}/lib.rs's reading order and the table in repo-checks/tests/layers.rs must give the \
         same floors"
    );
    let declared = scan(&[], &lib).expect("lib.rs lexes").modules;
    let mut declared: Vec<String> = declared.into_iter().map(|d| d.name).collect();
    declared.sort();
    let mut tabled: Vec<String> = listed.into_iter().flat_map(|(_, names)| names).collect();
    tabled.sort();
    assert_eq!(
        declared, tabled,
        "every module lib.rs declares needs a floor, and every floor's module must exist"
    );
}

/// The files whose module may add methods to `Engine`: the verbs and the view.
const ENGINE_IMPLS: &[&str] = &[
    "claims",
    "claims::prepare",
    "claims::unprepare",
    "claims::reconcile",
    "claims::health",
    "claims::view",
];

/// Lines of `text` outside comments, numbered from 1.
fn code_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    (text.lines().enumerate()).map(|(i, line)| (i + 1, line.split("//").next().unwrap_or_default()))
}

/// `file:line` of each `impl Engine` outside the verbs and the view.
fn engine_impls_elsewhere(file: &str, module: &[String], text: &str) -> Vec<String> {
    let name = module.join("::");
    let allowed = (ENGINE_IMPLS.iter())
        .any(|m| name == *m || (*m == "claims::view" && name.starts_with("claims::view::")));
    if allowed {
        return Vec::new();
    }
    code_lines(text)
        .filter(|(_, code)| {
            let code = code.trim_start();
            code.starts_with("impl Engine ") || code.starts_with("impl Engine{")
        })
        .map(|(line, _)| format!("{file}:{line}: impl Engine in {name}"))
        .collect()
}

/// `file:line` of each `.backend()` call in `api`.
fn backend_calls_in_api(file: &str, module: &[String], text: &str) -> Vec<String> {
    if module.first().map(String::as_str) != Some("api") {
        return Vec::new();
    }
    code_lines(text)
        .filter(|(_, code)| code.contains(".backend()"))
        .map(|(line, _)| format!("{file}:{line}: api calls the hardware backend"))
        .collect()
}

fn module(path: &str) -> ModulePath {
    path.split("::").map(str::to_owned).collect()
}

#[test]
fn engine_methods_live_only_in_the_verbs_and_the_view_and_api_calls_no_backend() {
    let mut problems = Vec::new();
    let files = library_files(&mut problems);
    for source in &files {
        problems.extend(engine_impls_elsewhere(
            &source.file,
            &source.module,
            &source.text,
        ));
        problems.extend(backend_calls_in_api(
            &source.file,
            &source.module,
            &source.text,
        ));
    }
    assert!(
        problems.is_empty(),
        "the claim engine's methods belong to its verbs (claims/{{mod,prepare,unprepare,\
         reconcile,health}}.rs) and its view (claims/view/); a kind of access is a component in \
         claims/access; api/ maps what the engine answers:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_engine_checks_name_what_breaks_them() {
    let text = "// impl Engine in a comment\nimpl Engine {\n    fn f() {}\n}\n";
    assert_eq!(
        engine_impls_elsewhere("x.rs", &module("claims::access::mps"), text),
        ["x.rs:2: impl Engine in claims::access::mps"]
    );
    assert!(engine_impls_elsewhere("x.rs", &module("claims::view::usage"), text).is_empty());
    assert!(engine_impls_elsewhere("x.rs", &module("claims::prepare"), text).is_empty());
    let api = "let b = engine.backend(); // engine.backend()\n// engine.backend()\n";
    assert_eq!(
        backend_calls_in_api("a.rs", &module("api::convert"), api),
        ["a.rs:1: api calls the hardware backend"]
    );
    assert!(backend_calls_in_api("a.rs", &module("run"), api).is_empty());
}

/// MPS's machinery is its kind's (`claims::access::mps`, its daemons also
/// exported as `claims::mps_daemon`). Outside the kind's folder only these
/// modules (and what is under them) may name it: the wiring, each for a
/// reason.
const MPS_WIRING: &[(&str, &str)] = &[
    ("api", "the API's conversions of what MPS reports"),
    (
        "claims::access::shared_gpu",
        "the tools both sharing kinds use hold the MPS manager",
    ),
    (
        "claims::again",
        "a refusal names a device's sharing in its kind's words",
    ),
    ("claims::error", "an MPS error is a claim error"),
    (
        "claims::request::resolve",
        "a resolved MPS request carries its daemon's key and limits",
    ),
    ("claims::view::sharing", "GetSharing shows the MPS daemons"),
    ("config", "the [mps] section, kept in the kind's folder"),
    ("opaque", "routes strategy MPS to the kind's opaque.rs"),
    ("run", "start-up builds the MPS manager"),
    ("testkit", "the simulated node's fake control daemons"),
];

/// The paths that name MPS's machinery.
const MPS_MACHINERY: &[&str] = &["claims::access::mps", "claims::mps_daemon"];

/// Each path into MPS's machinery from a module outside the kind that is
/// not its wiring, as `file:line: path`; `claims` itself may re-export.
fn mps_machinery_used_outside(file: &str, module: &[String], text: &str) -> Vec<String> {
    let joined = module.join("::");
    let inside = |prefix: &str| joined == prefix || joined.starts_with(&format!("{prefix}::"));
    if joined == "claims" || inside(MPS_MACHINERY[0]) || MPS_WIRING.iter().any(|(m, _)| inside(m)) {
        return Vec::new();
    }
    let scanned = scan(module, text).unwrap_or_default();
    scanned
        .paths
        .iter()
        .filter(|used| {
            let path = used.path.join("::");
            MPS_MACHINERY
                .iter()
                .any(|m| path == *m || path.starts_with(&format!("{m}::")))
        })
        .map(|used| format!("{file}:{}: crate::{}", used.line, used.path.join("::")))
        .collect()
}

#[test]
fn mps_machinery_is_named_only_by_its_kind_and_its_wiring() {
    let mut problems = Vec::new();
    let files = library_files(&mut problems);
    for source in &files {
        problems.extend(mps_machinery_used_outside(
            &source.file,
            &source.module,
            &source.text,
        ));
    }
    let wiring: Vec<String> = MPS_WIRING
        .iter()
        .map(|(m, why)| format!("{m} ({why})"))
        .collect();
    assert!(
        problems.is_empty(),
        "MPS's machinery is its kind's (claims/access/mps/); outside it only the wiring may name \
         it: {}. Take what these need through a kind-neutral type (e.g. supervise::DaemonState), \
         or add the module to MPS_WIRING with its reason:\n{}",
        wiring.join("; "),
        problems.join("\n")
    );
}

#[test]
fn the_mps_check_names_what_breaks_it() {
    let text = "use crate::claims::mps_daemon::DaemonState;\nuse crate::supervise::DaemonState;\n";
    assert_eq!(
        mps_machinery_used_outside("g.rs", &module("metrics::gauges"), text),
        ["g.rs:1: crate::claims::mps_daemon::DaemonState"]
    );
    assert!(mps_machinery_used_outside("s.rs", &module("run::start"), text).is_empty());
    assert!(
        mps_machinery_used_outside("m.rs", &module("claims::access::mps::view"), text).is_empty()
    );
    assert!(mps_machinery_used_outside("c.rs", &module("claims"), text).is_empty());
}
