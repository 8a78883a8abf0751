use std::collections::BTreeMap;

use super::{Entry, Manifest, ManifestError, Mismatch, Origin, Patch, compare, parse, sha256_hex};

const EMPTY_SHA: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
const ABC_SHA: &str = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

fn manifest_text(extra: &str) -> String {
    format!(
        "# comment\n\
         repository https://github.com/o/n\n\
         ref v1.0\n\
         commit {}\n\
         fetched 2026-11-25\n\
         license Apache-2.0\n\
         \n\
         file {EMPTY_SHA} LICENSE LICENSE\n\
         file {ABC_SHA} a.json schema/a.json\n{extra}",
        "0123456789abcdef0123456789abcdef01234567"
    )
}

/// The manifest of files taken from a release wheel: `wheel` lines instead
/// of the commit.
fn wheel_text(wheel: &str) -> String {
    manifest_text("").replace("commit 0123456789abcdef0123456789abcdef01234567\n", wheel)
}

fn entry(line: usize, sha256: &str, name: &str, upstream: &str) -> Entry {
    Entry {
        line,
        sha256: sha256.to_owned(),
        name: name.to_owned(),
        upstream: upstream.to_owned(),
    }
}

#[test]
fn sha256_hex_matches_the_published_vectors() {
    assert_eq!(sha256_hex(b""), EMPTY_SHA);
    assert_eq!(sha256_hex(b"abc"), ABC_SHA);
}

#[test]
fn parse_reads_every_field() {
    let manifest = parse(&manifest_text("")).expect("valid");
    assert_eq!(
        manifest,
        Manifest {
            repository: "https://github.com/o/n".to_owned(),
            reference: "v1.0".to_owned(),
            origin: Origin::Commit("0123456789abcdef0123456789abcdef01234567".to_owned()),
            fetched: "2026-11-25".to_owned(),
            license: "Apache-2.0".to_owned(),
            files: vec![
                entry(8, EMPTY_SHA, "LICENSE", "LICENSE"),
                entry(9, ABC_SHA, "a.json", "schema/a.json"),
            ],
            patches: vec![],
        }
    );
}

#[test]
fn parse_reads_paths_in_subfolders_and_patches() {
    let manifest = parse(&manifest_text(&format!(
        "file {ABC_SHA} cel/compile.go cel/compile.go\n\
         patch fix-imports.patch\n"
    )))
    .expect("valid");
    assert_eq!(
        manifest.files[2],
        entry(10, ABC_SHA, "cel/compile.go", "cel/compile.go")
    );
    assert_eq!(
        manifest.patches,
        [Patch {
            line: 11,
            name: "fix-imports.patch".to_owned()
        }]
    );
}

#[test]
fn parse_reads_a_wheel_origin() {
    let manifest = parse(&wheel_text(&format!(
        "wheel n-1.0-py3-none-any.whl {ABC_SHA}\n"
    )))
    .expect("valid");
    assert_eq!(
        manifest.origin,
        Origin::Wheel {
            file: "n-1.0-py3-none-any.whl".to_owned(),
            sha256: ABC_SHA.to_owned(),
        }
    );
}

#[test]
fn parse_refuses_what_the_refresh_script_would_not_write() {
    let full = manifest_text("");
    let cases: Vec<(String, ManifestError)> = vec![
        (
            format!("{full}colour blue\n"),
            ManifestError::UnknownKey {
                line: 10,
                key: "colour".to_owned(),
            },
        ),
        (
            format!("{full}ref v2\n"),
            ManifestError::Duplicate {
                line: 10,
                key: "ref".to_owned(),
            },
        ),
        (
            format!("{full}file {ABC_SHA} a.json other/a.json\n"),
            ManifestError::Duplicate {
                line: 10,
                key: "file a.json".to_owned(),
            },
        ),
        (
            format!("{full}patch a.json.patch\npatch a.json.patch\n"),
            ManifestError::Duplicate {
                line: 11,
                key: "patch a.json.patch".to_owned(),
            },
        ),
        (
            format!("{full}patch a.json\n"),
            ManifestError::Malformed {
                line: 10,
                what: "`a.json` must be a file name of the folder's top level ending in .patch"
                    .to_owned(),
            },
        ),
        (
            full.replace("ref v1.0\n", ""),
            ManifestError::Missing("ref"),
        ),
        (
            full.replace(&format!("file {EMPTY_SHA} LICENSE LICENSE\n"), ""),
            ManifestError::NoLicense,
        ),
        (
            full.replace("commit 0123456789abcdef0123456789abcdef01234567\n", ""),
            ManifestError::Origin,
        ),
        (
            format!("{full}wheel n-1.0-py3-none-any.whl {ABC_SHA}\n"),
            ManifestError::Origin,
        ),
        (
            wheel_text(&format!(
                "wheel n-1.0-py3-none-any.whl {ABC_SHA}\nwheel n-1.0-py3-none-any.whl {ABC_SHA}\n"
            )),
            ManifestError::Duplicate {
                line: 5,
                key: "wheel".to_owned(),
            },
        ),
    ];
    for (text, expected) in cases {
        assert_eq!(parse(&text), Err(expected), "{text}");
    }
    let malformed = [
        full.replace("https://github.com/o/n", "https://gitlab.com/o/n"),
        full.replace("https://github.com/o/n", "https://github.com/o"),
        full.replace("ref v1.0", "ref v1.0 v2.0"),
        full.replace("0123456789abcdef0123456789abcdef01234567", "0123abc"),
        full.replace("2026-11-25", "25.11.2026"),
        full.replace(ABC_SHA, "-"),
        full.replace(ABC_SHA, &ABC_SHA.to_uppercase()),
        full.replace("a.json schema", "dir//a.json schema"),
        full.replace("a.json schema", "../a.json schema"),
        full.replace("a.json schema", "dir/./a.json schema"),
        full.replace("a.json schema", ".git/a.json schema"),
        full.replace("a.json schema", "/a.json schema"),
        full.replace("a.json schema", "SOURCE schema"),
        format!("{full}patch dir/x.patch\n"),
        format!("{full}patch x.patch extra\n"),
        full.replace("schema/a.json", "../a.json"),
        full.replace("schema/a.json", "/schema/a.json"),
        full.replace("schema/a.json", "schema/a.json extra"),
        wheel_text(&format!("wheel n-1.0.tar.gz {ABC_SHA}\n")),
        wheel_text(&format!("wheel dist/n-1.0-py3-none-any.whl {ABC_SHA}\n")),
        wheel_text("wheel n-1.0-py3-none-any.whl 0123\n"),
        wheel_text("wheel n-1.0-py3-none-any.whl\n"),
    ];
    for text in malformed {
        let err = parse(&text).expect_err(&text);
        assert!(
            matches!(err, ManifestError::Malformed { .. }),
            "{text}: {err}"
        );
    }
}

#[test]
fn compare_finds_edits_losses_and_strays() {
    let manifest = parse(&manifest_text("")).expect("valid");
    let folder = |entries: &[(&str, &[u8])]| -> BTreeMap<String, Vec<u8>> {
        entries
            .iter()
            .map(|(name, bytes)| ((*name).to_owned(), bytes.to_vec()))
            .collect()
    };
    let same = folder(&[("LICENSE", b""), ("a.json", b"abc")]);
    assert_eq!(compare(&manifest, &same), Vec::<Mismatch>::new());

    let changed = folder(&[("LICENSE", b""), ("a.json", b"abd"), ("b.json", b"")]);
    let mismatches = compare(&manifest, &changed);
    assert_eq!(
        mismatches,
        [
            Mismatch::Changed {
                entry: entry(9, ABC_SHA, "a.json", "schema/a.json"),
                actual: sha256_hex(b"abd"),
            },
            Mismatch::Unlisted {
                name: "b.json".to_owned()
            },
        ]
    );
    assert!(
        mismatches[0]
            .to_string()
            .starts_with("a.json has sha256 a52d159f"),
        "{}",
        mismatches[0]
    );

    let with_patch = parse(&manifest_text("patch x.patch\n")).expect("valid");
    let patched = folder(&[("LICENSE", b""), ("a.json", b"abc"), ("x.patch", b"any")]);
    assert_eq!(compare(&with_patch, &patched), Vec::<Mismatch>::new());
    let unpatched = folder(&[("LICENSE", b""), ("a.json", b"abc")]);
    let mismatches = compare(&with_patch, &unpatched);
    assert_eq!(
        mismatches,
        [Mismatch::PatchAbsent {
            patch: Patch {
                line: 10,
                name: "x.patch".to_owned()
            }
        }]
    );
    assert!(
        mismatches[0].to_string().starts_with("x.patch is listed"),
        "{}",
        mismatches[0]
    );
    // A patch the manifest does not list is a stray like any other file.
    assert_eq!(
        compare(&manifest, &patched),
        [Mismatch::Unlisted {
            name: "x.patch".to_owned()
        }]
    );

    let lost = folder(&[("a.json", b"abc")]);
    assert_eq!(
        compare(&manifest, &lost),
        [Mismatch::Absent {
            entry: entry(8, EMPTY_SHA, "LICENSE", "LICENSE"),
        }]
    );
}
