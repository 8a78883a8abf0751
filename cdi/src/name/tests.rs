use super::*;

/// Asserts `got` refuses `name` as a `part` for its character `ch` at
/// index `pos`.
fn assert_bad_char(
    got: Result<(), NameError>,
    part: NamePart,
    name: &str,
    (ch, pos): (char, usize),
) {
    match got {
        Err(NameError::BadChar {
            part: got_part,
            ch: got,
            pos: at,
            ..
        }) if got_part == part => assert_eq!((got, at), (ch, pos), "{part:?} {name:?}"),
        other => panic!("{part:?} {name:?}: {other:?}"),
    }
}

#[test]
fn valid_vendors_and_classes() {
    for name in [
        "a",
        "nvidia",
        "k8s.gpuslice.dev",
        "vendor-1.example_com",
        "A9",
        "x_y-z.0",
    ] {
        assert_eq!(
            validate_part(NamePart::Vendor, name),
            Ok(()),
            "vendor {name:?}"
        );
    }
    for name in ["gpu", "claim", "a", "mig-1g_10gb", "C0"] {
        assert_eq!(
            validate_part(NamePart::Class, name),
            Ok(()),
            "class {name:?}"
        );
    }
}

#[test]
fn invalid_vendors() {
    // (name, offending char, index)
    let cases = [
        ("1abc", '1', 0),
        ("-abc", '-', 0),
        (".abc", '.', 0),
        ("abc-", '-', 3),
        ("abc.", '.', 3),
        ("a:b", ':', 1),
        ("a/b", '/', 1),
        ("a b", ' ', 1),
        ("a=b", '=', 1),
        ("ab\u{e9}c", '\u{e9}', 2),
        ("\u{e9}", '\u{e9}', 0),
        ("_", '_', 0),
    ];
    for (name, ch, pos) in cases {
        let got = validate_part(NamePart::Vendor, name);
        assert_bad_char(got, NamePart::Vendor, name, (ch, pos));
    }
    assert_eq!(
        validate_part(NamePart::Vendor, ""),
        Err(NameError::Empty {
            part: NamePart::Vendor
        })
    );
}

#[test]
fn dot_in_class_is_refused() {
    assert_eq!(
        validate_part(NamePart::Class, "foo.bar"),
        Err(NameError::DotInClass {
            name: "foo.bar".to_owned(),
            pos: 3
        })
    );
    let err = "vendor.com/foo.bar".parse::<Kind>().unwrap_err();
    assert!(err.to_string().contains("0.6.0"), "{err}");
}

#[test]
fn device_names() {
    for name in ["0", "a", "dev0", "0dev", "GPU-0", "a:b", "a.b_c-d:e", "9"] {
        assert_eq!(validate_device_name(name), Ok(()), "device {name:?}");
    }
    let cases = [
        ("-a", '-', 0),
        ("_a", '_', 0),
        ("a-", '-', 1),
        ("a:", ':', 1),
        ("a/b", '/', 1),
        ("a=b", '=', 1),
        ("a b", ' ', 1),
        (":", ':', 0),
    ];
    for (name, ch, pos) in cases {
        assert_bad_char(
            validate_device_name(name),
            NamePart::Device,
            name,
            (ch, pos),
        );
    }
    assert_eq!(
        validate_device_name(""),
        Err(NameError::Empty {
            part: NamePart::Device
        })
    );
}

#[test]
fn error_messages_name_char_position_and_rule() {
    let err = validate_part(NamePart::Vendor, "1abc").unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid vendor \"1abc\": character '1' at index 0 is not allowed; \
         the first character must be an ASCII letter"
    );
    let err = validate_device_name("a/b").unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid device name \"a/b\": character '/' at index 1 is not allowed; \
         only ASCII letters, digits, '_', '-', '.' and ':' are allowed"
    );
    let err = validate_part(NamePart::Class, "gpu-").unwrap_err();
    assert!(
        err.to_string()
            .ends_with("the last character must be an ASCII letter or digit"),
        "{err}"
    );
}

#[test]
fn kind_parse_and_display() {
    let kind: Kind = "k8s.gpuslice.dev/claim".parse().unwrap();
    assert_eq!(kind.vendor(), "k8s.gpuslice.dev");
    assert_eq!(kind.class(), "claim");
    assert_eq!(kind.to_string(), "k8s.gpuslice.dev/claim");
    assert_eq!(Kind::new("k8s.gpuslice.dev", "claim"), Ok(kind));
}

#[test]
fn kind_parse_errors() {
    assert!(matches!(
        "foo".parse::<Kind>(),
        Err(NameError::NotAKind { .. })
    ));
    assert!(matches!(
        "/gpu".parse::<Kind>(),
        Err(NameError::Empty {
            part: NamePart::Vendor
        })
    ));
    assert!(matches!(
        "vendor.com/".parse::<Kind>(),
        Err(NameError::Empty {
            part: NamePart::Class
        })
    ));
    // Split at the first '/', so the rest is a class with a '/' in it.
    assert!(matches!(
        "vendor.com/foo/bar".parse::<Kind>(),
        Err(NameError::BadChar {
            part: NamePart::Class,
            ch: '/',
            pos: 3,
            ..
        })
    ));
}

#[test]
fn qualified_name_round_trip() {
    for input in ["vendor.com/foo=bar", "k8s.gpuslice.dev/claim=0-gpu:1"] {
        let qualified = QualifiedName::parse(input).unwrap();
        assert_eq!(qualified.to_string(), input);
        assert_eq!(input.parse::<QualifiedName>(), Ok(qualified));
    }
    let qualified = QualifiedName::parse("vendor.com/foo=bar").unwrap();
    assert_eq!(qualified.kind().to_string(), "vendor.com/foo");
    assert_eq!(qualified.name(), "bar");
    let kind = Kind::new("vendor.com", "foo").unwrap();
    assert_eq!(QualifiedName::new(kind, "bar"), Ok(qualified));
}

#[test]
fn qualified_name_errors() {
    for input in ["foo", "vendor.com/foo", "/dev/nvidia0", "/a=b", ""] {
        assert!(
            matches!(
                QualifiedName::parse(input),
                Err(NameError::NotQualified { .. })
            ),
            "{input:?}"
        );
    }
    assert!(matches!(
        QualifiedName::parse("vendor.com/foo="),
        Err(NameError::Empty {
            part: NamePart::Device
        })
    ));
    assert!(matches!(
        QualifiedName::parse("vendor.com/foo=a=b"),
        Err(NameError::BadChar { ch: '=', .. })
    ));
    assert!(matches!(
        QualifiedName::parse("foo=bar"),
        Err(NameError::NotAKind { .. })
    ));
}

#[test]
fn transient_spec_file_names() {
    let kind = Kind::new("k8s.gpuslice.dev", "claim").unwrap();
    assert_eq!(
        transient_spec_file_name(&kind, "3f2a-91bc").unwrap(),
        "k8s.gpuslice.dev-claim_3f2a-91bc.json"
    );
    for bad in ["", "a/b", "..", "-x", "x-", "a b"] {
        assert!(
            matches!(
                transient_spec_file_name(&kind, bad),
                Err(NameError::Empty {
                    part: NamePart::SpecId
                } | NameError::BadChar {
                    part: NamePart::SpecId,
                    ..
                })
            ),
            "{bad:?}"
        );
    }
}
