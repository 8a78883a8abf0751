//! Structure-aware Prepare requests for `prepare_structured`: `arbitrary`
//! builds a [`GenRequest`] whose fields lean towards what passes (canonical
//! uids, DNS names, device names the node offers, real opaque configs) and
//! still reach every refusal (upper case, `/`, NUL, strings past every size
//! limit, unknown devices, raw JSON), then [`GenRequest::build`] turns it
//! into the proto message the service receives.

use arbitrary::Arbitrary;
use gpuslice_proto::gpuslice::v1 as pb;

/// Opaque configs as users write them (examples/dra and NVIDIA's quickstart).
const CONFIGS: [&str; 6] = [
    r#"{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig"}"#,
    r#"{"apiVersion":"resource.nvidia.com/v1beta1","kind":"MigDeviceConfig"}"#,
    r#"{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"TimeSlicing","timeSlicingConfig":{"interval":"Long"}}}"#,
    r#"{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"MPS","mpsConfig":{"defaultActiveThreadPercentage":50,"defaultPinnedDeviceMemoryLimit":"10Gi"}}}"#,
    r#"{"apiVersion":"resource.nvidia.com/v1beta1","kind":"MigDeviceConfig","sharing":{"strategy":"MPS"}}"#,
    r#"{"apiVersion":"gpuslice.dev/v1alpha1","kind":"MpsMemoryConfig","memory":"20Gi"}"#,
];

/// Names that pass Kubernetes' rules.
const NAMES: [&str; 5] = ["default", "gpu", "gpu-test5", "mig", "a.b-c"];

/// A string: a plausible one, a long run of one character, or anything.
#[derive(Debug, Arbitrary)]
pub enum GenText {
    /// One of [`NAMES`].
    Name(u8),
    /// `len` copies of `ch` (up to 64 KiB: past every limit).
    Run {
        /// How many.
        len: u16,
        /// Which.
        ch: char,
    },
    /// Whatever the fuzzer wants.
    Raw(String),
}

impl GenText {
    fn build(&self) -> String {
        match self {
            Self::Name(i) => NAMES[usize::from(*i) % NAMES.len()].to_owned(),
            Self::Run { len, ch } => std::iter::repeat_n(*ch, usize::from(*len)).collect(),
            Self::Raw(s) => s.clone(),
        }
    }
}

/// A claim uid.
#[derive(Debug, Arbitrary)]
pub enum GenUid {
    /// Canonical: lowercase, hyphenated.
    Canonical(u128),
    /// Upper case (refused: not canonical).
    Upper(u128),
    /// Anything.
    Text(GenText),
}

/// An allocated device name.
#[derive(Debug, Arbitrary)]
pub enum GenDevice {
    /// The node's device at this index (modulo their number).
    Known(u8),
    /// Anything.
    Text(GenText),
}

/// One allocated device.
#[derive(Debug, Arbitrary)]
pub struct GenAllocated {
    device: GenDevice,
    request_names: Vec<GenText>,
    pool: GenText,
    /// DRAConsumableCapacity's consumed memory, any value (negative included).
    consumed_memory_bytes: Option<i64>,
    share_id: GenText,
}

/// One opaque config.
#[derive(Debug, Arbitrary)]
pub enum GenParameters {
    /// One of [`CONFIGS`].
    Known(u8),
    /// Anything.
    Raw(String),
}

/// One opaque config entry.
#[derive(Debug, Arbitrary)]
pub struct GenConfig {
    /// `ConfigSource`, any i32 (unknown values included).
    source: i32,
    requests: Vec<GenText>,
    parameters: GenParameters,
}

/// A whole Prepare request.
#[derive(Debug, Arbitrary)]
pub struct GenRequest {
    uid: GenUid,
    namespace: GenText,
    name: GenText,
    /// None: the claim field missing.
    with_claim: bool,
    devices: Vec<GenAllocated>,
    configs: Vec<GenConfig>,
}

impl GenRequest {
    /// The proto message, device names taken from `devices`.
    pub fn build(&self, devices: &[String]) -> pb::PrepareRequest {
        let uid = match &self.uid {
            GenUid::Canonical(n) => uuid_text(*n),
            GenUid::Upper(n) => uuid_text(*n).to_uppercase(),
            GenUid::Text(t) => t.build(),
        };
        let claim = self.with_claim.then(|| pb::ClaimRef {
            uid,
            namespace: self.namespace.build(),
            name: self.name.build(),
        });
        let device_name = |d: &GenDevice| match d {
            GenDevice::Known(i) if !devices.is_empty() => {
                devices[usize::from(*i) % devices.len()].clone()
            }
            GenDevice::Known(_) => String::new(),
            GenDevice::Text(t) => t.build(),
        };
        pb::PrepareRequest {
            claim,
            devices: self
                .devices
                .iter()
                .map(|d| pb::AllocatedDevice {
                    device: device_name(&d.device),
                    request_names: d.request_names.iter().map(GenText::build).collect(),
                    pool: d.pool.build(),
                    consumed_memory_bytes: d.consumed_memory_bytes,
                    share_id: d.share_id.build(),
                })
                .collect(),
            configs: self
                .configs
                .iter()
                .map(|c| pb::OpaqueConfig {
                    source: c.source,
                    requests: c.requests.iter().map(GenText::build).collect(),
                    parameters_json: match &c.parameters {
                        GenParameters::Known(i) => {
                            CONFIGS[usize::from(*i) % CONFIGS.len()].to_owned()
                        }
                        GenParameters::Raw(s) => s.clone(),
                    },
                })
                .collect(),
        }
    }
}

/// A v4-shaped UUID in canonical text form.
fn uuid_text(n: u128) -> String {
    let hex = format!("{n:032x}");
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}
