//! Writes of a ComputeDomain's `status` subresource as the API server makes
//! them, for the two kinds the plugins send:
//!
//! - **server-side apply** ([`apply`]): the fields a manager applies are
//!   its; `status.nodes` is a list-map keyed by `name` (NVIDIA's CRD:
//!   `x-kubernetes-list-type: map`), so each manager owns its own items'
//!   fields; a field another manager owns with another value is a conflict
//!   (409) unless the apply forces, which takes it over; a field the
//!   manager owned and no longer applies is removed when nobody else owns
//!   it, and an item left with no owned field goes (that is how a node's
//!   entry leaves: applied without it);
//! - **JSON patch** ([`json_patch`], RFC 6902: `test`, `add`, `remove`,
//!   `replace`); whatever it removed is no one's any more.
//!
//! Ownership is kept per manager as field paths (`status`'s keys; for an
//! item of `nodes`, `nodes`, `k:<name>`, its key) and shown in
//! `metadata.managedFields` as the API server shows it (FieldsV1).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value, json};

/// A field path under `status`.
pub type Path = Vec<String>;
/// The fields one manager owns.
pub type FieldSet = BTreeSet<Path>;

const NODES: &str = "nodes";

fn item_key(name: &str) -> String {
    format!("k:{name}")
}

/// The fields `status` sets.
pub fn fields(status: &Value) -> FieldSet {
    let mut set = FieldSet::new();
    let Some(object) = status.as_object() else {
        return set;
    };
    for (key, value) in object {
        match value.as_array() {
            Some(items) if key == NODES => {
                if items.is_empty() {
                    set.insert(vec![key.clone()]);
                }
                for item in items {
                    let (Some(name), Some(fields)) = (item["name"].as_str(), item.as_object())
                    else {
                        continue;
                    };
                    for field in fields.keys() {
                        set.insert(vec![key.clone(), item_key(name), field.clone()]);
                    }
                }
            }
            _ => {
                set.insert(vec![key.clone()]);
            }
        }
    }
    set
}

/// The item of `nodes` named by `key` (`k:<name>`).
fn item<'a>(status: &'a Value, key: &str) -> Option<&'a Value> {
    let name = key.strip_prefix("k:")?;
    (status.get(NODES)?.as_array()?.iter()).find(|i| i["name"].as_str() == Some(name))
}

/// The value at `path` in `status`.
pub fn get<'a>(status: &'a Value, path: &[String]) -> Option<&'a Value> {
    match path {
        [key] => status.get(key),
        [_, key, field] => item(status, key)?.get(field),
        _ => None,
    }
}

fn set(status: &mut Value, path: &[String], value: Value) {
    if !status.is_object() {
        *status = json!({});
    }
    match path {
        [key] => status[key.as_str()] = value,
        [list, key, field] => {
            if !status[list.as_str()].is_array() {
                status[list.as_str()] = json!([]);
            }
            let name = key.trim_start_matches("k:");
            let items = status[list.as_str()].as_array_mut().expect("an array");
            let at = match items.iter().position(|i| i["name"].as_str() == Some(name)) {
                Some(at) => at,
                None => {
                    items.push(json!({"name": name}));
                    items.len() - 1
                }
            };
            items[at][field.as_str()] = value;
        }
        _ => {}
    }
}

fn remove(status: &mut Value, path: &[String]) {
    match path {
        [key] => {
            if let Some(object) = status.as_object_mut() {
                object.remove(key);
            }
        }
        [list, key, field] => {
            let name = key.trim_start_matches("k:");
            let Some(items) = status[list.as_str()].as_array_mut() else {
                return;
            };
            if let Some(item) = items.iter_mut().find(|i| i["name"].as_str() == Some(name))
                && let Some(object) = item.as_object_mut()
            {
                object.remove(field);
            }
        }
        _ => {}
    }
}

/// The status and owners after an apply.
#[derive(Debug, Clone, PartialEq)]
pub struct Applied {
    pub status: Value,
    pub managers: BTreeMap<String, FieldSet>,
}

/// `manager`'s apply of `applied` (a status) onto `stored`; the
/// conflicts (manager, field) when it does not force and others own a
/// field it sets with another value.
pub fn apply(
    stored: &Value,
    managers: &BTreeMap<String, FieldSet>,
    manager: &str,
    applied: &Value,
    force: bool,
) -> Result<Applied, Vec<(String, String)>> {
    let new = fields(applied);
    let mut managers = managers.clone();
    let old = managers.remove(manager).unwrap_or_default();
    let mut conflicts = Vec::new();
    for path in &new {
        for (other, owned) in &managers {
            if owned.contains(path) && get(stored, path) != get(applied, path) {
                conflicts.push((other.clone(), path.clone()));
            }
        }
    }
    if !conflicts.is_empty() && !force {
        return Err((conflicts.into_iter())
            .map(|(m, p)| (m, format!(".status.{}", p.join("."))))
            .collect());
    }
    for (other, path) in &conflicts {
        if let Some(owned) = managers.get_mut(other) {
            owned.remove(path);
        }
    }
    let mut status = if stored.is_object() {
        stored.clone()
    } else {
        json!({})
    };
    for path in &new {
        set(
            &mut status,
            path,
            get(applied, path).cloned().unwrap_or(Value::Null),
        );
    }
    let owned_by_others = |p: &Path| managers.values().any(|s| s.contains(p));
    let mut left = BTreeSet::new();
    for path in old.difference(&new) {
        if owned_by_others(path) {
            continue;
        }
        if path.len() == 3 {
            left.insert(path[1].clone());
            // The key stays while the item does: it names it.
            if path[2] == "name" {
                continue;
            }
        }
        remove(&mut status, path);
    }
    managers.insert(manager.to_owned(), new);
    for key in left {
        let owned = (managers.values().flatten()).any(|p| p.len() == 3 && p[1] == key);
        if !owned {
            let name = key.trim_start_matches("k:").to_owned();
            if let Some(items) = status[NODES].as_array_mut() {
                items.retain(|i| i["name"].as_str() != Some(name.as_str()));
            }
        }
    }
    Ok(Applied {
        managers: prune(&managers, &status),
        status,
    })
}

/// Every manager's fields that `status` still has.
pub fn prune(managers: &BTreeMap<String, FieldSet>, status: &Value) -> BTreeMap<String, FieldSet> {
    (managers.iter())
        .map(|(m, set)| {
            let kept = set.iter().filter(|p| get(status, p).is_some()).cloned();
            (m.clone(), kept.collect())
        })
        .filter(|(_, set): &(String, FieldSet)| !set.is_empty())
        .collect()
}

/// `metadata.managedFields` as the API server shows them.
pub fn managed_fields(managers: &BTreeMap<String, FieldSet>) -> Value {
    let entries: Vec<Value> = (managers.iter())
        .map(|(manager, set)| {
            let mut status = Map::new();
            for path in set {
                let mut at = &mut status;
                for (i, part) in path.iter().enumerate() {
                    let key = match part.strip_prefix("k:") {
                        Some(name) if i == 1 => format!("k:{}", json!({"name": name})),
                        _ => format!("f:{part}"),
                    };
                    let next = at.entry(key).or_insert_with(|| json!({}));
                    if i == 1 && path.len() == 3 {
                        next["."] = json!({});
                    }
                    at = next.as_object_mut().expect("an object");
                }
            }
            json!({"manager": manager, "operation": "Apply",
                   "apiVersion": "resource.nvidia.com/v1beta1", "fieldsType": "FieldsV1",
                   "fieldsV1": {"f:status": status}, "subresource": "status"})
        })
        .collect();
    Value::Array(entries)
}

/// An RFC 6901 pointer's tokens.
fn tokens(pointer: &str) -> Result<Vec<String>, String> {
    let rest = pointer
        .strip_prefix('/')
        .ok_or_else(|| format!("path {pointer:?} does not start with /"))?;
    Ok(rest
        .split('/')
        .map(|t| t.replace("~1", "/").replace("~0", "~"))
        .collect())
}

/// `ops` (a JSON patch) applied to `doc`, all or nothing.
pub fn json_patch(doc: &Value, ops: &Value) -> Result<Value, String> {
    let mut out = doc.clone();
    for op in ops.as_array().ok_or("a JSON patch is an array")? {
        let path = op["path"].as_str().ok_or("an operation without a path")?;
        let mut parts = tokens(path)?;
        let last = parts.pop().ok_or("an empty path")?;
        let parent_pointer: String = parts
            .iter()
            .map(|t| format!("/{}", t.replace('~', "~0").replace('/', "~1")))
            .collect();
        let parent = out
            .pointer_mut(&parent_pointer)
            .ok_or_else(|| format!("path {path}: its parent does not exist"))?;
        match op["op"].as_str().unwrap_or_default() {
            "test" => {
                let found = match parent {
                    Value::Array(items) => last.parse::<usize>().ok().and_then(|i| items.get(i)),
                    other => other.get(&last),
                };
                if found != Some(&op["value"]) {
                    return Err(format!(
                        "testing value {path} failed: found {}",
                        found.unwrap_or(&Value::Null)
                    ));
                }
            }
            "remove" => {
                let gone = match parent {
                    Value::Array(items) => last
                        .parse::<usize>()
                        .ok()
                        .filter(|i| *i < items.len())
                        .map(|i| items.remove(i)),
                    Value::Object(map) => map.remove(&last),
                    _ => None,
                };
                gone.ok_or_else(|| format!("remove {path}: nothing there"))?;
            }
            "add" | "replace" => {
                let value = op["value"].clone();
                match parent {
                    Value::Array(items) if last == "-" => items.push(value),
                    Value::Array(items) => {
                        let i: usize = last.parse().map_err(|_| format!("{path}: not an index"))?;
                        if op["op"] == "add" && i <= items.len() {
                            items.insert(i, value);
                        } else if i < items.len() {
                            items[i] = value;
                        } else {
                            return Err(format!("{path}: index out of range"));
                        }
                    }
                    Value::Object(map) => {
                        map.insert(last, value);
                    }
                    _ => return Err(format!("{path}: its parent is not a container")),
                }
            }
            other => return Err(format!("operation {other:?} is not supported here")),
        }
    }
    Ok(out)
}
