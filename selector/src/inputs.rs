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

use std::collections::BTreeMap;

use serde_json::Value;

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
}

/// The DeviceClasses and targets of a file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Documents {
    /// Class name -> its selectors' expressions.
    pub classes: BTreeMap<String, Vec<String>>,
    /// Claims' requests, waiting for their classes: (label, class, own).
    requests: Vec<(String, Option<String>, Vec<String>)>,
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
            "ResourceClaim" => docs.add_claim(&name, &value["spec"]["devices"])?,
            "ResourceClaimTemplate" => docs.add_claim(&name, &value["spec"]["spec"]["devices"])?,
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
        self.requests.push((label, class, own));
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
            .map(|(label, class, own)| {
                let mut target = Target {
                    label: label.clone(),
                    selectors: Vec::new(),
                    notes: Vec::new(),
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
mod tests {
    use std::collections::BTreeMap;

    use super::{InputError, parse};

    const CLAIM: &str = r#"
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: big.example.com}
spec:
  selectors:
  - cel: {expression: "device.driver == 'gpu.nvidia.com'"}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: train}
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: big.example.com
        selectors:
        - cel: {expression: "device.attributes['gpu.nvidia.com'].type == 'gpu'"}
    - name: slice
      firstAvailable:
      - name: small
        deviceClassName: mig.nvidia.com
      - name: other
        deviceClassName: unknown.example.com
"#;

    #[test]
    fn claims_take_their_class_selectors_first() {
        let known = BTreeMap::from([("mig.nvidia.com".to_owned(), vec!["m".to_owned()])]);
        let targets = parse(CLAIM)
            .and_then(|d| d.targets(&known))
            .unwrap_or_else(|e| panic!("{e}"));
        let summary: Vec<(String, Vec<String>, usize)> = targets
            .iter()
            .map(|t| {
                (
                    t.label.clone(),
                    t.selectors.iter().map(|s| s.origin.clone()).collect(),
                    t.notes.len(),
                )
            })
            .collect();
        assert_eq!(
            summary,
            [
                (
                    "claim train, request gpu".to_owned(),
                    vec![
                        "class big.example.com, selector 1".to_owned(),
                        "claim train, request gpu, selector 1".to_owned()
                    ],
                    0
                ),
                (
                    "claim train, request slice/small".to_owned(),
                    vec!["class mig.nvidia.com, selector 1".to_owned()],
                    0
                ),
                ("claim train, request slice/other".to_owned(), vec![], 1),
            ]
        );
    }

    #[test]
    fn classes_alone_and_bad_files() {
        let text =
            "kind: DeviceClass\nmetadata: {name: a}\nspec: {selectors: [{cel: {expression: x}}]}\n";
        let targets = parse(text)
            .and_then(|d| d.targets(&BTreeMap::new()))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(targets[0].label, "class a");
        assert_eq!(targets[0].selectors[0].expression, "x");
        let pod =
            parse("kind: Pod\nmetadata: {name: p}\n").and_then(|d| d.targets(&BTreeMap::new()));
        assert_eq!(pod, Err(InputError::Empty(vec!["Pod p".to_owned()])));
        assert!(matches!(parse("a: [\n"), Err(InputError::Yaml { .. })));
        assert_eq!(
            parse("").and_then(|d| d.targets(&BTreeMap::new())),
            Err(InputError::Empty(vec![]))
        );
        let no_cel = "kind: DeviceClass\nmetadata: {name: a}\nspec: {selectors: [{}]}\n";
        assert!(matches!(
            parse(no_cel),
            Err(InputError::NoExpression { .. })
        ));
    }
}
