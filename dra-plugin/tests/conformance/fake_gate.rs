//! The fake API server's DRAPartitionableDevices gate: with it off, the
//! counter fields are dropped as the real ResourceSlice strategy's
//! `dropDisabledFields` drops them (on create, dry run included, and on
//! update unless the stored slice uses them); and `dryRun=All` creates,
//! checked and answered but never stored.

use serde_json::{Value, json};

use crate::fake_apiserver::{State, invalid};
use crate::slice_rules::check_slice;

/// What the real strategy's dropDisabledFields does for
/// DRAPartitionableDevices: with the gate off, and unless `old` uses them,
/// the counter fields go.
pub fn drop_disabled(state: &State, slice: &mut Value, old: Option<&Value>) {
    let in_use = |s: &Value| {
        !s["spec"]["sharedCounters"].is_null()
            || s["spec"]["devices"]
                .as_array()
                .is_some_and(|d| d.iter().any(|d| !d["consumesCounters"].is_null()))
    };
    if state.partitionable || old.is_some_and(in_use) {
        return;
    }
    if let Some(spec) = slice["spec"].as_object_mut() {
        spec.remove("sharedCounters");
    }
    for device in slice["spec"]["devices"]
        .as_array_mut()
        .into_iter()
        .flatten()
    {
        if let Some(device) = device.as_object_mut() {
            device.remove("consumesCounters");
        }
    }
}

pub fn dry_run_create(state: &mut State, body: &[u8]) -> (u16, Value) {
    let mut slice: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    drop_disabled(state, &mut slice, None);
    let prefix = slice["metadata"]["generateName"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let name = format!("{prefix}dry00");
    if let Err(why) = check_slice(&slice, &name, &state.node) {
        state
            .violations
            .push(format!("dry-run create {name}: {why}"));
        return invalid(&why);
    }
    slice["metadata"]["name"] = json!(name);
    state.dry_runs.push(slice["spec"].clone());
    (201, slice)
}
