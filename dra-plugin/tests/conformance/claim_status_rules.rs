//! The fake API server's rules for a driver's writes of ResourceClaim
//! status (`PATCH …/resourceclaims/{name}/status`, server-side apply), as
//! the real one applies them (resource.k8s.io/v1 validation, the Node
//! authorizer, and from 1.36 the `resourceclaims/driver` check):
//! - the caller's identity ([`Identity`]): a Node may never patch claim
//!   status (403, as the Node authorizer); a ServiceAccount may change only
//!   the entries of the drivers it is granted, and, with granular
//!   authorization on, only of claims allocated on its node
//!   (`allocation.nodeSelector`: `associated-node:patch`; no
//!   `arbitrary-node` grant here); only modified drivers are checked;
//! - the body holds only `metadata{name,namespace,uid}` and
//!   `status.devices` (anything else needs `resourceclaims/binding`: 403);
//!   a uid other than the stored one is 409;
//! - each entry: its key among the allocation's results ("must be an
//!   allocated device in the claim", 422), at most 8 conditions each
//!   metav1-valid, `data` a JSON object of at most 10240 bytes, no
//!   `networkData`, no key twice;
//! - server-side apply: entries are owned per field manager; an apply
//!   replaces that manager's set and leaves others' entries alone; `force`
//!   and `fieldManager` are required;
//! - DRAResourceClaimDeviceStatus off ([`ClaimStatusSwitches::gate_off`]):
//!   `status.devices` is dropped from what is stored and answered;
//! - `dryRun=All`: checked and answered, not stored.
//!
//! Every refusal is recorded in [`ClaimStatusLog::refusals`], every
//! accepted apply in [`ClaimStatusLog::applies`].

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use crate::fake_apiserver::{State, invalid, query_value};

/// Who the caller is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Identity {
    /// The kubelet's credentials (`system:node:<node>`).
    Node(String),
    /// A ServiceAccount token, bound to a Node (`node`) or not, whose role
    /// grants `associated-node:patch` on `resourceclaims/driver` for
    /// `drivers`.
    ServiceAccount {
        /// The node-name extra of a Node-bound token.
        node: Option<String>,
        /// resourceNames of its `resourceclaims/driver` rule.
        drivers: Vec<String>,
    },
}

impl Default for Identity {
    fn default() -> Self {
        Self::ServiceAccount {
            node: None,
            drivers: Vec::new(),
        }
    }
}

impl Identity {
    /// The user name a SelfSubjectReview answers.
    pub fn user(&self) -> String {
        match self {
            Self::Node(node) => format!("system:node:{node}"),
            Self::ServiceAccount { .. } => {
                "system:serviceaccount:gpuslice-system:gpuslice-dra-plugin".to_owned()
            }
        }
    }
}

/// The switches a test sets.
#[derive(Debug, Clone, Default)]
pub struct ClaimStatusSwitches {
    /// DRAResourceClaimDeviceStatus off: `status.devices` dropped.
    pub gate_off: bool,
    /// DRAResourceClaimGranularStatusAuthorization off (1.34, 1.35): only
    /// the status permission counts.
    pub granular_authz_off: bool,
    /// The caller.
    pub identity: Identity,
}

/// What happened.
#[derive(Debug, Clone, Default)]
pub struct ClaimStatusLog {
    /// "ns/name" of every accepted apply (dry runs as "dry-run ns/name").
    pub applies: Vec<String>,
    /// Every refusal: "ns/name: code why".
    pub refusals: Vec<String>,
    /// Owner (field manager) of each stored entry, per claim.
    pub owners: BTreeMap<(String, String), BTreeMap<EntryKey, String>>,
}

/// driver, pool, device, shareID.
pub type EntryKey = (String, String, String, String);

fn key(entry: &Value) -> EntryKey {
    let s = |k: &str| entry[k].as_str().unwrap_or_default().to_owned();
    (s("driver"), s("pool"), s("device"), s("shareID"))
}

fn status_error(code: u16, reason: &str, message: &str) -> (u16, Value) {
    (
        code,
        json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": reason,
               "code": code, "message": message}),
    )
}

/// `POST /apis/authentication.k8s.io/v1/selfsubjectreviews`.
pub fn self_subject_review(state: &State) -> (u16, Value) {
    (
        201,
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview",
               "metadata": {}, "status": {"userInfo": {"username": state.claim_status.identity.user()}}}),
    )
}

/// `PATCH /apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims/{name}/status`.
pub fn patch_status(
    state: &mut State,
    ns: &str,
    name: &str,
    query: &str,
    body: &[u8],
) -> (u16, Value) {
    let dry_run = query_value(query, "dryRun").as_deref() == Some("All");
    let at = format!("{ns}/{name}");
    match check_and_merge(state, ns, name, query, body) {
        Err((code, answer)) => {
            let why = answer["message"].as_str().unwrap_or_default().to_owned();
            state
                .claim_status_log
                .refusals
                .push(format!("{at}: {code} {why}"));
            (code, answer)
        }
        Ok((mut claim, owners)) => {
            if state.claim_status.gate_off
                && let Some(status) = claim["status"].as_object_mut()
            {
                status.remove("devices");
            }
            if dry_run {
                state.claim_status_log.applies.push(format!("dry-run {at}"));
            } else {
                state.claim_status_log.applies.push(at);
                let owners = if state.claim_status.gate_off {
                    BTreeMap::new()
                } else {
                    owners
                };
                state
                    .claim_status_log
                    .owners
                    .insert((ns.to_owned(), name.to_owned()), owners);
                state
                    .claims
                    .insert((ns.to_owned(), name.to_owned()), claim.clone());
            }
            (200, claim)
        }
    }
}

type Merged = (Value, BTreeMap<EntryKey, String>);

fn check_and_merge(
    state: &State,
    ns: &str,
    name: &str,
    query: &str,
    body: &[u8],
) -> Result<Merged, (u16, Value)> {
    let identity = &state.claim_status.identity;
    if let Identity::Node(_) = identity {
        return Err(status_error(
            403,
            "Forbidden",
            &format!(
                "resourceclaims.resource.k8s.io \"{name}\" is forbidden: User \"{}\" cannot \
                 patch resource \"resourceclaims/status\" in API group \"resource.k8s.io\" in \
                 the namespace \"{ns}\": can only get individual resources of this type",
                identity.user()
            ),
        ));
    }
    let Some(manager) = query_value(query, "fieldManager") else {
        return Err(status_error(
            400,
            "BadRequest",
            "PATCH application/apply-patch+yaml requires fieldManager",
        ));
    };
    if query_value(query, "force").as_deref() != Some("true") {
        return Err(status_error(
            409,
            "Conflict",
            "apply without force: conflicts are not modelled here; send force=true",
        ));
    }
    let Some(stored) = state.claims.get(&(ns.to_owned(), name.to_owned())) else {
        return Err(status_error(
            404,
            "NotFound",
            &format!("resourceclaims.resource.k8s.io \"{name}\" not found"),
        ));
    };
    let applied: Value = serde_json::from_slice(body)
        .map_err(|e| status_error(400, "BadRequest", &format!("body is not JSON: {e}")))?;
    check_shape(&applied, ns, name)?;
    if applied["metadata"]["uid"] != stored["metadata"]["uid"] {
        return Err(status_error(
            409,
            "Conflict",
            &format!(
                "Precondition failed: UID in precondition: {}, UID in object meta: {}",
                applied["metadata"]["uid"], stored["metadata"]["uid"]
            ),
        ));
    }
    let sent: Vec<Value> = applied["status"]["devices"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let allocated: BTreeSet<EntryKey> = stored["status"]["allocation"]["devices"]["results"]
        .as_array()
        .into_iter()
        .flatten()
        .map(key)
        .collect();
    let mut seen = BTreeSet::new();
    for (i, entry) in sent.iter().enumerate() {
        let k = key(entry);
        if !seen.insert(k.clone()) {
            return Err(invalid(&format!(
                "status.devices[{i}]: Duplicate value: {k:?}"
            )));
        }
        check_entry(entry, i, &k, &allocated)?;
    }
    // Server-side apply: this manager's entries are replaced by what it
    // sent; every other manager's stay (an entry of no recorded manager
    // belongs to another).
    let owners_before = state
        .claim_status_log
        .owners
        .get(&(ns.to_owned(), name.to_owned()))
        .cloned()
        .unwrap_or_default();
    let before: Vec<Value> = stored["status"]["devices"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut after: Vec<Value> = before
        .iter()
        .filter(|e| {
            let k = key(e);
            owners_before.get(&k).is_none_or(|m| *m != manager) && !seen.contains(&k)
        })
        .cloned()
        .collect();
    after.extend(sent.iter().cloned());
    let mut owners: BTreeMap<EntryKey, String> = owners_before
        .into_iter()
        .filter(|(k, m)| *m != manager && !seen.contains(k))
        .collect();
    for k in &seen {
        owners.insert(k.clone(), manager.clone());
    }
    authorize(state, stored, name, &before, &after)?;
    let mut claim = stored.clone();
    claim["status"]["devices"] = Value::Array(after);
    Ok((claim, owners))
}

fn check_shape(applied: &Value, ns: &str, name: &str) -> Result<(), (u16, Value)> {
    let top: BTreeSet<&str> = applied
        .as_object()
        .map(|o| o.keys().map(String::as_str).collect())
        .unwrap_or_default();
    let meta: BTreeSet<&str> = applied["metadata"]
        .as_object()
        .map(|o| o.keys().map(String::as_str).collect())
        .unwrap_or_default();
    let status: BTreeSet<&str> = applied["status"]
        .as_object()
        .map(|o| o.keys().map(String::as_str).collect())
        .unwrap_or_default();
    let allowed_top = BTreeSet::from(["apiVersion", "kind", "metadata", "status"]);
    let allowed_meta = BTreeSet::from(["name", "namespace", "uid"]);
    if !top.is_subset(&allowed_top)
        || !meta.is_subset(&allowed_meta)
        || status != BTreeSet::from(["devices"])
    {
        return Err(status_error(
            403,
            "Forbidden",
            &format!(
                "changing fields other than status.devices of resourceclaims \"{name}\" requires \
                 resource=\"resourceclaims/binding\" (sent {top:?}, metadata {meta:?}, status {status:?})"
            ),
        ));
    }
    if applied["metadata"]["name"] != name || applied["metadata"]["namespace"] != ns {
        return Err(invalid(
            "metadata.name and metadata.namespace must match the path",
        ));
    }
    Ok(())
}

fn check_entry(
    entry: &Value,
    i: usize,
    k: &EntryKey,
    allocated: &BTreeSet<EntryKey>,
) -> Result<(), (u16, Value)> {
    let at = format!("status.devices[{i}]");
    if !allocated.contains(k) {
        return Err(invalid(&format!(
            "{at}: Invalid value: {k:?}: must be an allocated device in the claim"
        )));
    }
    if !entry["networkData"].is_null() {
        return Err(invalid(&format!(
            "{at}.networkData: not written by this driver's kind"
        )));
    }
    let conditions = entry["conditions"].as_array().cloned().unwrap_or_default();
    if conditions.len() > 8 {
        return Err(invalid(&format!(
            "{at}.conditions: Too many: {}: must have at most 8 items",
            conditions.len()
        )));
    }
    let mut types = BTreeSet::new();
    for (j, c) in conditions.iter().enumerate() {
        if let Some(why) = condition_problem(c) {
            return Err(invalid(&format!("{at}.conditions[{j}]: {why}")));
        }
        if !types.insert(c["type"].to_string()) {
            return Err(invalid(&format!(
                "{at}.conditions[{j}].type: Duplicate value"
            )));
        }
    }
    if !entry["data"].is_null() {
        if !entry["data"].is_object() {
            return Err(invalid(&format!("{at}.data: must be a JSON object")));
        }
        let size = entry["data"].to_string().len();
        if size > 10240 {
            return Err(invalid(&format!(
                "{at}.data: Too long: may not be more than 10240 bytes ({size})"
            )));
        }
    }
    Ok(())
}

/// metav1 `ValidateConditions` for one condition.
fn condition_problem(c: &Value) -> Option<String> {
    let text = |k: &str| c[k].as_str().unwrap_or_default();
    let t = text("type");
    let qualified = !t.is_empty()
        && t.rsplit('/').next().is_some_and(|n| {
            !n.is_empty()
                && n.len() <= 63
                && n.starts_with(|c: char| c.is_ascii_alphanumeric())
                && n.ends_with(|c: char| c.is_ascii_alphanumeric())
                && n.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        });
    if !qualified {
        return Some(format!("type: Invalid value: {t:?}"));
    }
    if !["True", "False", "Unknown"].contains(&text("status")) {
        return Some(format!("status: Unsupported value: {:?}", text("status")));
    }
    let r = text("reason");
    let reason_ok = !r.is_empty()
        && r.len() <= 1024
        && r.starts_with(|c: char| c.is_ascii_alphabetic())
        && r.ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
        && r.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_,:".contains(c));
    if !reason_ok {
        return Some(format!("reason: Invalid value: {r:?}"));
    }
    if text("message").len() > 32768 {
        return Some("message: Too long".to_owned());
    }
    let time = text("lastTransitionTime");
    if time.parse::<k8s_openapi::jiff::Timestamp>().is_err() {
        return Some(format!("lastTransitionTime: Required value (got {time:?})"));
    }
    None
}

/// The node a claim is allocated on: one nodeSelector term with one
/// `metadata.name In [node]` field requirement.
fn allocated_node(claim: &Value) -> Option<String> {
    let terms = claim["status"]["allocation"]["nodeSelector"]["nodeSelectorTerms"].as_array()?;
    let [term] = terms.as_slice() else {
        return None;
    };
    let fields = term["matchFields"].as_array()?;
    let [field] = fields.as_slice() else {
        return None;
    };
    let values = field["values"].as_array()?;
    match (
        field["key"].as_str(),
        field["operator"].as_str(),
        values.as_slice(),
    ) {
        (Some("metadata.name"), Some("In"), [node]) => node.as_str().map(str::to_owned),
        _ => None,
    }
}

/// The `resourceclaims/driver` check for every driver whose entries the
/// apply changes.
fn authorize(
    state: &State,
    stored: &Value,
    name: &str,
    before: &[Value],
    after: &[Value],
) -> Result<(), (u16, Value)> {
    if state.claim_status.granular_authz_off {
        return Ok(());
    }
    let Identity::ServiceAccount { node, drivers } = &state.claim_status.identity else {
        return Ok(());
    };
    let of = |list: &[Value], driver: &str| -> Vec<String> {
        let mut v: Vec<String> = list
            .iter()
            .filter(|e| e["driver"] == driver)
            .map(Value::to_string)
            .collect();
        v.sort();
        v
    };
    let mut modified: BTreeSet<String> = BTreeSet::new();
    for e in before.iter().chain(after) {
        let driver = e["driver"].as_str().unwrap_or_default();
        if of(before, driver) != of(after, driver) {
            modified.insert(driver.to_owned());
        }
    }
    let associated = node.is_some() && *node == allocated_node(stored);
    for driver in modified {
        if !(drivers.contains(&driver) && associated) {
            return Err(status_error(
                403,
                "Forbidden",
                &format!(
                    "resourceclaims.resource.k8s.io \"{name}\" is forbidden: changing \
                     status.devices requires resource=\"resourceclaims/driver\", \
                     verb=\"[associated-node:patch arbitrary-node:patch]\", name=\"{driver}\""
                ),
            ));
        }
    }
    Ok(())
}
