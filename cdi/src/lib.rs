//! Container Device Interface (CDI) specs, with no GPU knowledge.
//!
//! Reading order:
//! * [`spec`]: the spec model, serialised exactly as the CDI JSON schema names
//!   its fields (empty fields are left out, so older runtimes accept the file).
//! * [`name`]: vendor, class and device-name rules, fully qualified names and
//!   transient spec file names.
//! * [`version`]: the minimum `cdiVersion` a spec's fields need, and
//!   [`version::finalize`] to declare it.
//! * [`mod@validate`]: what the CDI Go library rejects, and [`to_json`], the only
//!   way to turn a spec into bytes to write.
//! * [`atomic`]: the one durable file writer (temp, fsync, rename, fsync dir)
//!   and durable removal, used for CDI specs and for the daemon's records.
//!
//! Everything but [`atomic`] is pure: no I/O, no clock, no environment.
//!
//! Invariant: a spec this crate writes always declares the lowest `cdiVersion`
//! that its fields need, so podman 4.3 and containerd 1.7 (which accept up to
//! 0.5.0) read it whenever it uses nothing newer; [`to_json`] refuses any other.
#![forbid(unsafe_code)]

pub mod atomic;
pub mod name;
pub mod spec;
pub mod validate;
pub mod version;

pub use atomic::{
    AtomicError, AtomicStep, read_regular, remove_durable, remove_durable_observed, write_atomic,
    write_atomic_observed,
};
pub use name::{Kind, NameError, QualifiedName, transient_spec_file_name};
pub use spec::{ContainerEdits, Device, DeviceNode, Hook, Mount, Spec};
pub use validate::{SpecError, to_json, validate};
pub use version::{CdiVersion, finalize, minimum_version};

#[cfg(test)]
mod purity {
    /// The pure modules' sources, tests excluded.
    const PURE: [(&str, &str); 5] = [
        ("name.rs", include_str!("name.rs")),
        ("spec.rs", include_str!("spec.rs")),
        ("version.rs", include_str!("version.rs")),
        ("validate.rs", include_str!("validate.rs")),
        ("validate/error.rs", include_str!("validate/error.rs")),
    ];

    #[test]
    fn pure_modules_do_no_io() {
        let banned = [
            "std::fs",
            "std::io",
            "std::net",
            "std::env",
            "std::process",
            "std::time",
        ];
        for (file, source) in PURE {
            for word in banned {
                assert!(!source.contains(word), "{file} mentions {word}");
            }
        }
    }
}
