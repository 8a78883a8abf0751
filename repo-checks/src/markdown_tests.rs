use super::{Dead, Link, Target, Why, dead_links, links, percent_decode, resolve};

fn link(line: usize, target: &str) -> Link {
    Link {
        line,
        target: target.to_owned(),
    }
}

#[test]
fn links_finds_every_kind_with_its_line() {
    let text = "# T\n\
        [a](docs/a.md) and ![img](img.png \"title\")\n\
        \n\
        [ref][r] and <https://example.com> and [x](<with space.md>)\n\
        \n\
        | col | [t](table.md) |\n\
        | --- | --- |\n\
        | [c](cell.md#frag) | x |\n\
        \n\
        [r]: ref/target.md\n";
    assert_eq!(
        links(text),
        [
            link(2, "docs/a.md"),
            link(2, "img.png"),
            link(4, "ref/target.md"),
            link(4, "https://example.com"),
            link(4, "with space.md"),
            link(6, "table.md"),
            link(8, "cell.md#frag"),
        ]
    );
}

#[test]
fn links_skips_code_html_and_undefined_references() {
    let text = "`[a](in-span.md)`\n\n```\n[b](in-block.md)\n```\n\n    [c](indented.md)\n\n\
        <a href=\"html.md\">h</a>\n\n[d][nowhere] and [e]\n";
    assert_eq!(links(text), Vec::<Link>::new());
}

#[test]
fn resolve_classifies_targets() {
    let cases: [(&str, &str, Result<Target, Why>); 16] = [
        ("README.md", "#usage", Ok(Target::Anchor)),
        ("README.md", "https://x.dev/a", Ok(Target::External)),
        ("README.md", "HTTP://x.dev", Ok(Target::External)),
        ("README.md", "mailto:a@b.c", Ok(Target::External)),
        ("README.md", "ftp://x", Err(Why::Scheme("ftp".to_owned()))),
        ("README.md", "  ", Err(Why::Empty)),
        (
            "README.md",
            "docs/a.md",
            Ok(Target::Path("docs/a.md".to_owned())),
        ),
        (
            "docs/a.md",
            "b.md#part",
            Ok(Target::Path("docs/b.md".to_owned())),
        ),
        (
            "docs/a.md",
            "../tests/?x=1",
            Ok(Target::Path("tests".to_owned())),
        ),
        (
            "docs/a.md",
            "./x/../y/./z.md",
            Ok(Target::Path("docs/y/z.md".to_owned())),
        ),
        (
            "docs/a.md",
            "/dra-plugin/x.rs",
            Ok(Target::Path("dra-plugin/x.rs".to_owned())),
        ),
        ("docs/a.md", "..", Ok(Target::Path(String::new()))),
        ("docs/a.md", "../../x.md", Err(Why::Outside)),
        ("README.md", "../other/x.md", Err(Why::Outside)),
        (
            "README.md",
            "a%20b.md",
            Ok(Target::Path("a b.md".to_owned())),
        ),
        (
            "README.md",
            "a/b:c.md",
            Ok(Target::Path("a/b:c.md".to_owned())),
        ),
    ];
    for (file, target, expected) in cases {
        assert_eq!(resolve(file, target), expected, "{target} in {file}");
    }
}

#[test]
fn percent_decode_keeps_what_is_not_an_escape() {
    assert_eq!(percent_decode("a%2Fb%41"), "a/bA");
    assert_eq!(percent_decode("100%"), "100%");
    assert_eq!(percent_decode("%zz%4"), "%zz%4");
    assert_eq!(percent_decode("%+f"), "%+f");
    assert_eq!(percent_decode("%ff"), "%ff");
    assert_eq!(percent_decode("%C3%A9"), "\u{e9}");
}

#[test]
fn dead_links_names_file_line_target_and_why() {
    let text =
        "[ok](b.md)\n[dir](../tests)\n[gone](gone.md#x)\n\n[out](../../x)\n[web](https://a.b)\n";
    let exists = |path: &str| ["docs/b.md", "tests"].contains(&path);
    let dead = dead_links("docs/a.md", text, exists);
    assert_eq!(
        dead,
        [
            Dead {
                file: "docs/a.md".to_owned(),
                line: 3,
                target: "gone.md#x".to_owned(),
                why: Why::Missing("docs/gone.md".to_owned()),
            },
            Dead {
                file: "docs/a.md".to_owned(),
                line: 5,
                target: "../../x".to_owned(),
                why: Why::Outside,
            },
        ]
    );
    assert_eq!(
        dead[0].to_string(),
        "docs/a.md:3: dead link (gone.md#x): docs/gone.md is not a file or folder of the repository"
    );
}
