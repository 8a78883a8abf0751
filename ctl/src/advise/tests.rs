//! The table, the JSON document and the templates of hand-made GetAdvice
//! replies; the templates parsed back as `match -f` reads them.

use gpuslice_proto::gpuslice::v1 as pb;
use gpuslice_selector::inputs;

use super::yaml::{Piece, pieces};
use super::{render, yaml_of};

const GIB: u64 = 1 << 30;

fn advice(form: pb::AdviceForm) -> pb::Advice {
    let mut a = pb::Advice {
        observed_seconds: 7_200,
        memory_peak_bytes: Some(4 * GIB),
        sm_p95_percent: Some(5),
        smallest_mig_fit: "1g.10gb".into(),
        reason: "peak 4.0 GiB, SM p95 5% (+15%) fit MIG 1g.10gb (10 GiB)".into(),
        ..pb::Advice::default()
    };
    a.set_form(form);
    match form {
        pb::AdviceForm::Mig => {
            a.mig_profile = "1g.10gb".into();
            a.memory_bytes = 10 * GIB;
            a.device_class = "mig.nvidia.com".into();
        }
        pb::AdviceForm::Mps => {
            a.memory_bytes = 5 * GIB;
            a.thread_percentage = 10;
            a.device_class = "gpu.nvidia.com".into();
        }
        pb::AdviceForm::Timeslicing => {
            a.timeslice_sharers = 4;
            a.memory_bytes = 20 * GIB;
            a.device_class = "shared-gpu.gpuslice.dev".into();
        }
        _ => {}
    }
    a
}

fn claim(name: &str, devices: &[(&str, pb::Advice)]) -> pb::ClaimAdvice {
    pb::ClaimAdvice {
        claim: Some(pb::ClaimRef {
            uid: format!("uid-{name}"),
            namespace: "ml".into(),
            name: name.into(),
        }),
        devices: devices
            .iter()
            .map(|(device, a)| pb::DeviceAdvice {
                device: (*device).into(),
                gpu: (*device).into(),
                current: "whole".into(),
                advice: Some(a.clone()),
            })
            .collect(),
    }
}

fn reply(claims: Vec<pb::ClaimAdvice>) -> pb::GetAdviceResponse {
    pb::GetAdviceResponse {
        enabled: true,
        now: 1_800_000_000,
        claims,
        what_if: None,
        min_observed_s: 3_600,
        headroom_percent: 15,
    }
}

fn template_of(piece: &Piece) -> &str {
    match piece {
        Piece::Template { yaml, .. } => yaml,
        Piece::Comment(c) => panic!("a comment: {c}"),
    }
}

#[test]
fn the_table_shows_each_device_with_its_advice() {
    let r = reply(vec![
        claim("notebook", &[("gpu-3", advice(pb::AdviceForm::Mig))]),
        claim("idle", &[("gpu-4", advice(pb::AdviceForm::GiveBack))]),
    ]);
    let text = render::table_of(&r);
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("CLAIM"), "{text}");
    assert!(lines[0].contains("PEAK MEM") && lines[0].contains("SM p95"));
    assert!(lines[1].starts_with("ml/notebook"), "{text}");
    for cell in ["gpu-3", "whole", "2h", "4.0 GiB", "5%", "mig 1g.10gb"] {
        assert!(lines[1].contains(cell), "{cell} in {text}");
    }
    assert!(lines[2].contains("give back"), "{text}");
}

#[test]
fn the_table_says_when_sampling_is_off_or_nothing_is_prepared() {
    let mut off = reply(Vec::new());
    off.enabled = false;
    assert!(render::table_of(&off).contains("interval_s = 0"));
    assert_eq!(
        render::table_of(&reply(Vec::new())),
        "no claim is prepared\n"
    );
}

#[test]
fn the_json_document_carries_every_field() {
    let r = reply(vec![claim(
        "notebook",
        &[("gpu-3", advice(pb::AdviceForm::Mig))],
    )]);
    let doc: serde_json::Value = serde_json::from_str(&render::json_of(&r)).unwrap();
    let a = &doc["claims"][0]["devices"][0]["advice"];
    assert_eq!(a["form"], "mig");
    assert_eq!(a["mig_profile"], "1g.10gb");
    assert_eq!(a["memory_peak_bytes"], 4 * GIB);
    assert_eq!(a["device_class"], "mig.nvidia.com");
    assert_eq!(doc["min_observed_s"], 3_600);
    assert_eq!(doc["claims"][0]["name"], "notebook");
}

#[test]
fn a_mig_template_asks_the_mig_class_for_the_profile() {
    let r = reply(vec![claim(
        "notebook",
        &[("gpu-3", advice(pb::AdviceForm::Mig))],
    )]);
    let pieces = pieces(&r, "gpu.nvidia.com");
    let yaml = template_of(&pieces[0]);
    let docs = inputs::parse(yaml).unwrap();
    let parsed = &docs.claims[0];
    assert_eq!(parsed.kind, "ResourceClaimTemplate");
    assert_eq!(
        parsed.claim.metadata.name.as_deref(),
        Some("notebook-rightsized")
    );
    assert_eq!(parsed.claim.metadata.namespace.as_deref(), Some("ml"));
    assert!(
        yaml.contains(
            "    gpuslice.dev/advice: \"peak 4.0 GiB, SM p95 5% (+15%) fit MIG 1g.10gb (10 GiB)\"\n"
        ),
        "{yaml}"
    );
    let request = &parsed
        .claim
        .spec
        .devices
        .as_ref()
        .unwrap()
        .requests
        .as_ref()
        .unwrap()[0];
    let exactly = request.exactly.as_ref().unwrap();
    assert_eq!(exactly.device_class_name, "mig.nvidia.com");
    let cel = &exactly.selectors.as_ref().unwrap()[0]
        .cel
        .as_ref()
        .unwrap()
        .expression;
    assert_eq!(
        cel,
        "device.attributes['gpu.nvidia.com'].profile == '1g.10gb'"
    );
}

#[test]
fn an_mps_template_carries_the_thread_percentage_and_memory_share() {
    let r = reply(vec![claim(
        "train",
        &[("gpu-1", advice(pb::AdviceForm::Mps))],
    )]);
    let yaml = template_of(&pieces(&r, "example.com/gpu")[0]).to_owned();
    let docs = inputs::parse(&yaml).unwrap();
    let devices = docs.claims[0].claim.spec.devices.clone().unwrap();
    let configs = devices.config.unwrap();
    assert_eq!(configs.len(), 2);
    let first = configs[0].opaque.as_ref().unwrap();
    assert_eq!(first.driver, "example.com/gpu");
    let params = serde_json::to_value(&first.parameters).unwrap();
    assert_eq!(params["sharing"]["strategy"], "MPS");
    assert_eq!(
        params["sharing"]["mpsConfig"]["defaultActiveThreadPercentage"],
        10
    );
    let second = serde_json::to_value(&configs[1].opaque.as_ref().unwrap().parameters).unwrap();
    assert_eq!(second["kind"], "MpsMemoryConfig");
    assert_eq!(second["memory"], "5120Mi");
}

#[test]
fn a_time_slice_template_uses_the_shared_class() {
    let r = reply(vec![claim(
        "batch",
        &[("gpu-2", advice(pb::AdviceForm::Timeslicing))],
    )]);
    let yaml = template_of(&pieces(&r, "gpu.nvidia.com")[0]).to_owned();
    let docs = inputs::parse(&yaml).unwrap();
    let devices = docs.claims[0].claim.spec.devices.clone().unwrap();
    let exactly = devices.requests.unwrap()[0].exactly.clone().unwrap();
    assert_eq!(exactly.device_class_name, "shared-gpu.gpuslice.dev");
    assert!(devices.config.is_none());
}

#[test]
fn two_devices_advised_alike_ask_for_two_and_unlike_get_a_comment() {
    let mig = advice(pb::AdviceForm::Mig);
    let alike = reply(vec![claim(
        "pair",
        &[("gpu-0", mig.clone()), ("gpu-1", mig.clone())],
    )]);
    assert!(template_of(&pieces(&alike, "gpu.nvidia.com")[0]).contains("count: 2"));
    let unlike = reply(vec![claim(
        "pair",
        &[("gpu-0", mig), ("gpu-1", advice(pb::AdviceForm::Keep))],
    )]);
    let Piece::Comment(text) = &pieces(&unlike, "gpu.nvidia.com")[0] else {
        panic!("a template for unlike devices");
    };
    assert!(text.starts_with("# ml/pair: no template"), "{text}");
}

#[test]
fn keep_and_abstain_print_nothing_and_give_back_a_comment() {
    let r = reply(vec![
        claim("a", &[("gpu-0", advice(pb::AdviceForm::Keep))]),
        claim("b", &[("gpu-1", advice(pb::AdviceForm::Abstain))]),
        claim("c", &[("gpu-2", advice(pb::AdviceForm::GiveBack))]),
    ]);
    let pieces = pieces(&r, "gpu.nvidia.com");
    assert_eq!(pieces.len(), 1);
    assert!(matches!(&pieces[0], Piece::Comment(c) if c.starts_with("# ml/c: give it back")));
}

#[test]
fn a_template_that_would_not_allocate_is_not_printed_and_exits_1() {
    let r = reply(vec![
        claim("fits", &[("gpu-0", advice(pb::AdviceForm::Mig))]),
        claim("nofit", &[("gpu-1", advice(pb::AdviceForm::Mps))]),
        claim("fits2", &[("gpu-2", advice(pb::AdviceForm::Timeslicing))]),
    ]);
    let judge = |yaml: &str| {
        Ok(yaml
            .contains("MpsMemoryConfig")
            .then(|| "no device of class gpu.nvidia.com".to_owned()))
    };
    let (text, code) = yaml_of(&r, "gpu.nvidia.com", judge).unwrap();
    assert_eq!(code, 1);
    assert!(
        text.contains("# not printed: ml/nofit: no device of class gpu.nvidia.com"),
        "{text}"
    );
    assert_eq!(text.matches("kind: ResourceClaimTemplate").count(), 2);
    assert_eq!(text.matches("---\n").count(), 1, "between the two printed");
    let docs = inputs::parse(&text).unwrap();
    assert_eq!(
        docs.claims.len(),
        2,
        "what is printed parses as match -f reads it"
    );
}

#[test]
fn nothing_to_act_on_says_so_and_exits_0() {
    let r = reply(vec![claim("a", &[("gpu-0", advice(pb::AdviceForm::Keep))])]);
    let (text, code) = yaml_of(&r, "gpu.nvidia.com", |_| Ok(None)).unwrap();
    assert_eq!(
        (text.as_str(), code),
        ("# no claim has advice to act on\n", 0)
    );
}

#[test]
fn the_table_ends_with_the_what_if_line() {
    let mut r = reply(vec![claim(
        "notebook",
        &[("gpu-3", advice(pb::AdviceForm::Mig))],
    )]);
    r.what_if = Some(pb::NodeWhatIf {
        gpus_freed: vec!["gpu-3".into()],
        moves: vec!["ml/notebook gpu-3 -> gpu-0 mig 1g.10gb".into()],
        mig_layouts: Vec::new(),
        summary: "accepting every advice frees 1 of 1 held GPU (gpu-3)".into(),
    });
    let text = render::table_of(&r);
    assert!(
        text.ends_with("\nwhat if: accepting every advice frees 1 of 1 held GPU (gpu-3)\n"),
        "{text}"
    );
    let doc: serde_json::Value = serde_json::from_str(&render::json_of(&r)).unwrap();
    assert_eq!(doc["what_if"]["gpus_freed"][0], "gpu-3");
}
