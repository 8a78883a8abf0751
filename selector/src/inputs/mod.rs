//! What to match, read from YAML text: DeviceClasses and ResourceClaims (or
//! ResourceClaimTemplates), resource.k8s.io v1 or v1beta1. Pure: the caller
//! reads the files.
//!
//! A DeviceClass is one target: all its selectors. A claim gives one target
//! per request (per subrequest of `firstAvailable`): its class's selectors
//! first, then its own, all of which must hold, as the scheduler checks
//! them. A class the caller does not know leaves a note and only the
//! request's own selectors are checked. Other kinds (Pods, Namespaces) are
//! skipped, so a whole manifest can be given.
//!
//! Each claim (each template's claim spec) is also kept whole, as a
//! resource.k8s.io/v1 ResourceClaim ([`claim`]), for the allocator to judge.

use std::collections::BTreeMap;

use serde_json::Value;

pub use claim::ClaimDoc;

mod claim;

/// Why a file cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InputError {
    /// Not YAML.
    #[error("document {index}: not YAML: {message}")]
    Yaml {
        /// 1-based document number.
        index: usize,
        /// The parser's message.
        message: String,
    },
    /// A selector without an expression.
    #[error("{origin}: a selector without cel.expression (only CEL selectors exist)")]
    NoExpression {
        /// Where.
        origin: String,
    },
    /// A claim that is not a valid ResourceClaim spec.
    #[error("{label}: {message}")]
    Claim {
        /// "claim train", "template mig-pair".
        label: String,
        /// What does not parse.
        message: String,
    },
    /// Nothing to match.
    #[error("the file has no DeviceClass, ResourceClaim or ResourceClaimTemplate{}", if .0.is_empty() { String::new() } else { format!(" (only {})", .0.join(", ")) })]
    Empty(Vec<String>),
}

/// One CEL selector and where it comes from.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Labeled {
    /// "class gpu.nvidia.com, selector 1", "expression".
    pub origin: String,
    /// The CEL text.
    pub expression: String,
}

/// Selectors that must all hold for a device to be picked.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Target {
    /// "class gpu.nvidia.com", "claim train, request gpu".
    pub label: String,
    /// In the order the scheduler checks them.
    pub selectors: Vec<Labeled>,
    /// What was not checked, and why.
    pub notes: Vec<String>,
    /// The claim it belongs to (an index into [`Documents::claims`]).
    #[serde(skip)]
    pub claim: Option<usize>,
}

/// The DeviceClasses and targets of a file.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Documents {
    /// Class name -> its selectors' expressions.
    pub classes: BTreeMap<String, Vec<String>>,
    /// The claims and templates, whole, in file order.
    pub claims: Vec<ClaimDoc>,
    /// Claims' requests, waiting for their classes: (label, class, own,
    /// claim).
    requests: Vec<(String, Option<String>, Vec<String>, usize)>,
    class_order: Vec<String>,
    /// Kinds of the other documents (Pods, Namespaces...), skipped.
    pub skipped: Vec<String>,
}

/// Reads every YAML document of `text`.
pub fn parse(text: &str) -> Result<Documents, InputError> {
    let mut docs = Documents::default();
    for (i, document) in serde_norway::Deserializer::from_str(text).enumerate() {
        let index = i + 1;
        let value: Value =
            serde::Deserialize::deserialize(document).map_err(|e| InputError::Yaml {
                index,
                message: e.to_string(),
            })?;
        if value.is_null() {
            continue;
        }
        let kind = value["kind"].as_str().unwrap_or_default();
        let name = value["metadata"]["name"]
            .as_str()
            .unwrap_or("(unnamed)")
            .to_owned();
        match kind {
            "DeviceClass" => {
                let origin = format!("class {name}");
                let selectors = expressions(&value["spec"]["selectors"], &origin)?;
                docs.class_order.push(name.clone());
                docs.classes.insert(name, selectors);
            }
            "ResourceClaim" => {
                docs.claims
                    .push(ClaimDoc::new(false, &value, &value["spec"])?);
                docs.add_claim(&name, &value["spec"]["devices"])?;
            }
            "ResourceClaimTemplate" => {
                docs.claims
                    .push(ClaimDoc::new(true, &value, &value["spec"]["spec"])?);
                docs.add_claim(&name, &value["spec"]["spec"]["devices"])?;
            }
            other => docs
                .skipped
                .push(format!("{other} {name}").trim().to_owned()),
        }
    }
    Ok(docs)
}

impl Documents {
    fn add_claim(&mut self, claim: &str, devices: &Value) -> Result<(), InputError> {
        for request in devices["requests"].as_array().into_iter().flatten() {
            let name = request["name"].as_str().unwrap_or("(unnamed)");
            let label = format!("claim {claim}, request {name}");
            if let Some(subs) = request["firstAvailable"].as_array() {
                for sub in subs {
                    let sub_label =
                        format!("{label}/{}", sub["name"].as_str().unwrap_or("(unnamed)"));
                    self.add_request(sub_label, sub)?;
                }
            } else if request["exactly"].is_object() {
                self.add_request(label, &request["exactly"])?;
            } else {
                // v1beta1: the fields are on the request itself.
                self.add_request(label, request)?;
            }
        }
        Ok(())
    }

    fn add_request(&mut self, label: String, request: &Value) -> Result<(), InputError> {
        let own = expressions(&request["selectors"], &label)?;
        let class = request["deviceClassName"].as_str().map(str::to_owned);
        let claim = self.claims.len().saturating_sub(1);
        self.requests.push((label, class, own, claim));
        Ok(())
    }

    /// The targets: each claim request, or each class when there is no
    /// claim. `known` adds classes not in the file (the packaged ones).
    pub fn targets(
        &self,
        known: &BTreeMap<String, Vec<String>>,
    ) -> Result<Vec<Target>, InputError> {
        if self.requests.is_empty() {
            if self.class_order.is_empty() {
                return Err(InputError::Empty(self.skipped.clone()));
            }
            return Ok(self
                .class_order
                .iter()
                .map(|name| class_target(name, &self.classes[name]))
                .collect());
        }
        Ok(self
            .requests
            .iter()
            .map(|(label, class, own, claim)| {
                let mut target = Target {
                    label: label.clone(),
                    selectors: Vec::new(),
                    notes: Vec::new(),
                    claim: Some(*claim),
                };
                if let Some(class) = class {
                    match self.classes.get(class).or_else(|| known.get(class)) {
                        Some(selectors) => target.selectors.extend(labeled(&format!("class {class}"), selectors)),
                        None => target.notes.push(format!(
                            "class {class} is not in the file nor packaged with gpuslice: its selectors are not checked"
                        )),
                    }
                }
                target.selectors.extend(labeled(label, own));
                target
            })
            .collect())
    }
}

/// A class as a target.
pub fn class_target(name: &str, selectors: &[String]) -> Target {
    Target {
        label: format!("class {name}"),
        selectors: labeled(&format!("class {name}"), selectors),
        notes: Vec::new(),
        claim: None,
    }
}

fn labeled(origin: &str, expressions: &[String]) -> Vec<Labeled> {
    expressions
        .iter()
        .enumerate()
        .map(|(i, e)| Labeled {
            origin: format!("{origin}, selector {}", i + 1),
            expression: e.clone(),
        })
        .collect()
}

fn expressions(selectors: &Value, origin: &str) -> Result<Vec<String>, InputError> {
    selectors
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| {
            s["cel"]["expression"]
                .as_str()
                .map(str::to_owned)
                .ok_or_else(|| InputError::NoExpression {
                    origin: origin.to_owned(),
                })
        })
        .collect()
}

#[cfg(test)]
mod tests;
