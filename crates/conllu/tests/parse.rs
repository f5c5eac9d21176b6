//! The reader against hand-written CoNLL-U: every field, every skipped
//! token kind, every error variant with its line number, and recovery after
//! a malformed sentence.

use std::path::Path;

use spantree_conllu::{parse, read_file, ConlluError, Sentences};

fn row(id: &str, form: &str, head: &str, rel: &str, deps: &str) -> String {
    format!("{id}\t{form}\t_\t_\t_\t_\t{head}\t{rel}\t{deps}\t_\n")
}

#[test]
fn reads_comments_multiword_tokens_and_empty_nodes() {
    let text = [
        "# sent_id = a-1\n".to_string(),
        "# text = Vámonos al mar\n".to_string(),
        row("1-2", "Vámonos", "_", "_", "_"),
        row("1", "Vamos", "0", "root", "0:root"),
        row("2", "nos", "1", "obj", "1:obj"),
        row("3-4", "al", "_", "_", "_"),
        row("3", "a", "5", "case", "5:case"),
        row("4", "el", "5", "det", "5:det"),
        row("4.1", "ellipsis", "_", "_", "1:conj"),
        row("5", "mar", "1", "obl:arg", "1:obl:arg|4.1:nsubj"),
        "\n".to_string(),
        row("1", "Hi", "0", "root", "_"),
    ]
    .concat();
    let s = parse(&text).unwrap();
    assert_eq!(s.len(), 2);
    assert_eq!(s[0].comment("sent_id"), Some("a-1"));
    assert_eq!(s[0].comment("text"), Some("Vámonos al mar"));
    assert_eq!(s[0].forms(), vec!["Vamos", "nos", "a", "el", "mar"]);
    assert_eq!(s[0].heads(), vec![0, 1, 5, 5, 1]);
    assert_eq!(s[0].labels(), vec!["root", "obj", "case", "det", "obl:arg"]);
    // Relations keep their own colons; heads may be empty nodes.
    assert_eq!(
        s[0].words[4].enhanced,
        vec![
            ("1".to_string(), "obl:arg".to_string()),
            ("4.1".to_string(), "nsubj".to_string())
        ]
    );
    assert_eq!(s[0].line, 1);
    // The last sentence needs no trailing blank line.
    assert_eq!(s[1].heads(), vec![0]);
    assert_eq!(s[1].line, 12);
    assert!(s[1].words[0].enhanced.is_empty());
}

#[test]
fn splits_on_tabs_only_and_accepts_crlf() {
    let text = "1\tNew York\t_\t_\t_\t_\t0\troot\t_\t_\r\n\r\n";
    let s = parse(text).unwrap();
    assert_eq!(s[0].forms(), vec!["New York"]);
    // Spaces instead of tabs: one column.
    let spaces = "1 New _ _ _ _ 0 root _ _\n";
    assert_eq!(
        parse(spaces),
        Err(ConlluError::Columns { line: 1, found: 1 })
    );
}

#[test]
fn malformed_lines_are_typed_errors_with_line_numbers() {
    let cases: Vec<(String, ConlluError)> = vec![
        (
            row("1", "a", "0", "root", "_").replace("\t_\n", "\n"),
            ConlluError::Columns { line: 1, found: 9 },
        ),
        (
            row("x", "a", "0", "root", "_"),
            ConlluError::BadId {
                line: 1,
                id: "x".into(),
            },
        ),
        (
            row("2-1", "a", "_", "_", "_"),
            ConlluError::BadId {
                line: 1,
                id: "2-1".into(),
            },
        ),
        (
            row("1.x", "a", "_", "_", "_"),
            ConlluError::BadId {
                line: 1,
                id: "1.x".into(),
            },
        ),
        (
            [
                row("1", "a", "0", "root", "_"),
                row("3", "b", "1", "x", "_"),
            ]
            .concat(),
            ConlluError::OutOfOrder {
                line: 2,
                expected: 2,
                found: 3,
            },
        ),
        (
            row("1", "a", "_", "root", "_"),
            ConlluError::BadHead {
                line: 1,
                head: "_".into(),
            },
        ),
        (
            row("1", "a", "-1", "root", "_"),
            ConlluError::BadHead {
                line: 1,
                head: "-1".into(),
            },
        ),
        (
            [
                row("1", "a", "0", "root", "_"),
                row("2", "b", "7", "x", "_"),
            ]
            .concat(),
            ConlluError::HeadOutOfRange {
                line: 2,
                head: 7,
                words: 2,
            },
        ),
        (
            [
                row("1", "a", "0", "root", "_"),
                row("2", "b", "2", "x", "_"),
            ]
            .concat(),
            ConlluError::HeadOutOfRange {
                line: 2,
                head: 2,
                words: 2,
            },
        ),
        (
            row("1", "a", "0", "root", "0root"),
            ConlluError::BadEnhanced {
                line: 1,
                entry: "0root".into(),
            },
        ),
        (
            [
                "# only a comment\n".to_string(),
                row("1-2", "du", "_", "_", "_"),
            ]
            .concat(),
            ConlluError::NoWords { line: 1 },
        ),
    ];
    for (text, expected) in cases {
        assert_eq!(parse(&text), Err(expected.clone()), "{text:?}");
        assert!(expected.to_string().starts_with("line "));
    }
}

#[test]
fn iterator_resumes_after_a_bad_sentence() {
    let text = [
        row("1", "a", "0", "root", "_"),
        "\n".to_string(),
        row("1", "b", "zero", "root", "_"),
        row("2", "c", "1", "x", "_"),
        "\n\n".to_string(),
        row("1", "d", "0", "root", "_"),
        row("2", "e", "1", "x", "_"),
    ]
    .concat();
    let all: Vec<_> = Sentences::new(&text).collect();
    assert_eq!(all.len(), 3);
    assert_eq!(all[0].as_ref().unwrap().forms(), vec!["a"]);
    assert_eq!(
        all[1],
        Err(ConlluError::BadHead {
            line: 3,
            head: "zero".into()
        })
    );
    let last = all[2].as_ref().unwrap();
    assert_eq!((last.forms(), last.line), (vec!["d", "e"], 7));
}

#[test]
fn empty_text_header_comments_and_missing_file() {
    assert_eq!(parse(""), Ok(vec![]));
    assert_eq!(parse("\n\n"), Ok(vec![]));
    assert_eq!(parse("# a file header\n\n# and another\n"), Ok(vec![]));
    let after_header = [
        "# header\n\n# text = a\n".to_string(),
        row("1", "a", "0", "root", "_"),
    ]
    .concat();
    let s = parse(&after_header).unwrap();
    assert_eq!(
        (s[0].line, s[0].comments.clone()),
        (3, vec!["text = a".to_string()])
    );
    let err = read_file(Path::new("/nonexistent/x.conllu")).unwrap_err();
    assert!(matches!(err, ConlluError::Io { .. }));
}

#[test]
fn messages_name_the_line_and_the_problem() {
    // The messages a person reads, written out by hand.
    let cases = [
        (
            ConlluError::Columns { line: 4, found: 9 },
            "line 4: a token line needs 10 tab-separated columns, found 9",
        ),
        (
            ConlluError::BadId {
                line: 2,
                id: "2-1".into(),
            },
            "line 2: ID \"2-1\" is not `k`, `k-l` or `k.l`",
        ),
        (
            ConlluError::OutOfOrder {
                line: 3,
                expected: 2,
                found: 3,
            },
            "line 3: expected word ID 2, found 3",
        ),
        (
            ConlluError::BadHead {
                line: 1,
                head: "_".into(),
            },
            "line 1: HEAD \"_\" is not a word index",
        ),
        (
            ConlluError::HeadOutOfRange {
                line: 2,
                head: 7,
                words: 2,
            },
            "line 2: HEAD 7 is not another word of this 2-word sentence or 0",
        ),
        (
            ConlluError::BadEnhanced {
                line: 1,
                entry: "0root".into(),
            },
            "line 1: enhanced dependency \"0root\" is not `head:relation`",
        ),
        (
            ConlluError::NoWords { line: 5 },
            "line 5: sentence without any word",
        ),
        (
            ConlluError::Io {
                path: "x.conllu".into(),
                message: "No such file".into(),
            },
            "x.conllu: No such file",
        ),
    ];
    for (error, message) in cases {
        assert_eq!(error.to_string(), message);
    }
}
