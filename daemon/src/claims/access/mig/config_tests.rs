//! `[mig]` parsing and the rules serde cannot express: the default
//! advertise form, what each form needs, and what `create = "ahead"` may go
//! with.

use super::{MigConfig, MigCreate, MigOffering};
use crate::config::{Config, ConfigError};

fn parse(text: &str) -> Result<Config, ConfigError> {
    Config::parse(
        text,
        std::path::Path::new("/etc/gpuslice/gpuslice.toml"),
        std::path::Path::new("/etc/gpuslice"),
    )
}

fn invalid(text: &str) -> String {
    match parse(text) {
        Err(err @ ConfigError::Invalid { .. }) => err.to_string(),
        other => panic!("expected an invalid config, got {other:?}"),
    }
}

const LAYOUT: &str = "[[mig.gpu]]\nlayout = [\"3g.40gb\", \"1g.10gb\"]\n";

#[test]
fn advertise_defaults_to_auto() {
    assert_eq!(MigConfig::default().advertise, None);
    let config = parse(&format!("[mig]\n{LAYOUT}")).unwrap();
    assert_eq!(config.mig.advertise, None);
    assert_eq!(config.mig.create, MigCreate::OnPrepare);
}

#[test]
fn each_advertise_value_parses() {
    for (text, want) in [
        ("auto", None),
        ("layout", Some(MigOffering::Layout)),
        ("partitionable", Some(MigOffering::Partitionable)),
    ] {
        let config = parse(&format!("[mig]\nadvertise = \"{text}\"\n{LAYOUT}")).unwrap();
        assert_eq!(config.mig.advertise, want, "{text}");
    }
    let err = parse("[mig]\nadvertise = \"counters\"\n")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("auto") && err.contains("layout") && err.contains("partitionable"),
        "names the values: {err}"
    );
}

#[test]
fn auto_and_layout_need_a_layout_and_partitionable_does_not() {
    let entry = "[[mig.gpu]]\nindex = 0\n";
    let auto = invalid(&format!("[mig]\n{entry}"));
    assert!(
        auto.contains("mig.gpu.layout")
            && auto.contains("advertise = \"auto\"")
            && auto.contains("advertise = \"partitionable\""),
        "{auto}"
    );
    let layout = invalid(&format!("[mig]\nadvertise = \"layout\"\n{entry}"));
    assert!(layout.contains("advertise = \"layout\" needs"), "{layout}");
    parse(&format!("[mig]\nadvertise = \"partitionable\"\n{entry}")).unwrap();
}

#[test]
fn ahead_goes_with_auto_and_layout_but_not_partitionable() {
    for advertise in ["auto", "layout"] {
        let text = format!("[mig]\nadvertise = \"{advertise}\"\ncreate = \"ahead\"\n{LAYOUT}");
        assert_eq!(
            parse(&text).unwrap().mig.create,
            MigCreate::Ahead,
            "{advertise}"
        );
    }
    let err = invalid(&format!(
        "[mig]\nadvertise = \"partitionable\"\ncreate = \"ahead\"\n{LAYOUT}"
    ));
    assert!(
        err.contains("mig.create") && err.contains("advertise = \"layout\""),
        "{err}"
    );
}

#[test]
fn an_advertise_value_prints_as_the_config_spells_it() {
    for &advertise in <MigOffering as strum::VariantArray>::VARIANTS {
        let back: MigOffering = serde_json::from_str(&format!("\"{advertise}\"")).unwrap();
        assert_eq!(back, advertise);
    }
    assert_eq!(MigOffering::Partitionable.to_string(), "partitionable");
}
