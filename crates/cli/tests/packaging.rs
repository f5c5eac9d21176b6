//! Every published crate packages its licences and its README
//! (`cargo package --list`, offline: it lists files, builds nothing).

use std::path::Path;
use std::process::Command;

const PUBLISHED: [&str; 7] = [
    "spantree-core",
    "spantree-faer",
    "spantree-exact",
    "spantree-bruteforce",
    "spantree-conllu",
    "spantree-api",
    "spantree-cli",
];

#[test]
fn every_published_crate_ships_licences_and_readme() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    for krate in PUBLISHED {
        let out = Command::new(env!("CARGO"))
            .args([
                "package",
                "--list",
                "--allow-dirty",
                "--offline",
                "-p",
                krate,
            ])
            .current_dir(&workspace)
            .output()
            .expect("cargo runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{krate}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let files: Vec<&str> = stdout.lines().collect();
        for needed in ["LICENSE-MIT", "LICENSE-APACHE", "README.md", "Cargo.toml"] {
            assert!(
                files.contains(&needed),
                "{krate} does not package {needed}: {files:?}"
            );
        }
    }
}

#[test]
fn the_manifests_name_their_readme_and_no_placeholder_host() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let root = std::fs::read_to_string(workspace.join("Cargo.toml")).unwrap();
    assert!(!root.contains("example.invalid"));
    assert!(
        !root.contains("\"="),
        "the workspace pins a version exactly"
    );
    for dir in [
        "core",
        "backend-faer",
        "backend-exact",
        "bruteforce",
        "conllu",
        "api",
        "cli",
    ] {
        let manifest =
            std::fs::read_to_string(workspace.join("crates").join(dir).join("Cargo.toml")).unwrap();
        assert!(manifest.contains("readme = \"README.md\""), "crates/{dir}");
        // Library crates take caret requirements (inherited from the
        // workspace): no exact `=` pin in a member manifest.
        assert!(
            !manifest.contains("\"="),
            "crates/{dir} pins a version exactly"
        );
    }
}
