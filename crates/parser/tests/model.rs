//! The model file: a saved model parses as the trained one, and bad files
//! give typed errors.

use spantree_parser::{
    train, Objective, Parser, ParserError, Structure, TrainConfig, FORMAT_VERSION,
};

fn treebank() -> Vec<spantree_parser::Sentence> {
    spantree_conllu::parse(include_str!("data/tiny.conllu")).expect("the fixture parses")
}

#[test]
fn saved_model_parses_like_the_trained_one() {
    let data = treebank();
    for (objective, structure) in [
        (Objective::Crf, Structure::Nonprojective),
        (Objective::Hinge, Structure::Projective),
        (Objective::Perceptron, Structure::Nonprojective),
    ] {
        let config = TrainConfig {
            objective,
            structure,
            epochs: 3,
            bits: 12,
            label_bits: 10,
            ..TrainConfig::default()
        };
        let trained = train(&data, &[], &config, |_| {}).expect("training");
        let path = std::env::temp_dir().join(format!(
            "spantree-model-{}-{}.json",
            std::process::id(),
            objective.name()
        ));
        trained.parser.save(&path).expect("save");
        let loaded = Parser::load(&path).expect("load");
        assert_eq!(loaded.structure, structure);
        assert_eq!(loaded.labels(), trained.parser.labels());
        for s in &data {
            assert_eq!(
                loaded.parse(s).expect("parse"),
                trained.parser.parse(s).expect("parse")
            );
        }
        let _ = std::fs::remove_file(&path);
    }
}

#[test]
fn other_versions_and_layouts_are_typed_errors() {
    let err =
        Parser::from_json(r#"{"format": "spantree-parser", "version": 2}"#, "m.json").unwrap_err();
    assert!(
        matches!(err, ParserError::Version { found: 2, expected, .. } if expected == FORMAT_VERSION),
        "{err}"
    );
    let err =
        Parser::from_json(r#"{"format": "spantree-parser", "version": 1}"#, "m.json").unwrap_err();
    assert!(matches!(err, ParserError::BadModel { .. }), "{err}");
    let err = Parser::from_json("[1, 2]", "m.json").unwrap_err();
    assert!(matches!(err, ParserError::BadModel { .. }), "{err}");
    let err = Parser::load("/nonexistent/model.json".as_ref()).unwrap_err();
    assert!(matches!(err, ParserError::Io { .. }), "{err}");
}

#[test]
fn bad_conllu_sentences_are_reported_with_lines_and_the_others_train() {
    // The fixture has 21 lines; the bad sentences start on lines 22 and 24.
    let text = format!(
        "{}1\tOops\toops\tX\t_\t_\t7\tdep\t_\t_\n\n1\tbad\tbad\tX\t_\t_\t0\troot\n\n",
        include_str!("data/tiny.conllu")
    );
    let (good, bad): (Vec<_>, Vec<_>) =
        spantree_conllu::Sentences::new(&text).partition(Result::is_ok);
    let bad: Vec<_> = bad.into_iter().map(|e| e.unwrap_err()).collect();
    assert_eq!(
        bad,
        [
            spantree_conllu::ConlluError::HeadOutOfRange {
                line: 22,
                head: 7,
                words: 1
            },
            spantree_conllu::ConlluError::Columns { line: 24, found: 8 },
        ]
    );
    let good: Vec<_> = good.into_iter().map(Result::unwrap).collect();
    assert_eq!(good.len(), 3);
    let trained = train(
        &good,
        &[],
        &TrainConfig {
            epochs: 1,
            bits: 12,
            label_bits: 10,
            ..TrainConfig::default()
        },
        |_| {},
    )
    .expect("training");
    assert_eq!(trained.sentences, 3);
}

#[test]
fn no_usable_sentence_is_a_typed_error() {
    let one_word =
        spantree_conllu::parse("1\tHi\thi\tINTJ\t_\t_\t0\troot\t_\t_\n\n").expect("parses");
    let err = train(&one_word, &[], &TrainConfig::default(), |_| {}).unwrap_err();
    assert!(matches!(err, ParserError::NoData { read: 1 }), "{err}");
    let err = train(
        &treebank(),
        &[],
        &TrainConfig {
            objective: Objective::Ge,
            structure: Structure::Projective,
            ..TrainConfig::default()
        },
        |_| {},
    )
    .unwrap_err();
    assert!(matches!(err, ParserError::Unsupported { .. }), "{err}");
}
