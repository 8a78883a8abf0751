//! `gpuslicectl advise`: each prepared claim's right-sizing advice
//! (GetAdvice) as a table, a JSON document, or ResourceClaimTemplates.
//!
//! With `--output yaml` each template ([`yaml`]) is judged before it is
//! printed, by `match -f`'s whole-claim judge (the scheduler's allocator
//! over this node's devices as the DRA plugin publishes them, the packaged
//! DeviceClasses) on an empty node: one that would not allocate is printed
//! as `# not printed: <why>` instead.
//!
//! Exit status: 0 when every template was printed (or there were none); 1
//! when one was not, or gpusliced cannot be reached.

pub mod render;
pub mod yaml;

use std::path::PathBuf;

use anyhow::Context;
use gpuslice_proto::gpuslice::v1 as pb;
use gpuslice_proto::gpuslice::v1::gpu_slice_client::GpuSliceClient;
use gpuslice_selector::allocate::Held;
use gpuslice_selector::inputs;
use tonic::transport::Channel;

use crate::match_verdict;
use crate::matching::{PLUGIN_CONFIG, packaged, published, publishing};
use yaml::Piece;

/// `advise`'s own flags (besides `--socket` and `--output`).
#[derive(Debug, Clone, clap::Args)]
pub struct AdviseArgs {
    /// The DRA driver name the templates' opaque configs and the check use
    /// [default: driver_name of --plugin-config, else gpu.nvidia.com].
    #[arg(long)]
    driver: Option<String>,
    /// gpuslice-dra-plugin's config (driver name, publishing options);
    /// skipped when the default is absent.
    #[arg(long, value_name = "FILE", default_value = PLUGIN_CONFIG)]
    plugin_config: PathBuf,
}

/// How to print.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// The table.
    Table,
    /// The JSON document.
    Json,
    /// ResourceClaimTemplates.
    Yaml,
}

/// Runs the command; the text to print and the exit status.
pub async fn run(
    client: &mut GpuSliceClient<Channel>,
    args: &AdviseArgs,
    format: Format,
) -> anyhow::Result<(String, u8)> {
    let reply = client
        .get_advice(pb::GetAdviceRequest {})
        .await?
        .into_inner();
    match format {
        Format::Table => Ok((render::table_of(&reply), 0)),
        Format::Json => Ok((render::json_of(&reply), 0)),
        Format::Yaml => {
            let publishing = publishing(args.driver.as_deref(), &args.plugin_config)?;
            let inventory = client
                .get_inventory(pb::GetInventoryRequest {})
                .await?
                .into_inner();
            let pool = published(&inventory, &publishing);
            let judge = |yaml: &str| judged(yaml, &pool.slices);
            yaml_of(&reply, &publishing.driver, judge)
        }
    }
}

/// The templates of `reply`, each printed when `judge` finds it allocates
/// on an empty node (`Ok(None)`), else a comment with its `Ok(Some(why))`.
pub fn yaml_of(
    reply: &pb::GetAdviceResponse,
    driver: &str,
    judge: impl Fn(&str) -> anyhow::Result<Option<String>>,
) -> anyhow::Result<(String, u8)> {
    let mut out = String::new();
    let mut code = 0;
    let mut documents = 0;
    for piece in yaml::pieces(reply, driver) {
        match piece {
            Piece::Comment(text) => out.push_str(&text),
            Piece::Template { claim, yaml } => match judge(&yaml)? {
                None => {
                    if documents > 0 {
                        out.push_str("---\n");
                    }
                    documents += 1;
                    out.push_str(&yaml);
                }
                Some(why) => {
                    code = 1;
                    out.push_str(&format!("# not printed: {claim}: {why}\n"));
                }
            },
        }
    }
    if out.is_empty() {
        out.push_str("# no claim has advice to act on\n");
    }
    Ok((out, code))
}

/// `None` when the template's claim allocates on an empty node of
/// `slices`, else why not.
fn judged(
    yaml: &str,
    slices: &[k8s_openapi::api::resource::v1::ResourceSliceSpec],
) -> anyhow::Result<Option<String>> {
    let known = packaged()?;
    let docs = inputs::parse(yaml).context("a template advise made")?;
    let claim = docs
        .claims
        .first()
        .context("a template advise made has no claim")?;
    let verdict = match_verdict::verdict(claim, &known, slices, &Held::default());
    if verdict.empty_node {
        return Ok(None);
    }
    let why: Vec<String> = verdict
        .shortfalls
        .iter()
        .map(|s| s.message.clone())
        .chain(verdict.notes.iter().cloned())
        .collect();
    Ok(Some(if why.is_empty() {
        "it would not be allocated on this node".to_owned()
    } else {
        format!("it would not be allocated on this node: {}", why.join("; "))
    }))
}

#[cfg(test)]
mod tests;
