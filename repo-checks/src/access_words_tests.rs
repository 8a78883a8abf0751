use super::{KindEnum, kind_enums};

#[test]
fn a_fieldless_enum_naming_two_kinds_is_found_with_its_line() {
    let text = "\n/// doc\nenum SharedMode { Mps, TimeSlicing }\n";
    assert_eq!(
        kind_enums(text).unwrap(),
        [KindEnum {
            name: "SharedMode".into(),
            line: 3,
            kinds: vec!["Mps".into(), "TimeSlicing".into()],
        }]
    );
}

#[test]
fn one_nested_in_a_module_is_found_too() {
    let text = "mod view { pub enum ClaimKind { Whole, Mig, Other } }";
    let found = kind_enums(text).unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].kinds, ["Whole", "Mig"]);
}

#[test]
fn variants_with_data_or_a_single_kind_are_not_counted() {
    let text = "enum DeviceSharing { Mps(Limits), TimeSlicing { interval: u8 } }\n\
                enum Form { Keep, GiveBack, Mig }\n\
                enum Mixed { Mps, Mig { profile: String } }";
    assert!(kind_enums(text).unwrap().is_empty());
}

#[test]
fn text_that_does_not_parse_is_an_error() {
    kind_enums("enum {").unwrap_err();
}
