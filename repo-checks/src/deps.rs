//! What a package links: a walk of `cargo metadata`'s resolved graph from
//! one package over its normal dependencies (not dev-dependencies, not
//! build-dependencies), with the first path found to each package a rule
//! forbids.
//!
//! Owns: reading the `packages` and `resolve` parts of cargo metadata's JSON
//! (format version 1). Pure: the caller runs `cargo metadata` and hands in
//! the parsed JSON. A dependency counts as normal when any of its
//! `dep_kinds` has kind `null`, on any platform. The walk does not go on
//! through a forbidden package: the path to it is the finding.

use std::collections::{BTreeMap, VecDeque};

use serde_json::Value;
use thiserror::Error;

/// Metadata this walk cannot read.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum MetadataError {
    /// A part of the JSON is missing or of another type.
    #[error("cargo metadata's JSON has no {0}; is it --format-version 1 without --no-deps?")]
    Shape(&'static str),
    /// No workspace member has the name asked for.
    #[error("no workspace member is named {0:?}")]
    UnknownRoot(String),
}

/// A forbidden package the walk reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reached {
    /// Its name.
    pub package: String,
    /// The names from the root to it, both included.
    pub path: Vec<String>,
}

impl std::fmt::Display for Reached {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.path.join(" -> "))
    }
}

/// The packages `forbidden` names that workspace member `root` reaches over
/// normal dependencies, each with the shortest path to it, in the order met.
pub fn forbidden_reached(
    metadata: &Value,
    root: &str,
    forbidden: impl Fn(&str) -> bool,
) -> Result<Vec<Reached>, MetadataError> {
    let names = package_names(metadata)?;
    let graph = normal_edges(metadata)?;
    let root_id = root_id(metadata, &names, root)?;
    let mut parent: BTreeMap<&str, Option<&str>> = BTreeMap::from([(root_id, None)]);
    let mut queue = VecDeque::from([root_id]);
    let mut reached = Vec::new();
    while let Some(id) = queue.pop_front() {
        let name = names.get(id).copied().unwrap_or(id);
        if id != root_id && forbidden(name) {
            reached.push(Reached {
                package: name.to_owned(),
                path: path_to(id, &parent, &names),
            });
            continue;
        }
        for &next in graph.get(id).into_iter().flatten() {
            if !parent.contains_key(next) {
                parent.insert(next, Some(id));
                queue.push_back(next);
            }
        }
    }
    Ok(reached)
}

/// Package id -> name.
fn package_names(metadata: &Value) -> Result<BTreeMap<&str, &str>, MetadataError> {
    let packages = metadata["packages"]
        .as_array()
        .ok_or(MetadataError::Shape("packages"))?;
    packages
        .iter()
        .map(|p| match (p["id"].as_str(), p["name"].as_str()) {
            (Some(id), Some(name)) => Ok((id, name)),
            _ => Err(MetadataError::Shape("id and name of a package")),
        })
        .collect()
}

/// Node id -> the ids it depends on normally.
fn normal_edges(metadata: &Value) -> Result<BTreeMap<&str, Vec<&str>>, MetadataError> {
    let nodes = metadata["resolve"]["nodes"]
        .as_array()
        .ok_or(MetadataError::Shape("resolve.nodes"))?;
    let mut graph = BTreeMap::new();
    for node in nodes {
        let id = node["id"]
            .as_str()
            .ok_or(MetadataError::Shape("id of a resolve node"))?;
        let deps = node["deps"]
            .as_array()
            .ok_or(MetadataError::Shape("deps of a resolve node"))?;
        let normal = deps
            .iter()
            .filter(|dep| {
                dep["dep_kinds"]
                    .as_array()
                    .is_some_and(|kinds| kinds.iter().any(|k| k["kind"].is_null()))
            })
            .map(|dep| {
                dep["pkg"]
                    .as_str()
                    .ok_or(MetadataError::Shape("pkg of a dep"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        graph.insert(id, normal);
    }
    Ok(graph)
}

/// The id of the workspace member named `root`.
fn root_id<'a>(
    metadata: &'a Value,
    names: &BTreeMap<&str, &str>,
    root: &str,
) -> Result<&'a str, MetadataError> {
    let members = metadata["workspace_members"]
        .as_array()
        .ok_or(MetadataError::Shape("workspace_members"))?;
    members
        .iter()
        .filter_map(Value::as_str)
        .find(|id| names.get(id) == Some(&root))
        .ok_or_else(|| MetadataError::UnknownRoot(root.to_owned()))
}

/// The names from the root to `id`.
fn path_to(
    id: &str,
    parent: &BTreeMap<&str, Option<&str>>,
    names: &BTreeMap<&str, &str>,
) -> Vec<String> {
    let mut path = Vec::new();
    let mut at = Some(id);
    while let Some(here) = at {
        path.push(names.get(here).copied().unwrap_or(here).to_owned());
        at = parent.get(here).copied().flatten();
    }
    path.reverse();
    path
}

#[cfg(test)]
#[path = "deps_tests.rs"]
mod tests;
