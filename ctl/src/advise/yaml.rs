//! `gpuslicectl advise --output yaml`: a ResourceClaimTemplate per advised
//! MIG slice, MPS share or time-slice, on the packaged DeviceClasses, named
//! `<claim>-rightsized` in the claim's namespace, the advice's reason in the
//! annotation `gpuslice.dev/advice`. A claim whose devices are not all
//! advised the same form gets no template (a comment says why); a give-back
//! is a comment. Pure: the caller judges each template before printing it.

use gpuslice_proto::gpuslice::v1 as pb;

use super::render::form;

/// What to print for one claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// A template to judge, then print.
    Template {
        /// `<namespace>/<claim>`.
        claim: String,
        /// The YAML document.
        yaml: String,
    },
    /// A comment, printed as is (lines start with `# `).
    Comment(String),
}

/// The pieces of `reply`, claim by claim; claims with nothing to change
/// (keep, abstain) give none.
pub fn pieces(reply: &pb::GetAdviceResponse, driver: &str) -> Vec<Piece> {
    reply
        .claims
        .iter()
        .filter_map(|c| piece(c, driver))
        .collect()
}

fn piece(c: &pb::ClaimAdvice, driver: &str) -> Option<Piece> {
    let r = c.claim.clone().unwrap_or_default();
    let who = format!("{}/{}", r.namespace, r.name);
    let advices: Vec<pb::Advice> = c
        .devices
        .iter()
        .map(|d| d.advice.clone().unwrap_or_default())
        .collect();
    let first = advices.first()?;
    let same = advices.iter().all(|a| form(a) == form(first));
    let changes = |a: &pb::Advice| {
        !matches!(
            a.form(),
            pb::AdviceForm::Keep | pb::AdviceForm::Abstain | pb::AdviceForm::Unspecified
        )
    };
    if !advices.iter().any(changes) {
        return None;
    }
    if !same {
        let forms: Vec<String> = c
            .devices
            .iter()
            .map(|d| {
                format!(
                    "{} {}",
                    d.device,
                    form(&d.advice.clone().unwrap_or_default())
                )
            })
            .collect();
        return Some(Piece::Comment(format!(
            "# {who}: no template: its devices are advised differently ({})\n",
            forms.join(", ")
        )));
    }
    if first.form() == pb::AdviceForm::GiveBack {
        return Some(Piece::Comment(format!(
            "# {who}: give it back: {}\n",
            first.reason
        )));
    }
    let count = u32::try_from(advices.len()).unwrap_or(u32::MAX);
    Some(Piece::Template {
        claim: who,
        yaml: template(&r, first, count, driver),
    })
}

/// A YAML double-quoted scalar (JSON's string syntax is YAML's).
fn quoted(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".to_owned())
}

fn template(r: &pb::ClaimRef, a: &pb::Advice, count: u32, driver: &str) -> String {
    let mut request = format!(
        "      - name: gpu\n        exactly:\n          deviceClassName: {}\n",
        a.device_class
    );
    if count > 1 {
        request.push_str(&format!("          count: {count}\n"));
    }
    if a.form() == pb::AdviceForm::Mig {
        request.push_str(&format!(
            "          selectors:\n          - cel:\n              expression: \"device.attributes['gpu.nvidia.com'].profile == '{}'\"\n",
            a.mig_profile
        ));
    }
    let config = match a.form() {
        pb::AdviceForm::Mps => format!(
            "      config:\n      - opaque:\n          driver: {driver}\n          parameters:\n            apiVersion: resource.nvidia.com/v1beta1\n            kind: GpuConfig\n            sharing:\n              strategy: MPS\n              mpsConfig:\n                defaultActiveThreadPercentage: {}\n      - opaque:\n          driver: {driver}\n          parameters:\n            apiVersion: gpuslice.dev/v1alpha1\n            kind: MpsMemoryConfig\n            memory: {}Mi\n",
            a.thread_percentage,
            a.memory_bytes.div_ceil(1 << 20)
        ),
        _ => String::new(),
    };
    format!(
        "apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata:\n  namespace: {}\n  name: {}\n  annotations:\n    gpuslice.dev/advice: {}\nspec:\n  spec:\n    devices:\n      requests:\n{request}{config}",
        r.namespace,
        quoted(&format!("{}-rightsized", r.name)),
        quoted(&a.reason),
    )
}
