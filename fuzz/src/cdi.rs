//! Target `cdi_roundtrip`: a CDI spec file through the crate's model.
//!
//! JSON → `Spec` → `validate` → `finalize` (declare the minimum version) →
//! `to_json` → JSON → `Spec`.
//!
//! Invariants:
//! * nothing panics;
//! * `to_json` writes bytes only for a spec that validates and declares
//!   exactly its minimum `cdiVersion`;
//! * a valid spec, finalized, still validates, serialises, and parses back
//!   to the equal model, with the same minimum version; serialising that
//!   again gives the same bytes;
//! * the minimum version never exceeds what the crate writes
//!   (`CdiVersion::LATEST`);
//! * every device of a valid spec has a fully qualified name that parses
//!   back to its kind and name.

use gpuslice_cdi::{CdiVersion, QualifiedName, Spec, finalize, minimum_version, to_json, validate};

/// Runs one input through the spec model.
pub fn check(data: &[u8]) {
    let Ok(spec) = serde_json::from_slice::<Spec>(data) else {
        return;
    };
    let minimum = minimum_version(&spec);
    assert!(
        minimum <= CdiVersion::LATEST,
        "minimum {minimum} above LATEST"
    );
    let valid = validate(&spec);
    if let Ok(bytes) = to_json(&spec) {
        assert!(valid.is_ok(), "to_json wrote an invalid spec");
        assert_eq!(
            CdiVersion::parse(&spec.cdi_version),
            Some(minimum),
            "to_json wrote a spec that does not declare its minimum version"
        );
        check_round_trip(&spec, &bytes);
    }
    if valid.is_err() {
        return;
    }
    let mut finalized = spec.clone();
    finalize(&mut finalized);
    assert_eq!(
        minimum_version(&finalized),
        minimum,
        "finalize changed the minimum"
    );
    if let Err(err) = validate(&finalized) {
        panic!("a valid spec fails validation once finalized: {err}");
    }
    let bytes = to_json(&finalized)
        .unwrap_or_else(|err| panic!("a valid, finalized spec does not serialise: {err}"));
    check_round_trip(&finalized, &bytes);
    check_names(&finalized);
}

fn check_round_trip(spec: &Spec, bytes: &[u8]) {
    let back: Spec = serde_json::from_slice(bytes)
        .unwrap_or_else(|err| panic!("to_json output does not parse: {err}"));
    assert_eq!(&back, spec, "round trip changed the spec");
    assert_eq!(
        minimum_version(&back),
        minimum_version(spec),
        "round trip changed the minimum version"
    );
    let again = to_json(&back).unwrap_or_else(|err| panic!("re-serialising failed: {err}"));
    assert_eq!(again, bytes, "serialising is not stable");
}

fn check_names(spec: &Spec) {
    for device in &spec.devices {
        let text = format!("{}={}", spec.kind, device.name);
        let name = QualifiedName::parse(&text)
            .unwrap_or_else(|err| panic!("{text:?} of a valid spec does not parse: {err}"));
        assert_eq!(name.to_string(), text, "qualified name does not print back");
        assert_eq!(
            name.name(),
            device.name,
            "qualified name lost the device name"
        );
    }
}
