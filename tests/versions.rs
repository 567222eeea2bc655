//! Every place that states savechain's version agrees with the root `Cargo.toml`, the one
//! version of everything (docs/VERSIONING.md): the crates' manifests and their path
//! dependencies, the C header's macros, the rockspecs, the Lua library's `_VERSION`, the top
//! released entry of CHANGELOG.md and the README's dependency lines; and the format revision
//! of docs/FORMAT.md agrees with the constants that name it. Each check is a function of the
//! files' text that lists what disagrees, tried on the repository and on texts made wrong.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use semver::{Version, VersionReq};

/// The version everything states: the root crate's.
fn version() -> Version {
    Version::parse(env!("CARGO_PKG_VERSION")).unwrap()
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A file of the repository, by its path from the root.
fn read(rel: &str) -> String {
    fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("cannot read {rel}: {e}"))
}

/// Fails with every disagreement, one a line, and where the policy is.
fn assert_agree(what: &str, problems: Vec<String>) {
    assert!(
        problems.is_empty(),
        "{what} disagree with savechain's version {} (the root Cargo.toml; docs/VERSIONING.md \
         lists every file a release changes):\n  {}",
        version(),
        problems.join("\n  ")
    );
}

// ---- Cargo manifests -------------------------------------------------------------------

/// The workspace's members (folders, "." the root), from the root manifest.
fn members(root_manifest: &toml::Table) -> Vec<String> {
    root_manifest["workspace"]["members"]
        .as_array()
        .expect("[workspace] members is a list")
        .iter()
        .map(|m| m.as_str().expect("a member is a folder").to_owned())
        .collect()
}

fn manifest_path(member: &str) -> String {
    if member == "." {
        "Cargo.toml".to_owned()
    } else {
        format!("{member}/Cargo.toml")
    }
}

/// The dependency tables of a manifest, named as they are written
/// (`dependencies`, `target.'cfg(...)'.dev-dependencies`, ...).
fn dependency_tables(manifest: &toml::Table) -> Vec<(String, &toml::Table)> {
    const KINDS: [&str; 3] = ["dependencies", "dev-dependencies", "build-dependencies"];
    let mut tables = Vec::new();
    for kind in KINDS {
        if let Some(t) = manifest.get(kind).and_then(|t| t.as_table()) {
            tables.push((kind.to_owned(), t));
        }
    }
    if let Some(targets) = manifest.get("target").and_then(|t| t.as_table()) {
        for (cfg, target) in targets {
            for kind in KINDS {
                if let Some(t) = target.get(kind).and_then(|t| t.as_table()) {
                    tables.push((format!("target.'{cfg}'.{kind}"), t));
                }
            }
        }
    }
    tables
}

/// Each manifest (by path, with its text) states `version`, the same `rust-version` as the
/// root, and gives every path dependency the version requirement `version` exactly (the
/// crates are released together, each needing the others' release).
fn check_manifests(manifests: &[(String, String)], version: &Version) -> Vec<String> {
    let mut problems = Vec::new();
    let parsed: Vec<(&str, toml::Table)> = manifests
        .iter()
        .map(|(path, text)| {
            let table = text
                .parse::<toml::Table>()
                .unwrap_or_else(|e| panic!("{path} is not TOML: {e}"));
            (path.as_str(), table)
        })
        .collect();
    let rust_version = |t: &toml::Table| {
        t.get("package")
            .and_then(|p| p.get("rust-version"))
            .and_then(|v| v.as_str())
            .map(str::to_owned)
    };
    let root_rust = parsed.first().and_then(|(_, t)| rust_version(t));
    for (path, manifest) in &parsed {
        let stated = manifest
            .get("package")
            .and_then(|p| p.get("version"))
            .and_then(|v| v.as_str());
        if stated != Some(&version.to_string()) {
            problems.push(format!(
                "{path}: [package] version is {}, expected \"{version}\"",
                shown(stated)
            ));
        }
        let rust = rust_version(manifest);
        if rust.is_none() || rust != root_rust {
            problems.push(format!(
                "{path}: [package] rust-version is {}, expected {} (the root Cargo.toml's, \
                 the minimum .ci/package checks)",
                shown(rust.as_deref()),
                shown(root_rust.as_deref())
            ));
        }
        for (table, deps) in dependency_tables(manifest) {
            for (name, dep) in deps {
                let Some(dep) = dep.as_table() else { continue };
                if !dep.contains_key("path") {
                    continue;
                }
                let req = dep.get("version").and_then(|v| v.as_str());
                if req != Some(&version.to_string()) {
                    problems.push(format!(
                        "{path}: [{table}] {name}: a path dependency's version requirement \
                         is {}, expected \"{version}\" (crates.io needs it; the crates are \
                         released together)",
                        shown(req)
                    ));
                }
            }
        }
    }
    problems
}

fn shown(value: Option<&str>) -> String {
    value.map_or_else(|| "missing".to_owned(), |v| format!("\"{v}\""))
}

fn workspace_manifests() -> Vec<(String, String)> {
    let root_text = read("Cargo.toml");
    let root_manifest: toml::Table = root_text.parse().expect("Cargo.toml is TOML");
    let mut manifests = vec![("Cargo.toml".to_owned(), root_text)];
    for member in members(&root_manifest) {
        if member != "." {
            let path = manifest_path(&member);
            let text = read(&path);
            manifests.push((path, text));
        }
    }
    manifests
}

#[test]
fn crates_state_the_version_and_require_it_of_each_other() {
    let manifests = workspace_manifests();
    assert!(
        manifests.len() >= 4,
        "the workspace has the library, the C ABI, the Lua module and the derive crate"
    );
    assert_agree("Cargo manifests", check_manifests(&manifests, &version()));
}

#[test]
fn a_crate_of_another_version_is_named() {
    let v = version();
    let mut manifests = workspace_manifests();
    let other = format!("{}.{}.{}", v.major, v.minor + 1, v.patch);
    let path = manifests[1].0.clone();
    let text = &mut manifests[1].1;
    *text = text.replacen(
        &format!("version = \"{v}\""),
        &format!("version = \"{other}\""),
        1,
    );
    let problems = check_manifests(&manifests, &v);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].starts_with(&format!(
            "{path}: [package] version is \"{other}\", expected"
        )),
        "{}",
        problems[0]
    );
}

#[test]
fn a_path_dependency_without_the_version_is_named() {
    let v = version();
    let manifest = format!(
        "[package]\nname = \"x\"\nversion = \"{v}\"\nrust-version = \"1.89\"\n\n\
         [dependencies]\nsavechain = {{ path = \"..\" }}\n\n\
         [target.'cfg(unix)'.dev-dependencies]\nsavechain-derive = {{ version = \"0.0.1\", path = \"../derive\" }}\n"
    );
    let problems = check_manifests(&[("x/Cargo.toml".to_owned(), manifest)], &v);
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(problems[0]
        .contains("[dependencies] savechain: a path dependency's version requirement is missing"));
    assert!(problems[1].contains("[target.'cfg(unix)'.dev-dependencies] savechain-derive"));
    assert!(problems[1].contains("is \"0.0.1\""));
}

#[test]
fn a_crate_of_another_minimum_rust_is_named() {
    let v = version();
    let manifests = vec![
        (
            "Cargo.toml".to_owned(),
            format!("[package]\nversion = \"{v}\"\nrust-version = \"1.89\"\n"),
        ),
        (
            "c-abi/Cargo.toml".to_owned(),
            format!("[package]\nversion = \"{v}\"\nrust-version = \"1.90\"\n"),
        ),
    ];
    let problems = check_manifests(&manifests, &v);
    assert_eq!(
        problems,
        [
            "c-abi/Cargo.toml: [package] rust-version is \"1.90\", expected \"1.89\" (the root \
          Cargo.toml's, the minimum .ci/package checks)"
        ]
    );
}

// ---- The C header ----------------------------------------------------------------------

const HEADER: &str = "c-abi/include/savechain.h";

/// The object-like macros of a C header: name and value as written.
fn defines(header: &str) -> BTreeMap<&str, &str> {
    header
        .lines()
        .filter_map(|line| line.trim_start().strip_prefix("#define "))
        .filter_map(|rest| {
            let rest = rest.trim();
            let (name, value) = rest.split_once(char::is_whitespace)?;
            (!name.contains('(')).then(|| (name, value.trim()))
        })
        .collect()
}

/// An integer macro's value, written plainly or in parentheses, with or without a suffix.
fn integer(value: &str) -> Option<u64> {
    let v = value.trim_start_matches('(').trim_end_matches(')');
    v.trim_end_matches(['u', 'U', 'l', 'L']).parse().ok()
}

/// The header's version macros state `version` (SAVECHAIN_VERSION_NUMBER as
/// major*1000000 + minor*1000 + patch), SAVECHAIN_ABI_VERSION is an integer, and
/// SAVECHAIN_FORMAT_REVISION is the format's revision.
fn check_header(header: &str, version: &Version, revision: u64) -> Vec<String> {
    let macros = defines(header);
    let mut problems = Vec::new();
    let number = version.major * 1_000_000 + version.minor * 1000 + version.patch;
    let expected_integers = [
        ("SAVECHAIN_VERSION_MAJOR", Some(version.major)),
        ("SAVECHAIN_VERSION_MINOR", Some(version.minor)),
        ("SAVECHAIN_VERSION_PATCH", Some(version.patch)),
        ("SAVECHAIN_VERSION_NUMBER", Some(number)),
        ("SAVECHAIN_ABI_VERSION", None),
        ("SAVECHAIN_FORMAT_REVISION", Some(revision)),
    ];
    for (name, expected) in expected_integers {
        match (macros.get(name), expected) {
            (None, _) => problems.push(format!("{HEADER}: no #define {name}")),
            (Some(value), Some(expected)) if integer(value) != Some(expected) => {
                problems.push(format!("{HEADER}: {name} is {value}, expected {expected}"))
            }
            (Some(value), None) if integer(value).is_none() => {
                problems.push(format!("{HEADER}: {name} is {value}, expected an integer"))
            }
            _ => {}
        }
    }
    let quoted = format!("\"{version}\"");
    match macros.get("SAVECHAIN_VERSION") {
        None => problems.push(format!("{HEADER}: no #define SAVECHAIN_VERSION")),
        Some(value) if *value != quoted => problems.push(format!(
            "{HEADER}: SAVECHAIN_VERSION is {value}, expected {quoted}"
        )),
        _ => {}
    }
    problems
}

#[test]
fn the_header_macros_state_the_version() {
    assert_agree(
        "The C header's version macros",
        check_header(&read(HEADER), &version(), format_revision()),
    );
}

#[test]
fn a_header_of_another_version_is_named() {
    let header = "#define SAVECHAIN_VERSION_MAJOR 0\n#define SAVECHAIN_VERSION_MINOR 2\n\
                  #define SAVECHAIN_VERSION_PATCH 0\n#define SAVECHAIN_VERSION \"0.2.0\"\n\
                  #define SAVECHAIN_VERSION_NUMBER 2000\n#define SAVECHAIN_ABI_VERSION 0\n";
    let problems = check_header(header, &Version::new(0, 1, 0), 3);
    assert_eq!(
        problems,
        [
            "c-abi/include/savechain.h: SAVECHAIN_VERSION_MINOR is 2, expected 1",
            "c-abi/include/savechain.h: SAVECHAIN_VERSION_NUMBER is 2000, expected 1000",
            "c-abi/include/savechain.h: no #define SAVECHAIN_FORMAT_REVISION",
            "c-abi/include/savechain.h: SAVECHAIN_VERSION is \"0.2.0\", expected \"0.1.0\"",
        ]
    );
    let agreeing = "#define SAVECHAIN_VERSION_MAJOR 1\n#define SAVECHAIN_VERSION_MINOR 2\n\
                    #define SAVECHAIN_VERSION_PATCH 3\n#define SAVECHAIN_VERSION \"1.2.3\"\n\
                    #define SAVECHAIN_VERSION_NUMBER (1002003)\n#define SAVECHAIN_ABI_VERSION 1\n\
                    #define SAVECHAIN_FORMAT_REVISION 3u\n";
    assert_eq!(
        check_header(agreeing, &Version::new(1, 2, 3), 3),
        Vec::<String>::new()
    );
}

// ---- The rockspecs ---------------------------------------------------------------------

/// The rocks savechain ships: the one-file library and the native module.
const ROCKS: [&str; 2] = ["savechain", "savechain-native"];

/// A top-level or nested `key = "value"` of a rockspec (Lua), the first one.
fn lua_string_field<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.lines().find_map(|line| {
        let rest = line.trim_start().strip_prefix(key)?;
        let rest = rest.trim_start().strip_prefix('=')?;
        let rest = rest.trim_start();
        let quote = rest.chars().next().filter(|c| *c == '"' || *c == '\'')?;
        let rest = &rest[1..];
        Some(&rest[..rest.find(quote)?])
    })
}

/// Each rockspec (file name, text) is named `PACKAGE-VERSION-REVISION.rockspec` after its
/// `package` and `version` fields, its version is `version` (a development rockspec,
/// `scm-N`, excepted) and its source tag `v` and the version; each rock of [`ROCKS`] has
/// one rockspec of `version`.
fn check_rockspecs(rockspecs: &[(String, String)], version: &Version) -> Vec<String> {
    let mut problems = Vec::new();
    let mut released = BTreeMap::<&str, usize>::new();
    for (file, text) in rockspecs {
        let at = format!("rockspecs/{file}");
        let (Some(package), Some(rock_version)) = (
            lua_string_field(text, "package"),
            lua_string_field(text, "version"),
        ) else {
            problems.push(format!(
                "{at}: no `package = \"...\"` or `version = \"...\"` field"
            ));
            continue;
        };
        let named = format!("{package}-{rock_version}.rockspec");
        if *file != named {
            problems.push(format!("{at}: its fields name it {named}"));
        }
        let Some((release, revision)) = rock_version.rsplit_once('-') else {
            problems.push(format!("{at}: version \"{rock_version}\" has no -REVISION"));
            continue;
        };
        if release == "scm" {
            continue;
        }
        if release != version.to_string() || revision.parse::<u32>().is_err() {
            problems.push(format!(
                "{at}: version is \"{rock_version}\", expected \"{version}-N\" (N the \
                 rockspec's own revision, 1 for a new release)"
            ));
        }
        if let Some(tag) = lua_string_field(text, "tag") {
            if tag != format!("v{version}") {
                problems.push(format!(
                    "{at}: source tag is \"{tag}\", expected \"v{version}\""
                ));
            }
        }
        *released.entry(package).or_default() += 1;
    }
    for rock in ROCKS {
        match released.get(rock) {
            None => problems.push(format!(
                "rockspecs/: no rockspec of the rock {rock} at {version} \
                 ({rock}-{version}-1.rockspec)"
            )),
            Some(1) => {}
            Some(n) => problems.push(format!(
                "rockspecs/: {n} rockspecs of the rock {rock}; the folder holds the current \
                 release's only"
            )),
        }
    }
    problems
}

#[test]
fn the_rockspecs_state_the_version() {
    let dir = root().join("rockspecs");
    let mut rockspecs = Vec::new();
    if let Ok(entries) = fs::read_dir(&dir) {
        for entry in entries {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "rockspec") {
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                rockspecs.push((name, fs::read_to_string(&path).unwrap()));
            }
        }
    }
    rockspecs.sort();
    assert_agree("The rockspecs", check_rockspecs(&rockspecs, &version()));
}

#[test]
fn a_rockspec_of_another_version_is_named() {
    let v = Version::new(0, 1, 0);
    let spec = |package: &str, version: &str, tag: &str| {
        format!(
            "package = \"{package}\"\nversion = \"{version}\"\nsource = {{\n   url = \
             \"git+https://github.com/savechain/savechain.git\",\n   tag = \"{tag}\",\n}}\n"
        )
    };
    let agreeing = vec![
        (
            "savechain-0.1.0-1.rockspec".to_owned(),
            spec("savechain", "0.1.0-1", "v0.1.0"),
        ),
        (
            "savechain-native-0.1.0-2.rockspec".to_owned(),
            spec("savechain-native", "0.1.0-2", "v0.1.0"),
        ),
        (
            "savechain-scm-1.rockspec".to_owned(),
            spec("savechain", "scm-1", ""),
        ),
    ];
    assert_eq!(check_rockspecs(&agreeing, &v), Vec::<String>::new());
    let wrong = vec![(
        "savechain-0.1.0-1.rockspec".to_owned(),
        spec("savechain", "0.2.0-1", "v0.2.0"),
    )];
    assert_eq!(
        check_rockspecs(&wrong, &v),
        [
            "rockspecs/savechain-0.1.0-1.rockspec: its fields name it savechain-0.2.0-1.rockspec",
            "rockspecs/savechain-0.1.0-1.rockspec: version is \"0.2.0-1\", expected \"0.1.0-N\" \
             (N the rockspec's own revision, 1 for a new release)",
            "rockspecs/savechain-0.1.0-1.rockspec: source tag is \"v0.2.0\", expected \"v0.1.0\"",
            "rockspecs/: no rockspec of the rock savechain-native at 0.1.0 \
             (savechain-native-0.1.0-1.rockspec)",
        ]
    );
}

// ---- Lua's _VERSION ----------------------------------------------------------------------

/// The strings assigned to `_VERSION` in a Lua text (`_VERSION = "..."`, `M._VERSION =
/// "..."`), not its comparisons (`_VERSION == "Lua 5.4"`).
fn lua_versions(text: &str) -> Vec<&str> {
    let mut found = Vec::new();
    for (at, _) in text.match_indices("_VERSION") {
        let rest = text[at + "_VERSION".len()..].trim_start_matches([' ', '\t']);
        let Some(rest) = rest.strip_prefix('=') else {
            continue;
        };
        if rest.starts_with('=') {
            continue;
        }
        let rest = rest.trim_start_matches([' ', '\t']);
        let Some(quote) = rest.chars().next().filter(|c| *c == '"' || *c == '\'') else {
            continue;
        };
        if let Some(end) = rest[1..].find(quote) {
            found.push(&rest[1..1 + end]);
        }
    }
    found
}

/// The one-file library states `_VERSION` as `version`; every other `_VERSION` assigned in
/// `others` (the native module's Lua, the upgrade module) does too.
fn check_lua(library: &str, others: &[(String, String)], version: &Version) -> Vec<String> {
    let mut problems = Vec::new();
    let mut files = vec![("lua/savechain.lua".to_owned(), library.to_owned())];
    files.extend(others.iter().cloned());
    for (i, (path, text)) in files.iter().enumerate() {
        let found = lua_versions(text);
        if i == 0 && found.is_empty() {
            problems.push(format!("{path}: no `_VERSION = \"{version}\"`"));
        }
        for v in found {
            if v != version.to_string() {
                problems.push(format!(
                    "{path}: _VERSION is \"{v}\", expected \"{version}\""
                ));
            }
        }
    }
    problems
}

#[test]
fn the_lua_libraries_state_the_version() {
    let others = ["lua/savechain/upgrade.lua", "lua-module/src/native.lua"]
        .iter()
        .filter(|p| root().join(p).exists())
        .map(|p| (p.to_string(), read(p)))
        .collect::<Vec<_>>();
    assert_agree(
        "The Lua libraries' _VERSION",
        check_lua(&read("lua/savechain.lua"), &others, &version()),
    );
}

#[test]
fn a_lua_version_of_another_release_is_named() {
    let v = Version::new(0, 1, 0);
    let library = "local M = {}\nM._VERSION = \"0.1.0\"\nif _VERSION == \"Lua 5.4\" then end\n";
    assert_eq!(check_lua(library, &[], &v), Vec::<String>::new());
    let others = [(
        "lua-module/src/native.lua".to_owned(),
        "return { _VERSION='0.0.9' }".to_owned(),
    )];
    assert_eq!(
        check_lua("if _VERSION == 'Lua 5.1' then end", &others, &v),
        [
            "lua/savechain.lua: no `_VERSION = \"0.1.0\"`",
            "lua-module/src/native.lua: _VERSION is \"0.0.9\", expected \"0.1.0\"",
        ]
    );
}

// ---- CHANGELOG.md ------------------------------------------------------------------------

/// The top released entry of a Keep a Changelog file (`## [X.Y.Z] - date`; an
/// `## [Unreleased]` above it holds what is not released yet) is `version`.
fn check_changelog(changelog: &str, version: &Version) -> Vec<String> {
    let top = changelog
        .lines()
        .filter_map(|l| l.strip_prefix("## ["))
        .filter_map(|l| l.split_once(']').map(|(v, _)| v))
        .find(|v| !v.eq_ignore_ascii_case("unreleased"));
    match top {
        None => vec![format!("CHANGELOG.md: no entry `## [{version}]`")],
        Some(v) if v != version.to_string() => vec![format!(
            "CHANGELOG.md: the top entry is [{v}], expected [{version}]"
        )],
        Some(_) => Vec::new(),
    }
}

#[test]
fn the_changelog_tops_with_the_version() {
    assert_agree(
        "CHANGELOG.md",
        check_changelog(&read("CHANGELOG.md"), &version()),
    );
}

#[test]
fn a_changelog_of_another_release_is_named() {
    let v = Version::new(0, 2, 0);
    let log = "# Changelog\n\n## [Unreleased]\n\n- a\n\n## [0.1.0] - 2026-11-27\n\n- b\n";
    assert_eq!(
        check_changelog(log, &v),
        ["CHANGELOG.md: the top entry is [0.1.0], expected [0.2.0]"]
    );
    assert_eq!(
        check_changelog(log, &Version::new(0, 1, 0)),
        Vec::<String>::new()
    );
    assert_eq!(
        check_changelog("# Changelog\n\n## [Unreleased]\n", &v),
        ["CHANGELOG.md: no entry `## [0.2.0]`"]
    );
}

// ---- The README's dependency lines ---------------------------------------------------------

/// The README has a `savechain = { version = "REQ", ... }` line and each accepts `version`
/// (path dependencies state none).
fn check_readme(readme: &str, version: &Version) -> Vec<String> {
    let mut problems = Vec::new();
    let mut lines = 0;
    for (n, line) in readme.lines().enumerate() {
        let Some(rest) = line.trim_start().strip_prefix("savechain = ") else {
            continue;
        };
        let req = lua_string_field(rest.trim_start_matches(['{', ' ']), "version")
            .or_else(|| rest.strip_prefix('"').and_then(|r| r.split('"').next()));
        // A path dependency (`{ path = "../savechain", ... }`) states no version.
        let Some(req) = req else { continue };
        lines += 1;
        match VersionReq::parse(req) {
            Ok(r) if r.matches(version) => {}
            _ => problems.push(format!(
                "README.md:{}: `{}` does not accept {version}",
                n + 1,
                line.trim()
            )),
        }
    }
    if lines == 0 {
        problems.push(
            "README.md: no dependency line `savechain = { version = \"...\", ... }`".to_owned(),
        );
    }
    problems
}

fn root_rust_version() -> String {
    let manifest: toml::Table = read("Cargo.toml").parse().unwrap();
    manifest["package"]["rust-version"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn the_readme_dependency_lines_accept_the_version() {
    assert_agree(
        "README.md's dependency lines",
        check_readme(&read("README.md"), &version()),
    );
}

#[test]
fn a_readme_line_of_another_release_is_named() {
    let readme = "```toml\nsavechain = { version = \"0.1\", default-features = false }\n```\n\
                  savechain = { path = \"../savechain\" }\n";
    assert_eq!(
        check_readme(readme, &Version::new(1, 0, 0)),
        [
            "README.md:2: `savechain = { version = \"0.1\", default-features = false }` does not \
          accept 1.0.0"
        ]
    );
    assert_eq!(
        check_readme(readme, &Version::new(0, 1, 7)),
        Vec::<String>::new()
    );
    assert_eq!(
        check_readme("savechain = { path = \"..\" }\n", &Version::new(0, 1, 7)),
        ["README.md: no dependency line `savechain = { version = \"...\", ... }`"]
    );
}

// ---- The minimum Rust, where the guides state it -------------------------------------------

/// Each line of a text that names Rust and says `1.NN or later` says the manifests'
/// `rust-version`.
fn check_minimum_rust(path: &str, text: &str, rust_version: &str) -> Vec<String> {
    let mut problems = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if !line.contains("Rust") {
            continue;
        }
        for (at, _) in line.match_indices(" or later") {
            let stated = line[..at].rsplit([' ', '(']).next().unwrap_or_default();
            let is_rust_version = stated.strip_prefix("1.").is_some_and(|minor| {
                !minor.is_empty() && minor.chars().all(|c| c.is_ascii_digit() || c == '.')
            });
            if is_rust_version && stated != rust_version {
                problems.push(format!(
                    "{path}:{}: says Rust {stated} or later, the crates declare rust-version \
                     {rust_version}",
                    n + 1
                ));
            }
        }
    }
    problems
}

#[test]
fn the_guides_state_the_minimum_rust() {
    let rust_version = root_rust_version();
    let mut files = vec!["README.md".to_owned(), "lua-module/README.md".to_owned()];
    if let Ok(entries) = fs::read_dir(root().join("rockspecs")) {
        for entry in entries {
            let name = entry.unwrap().file_name().to_string_lossy().into_owned();
            if name.ends_with(".rockspec") {
                files.push(format!("rockspecs/{name}"));
            }
        }
    }
    let problems = files
        .iter()
        .flat_map(|path| check_minimum_rust(path, &read(path), &rust_version))
        .collect();
    assert_agree("The minimum Rust the guides state", problems);
}

#[test]
fn a_guide_stating_another_minimum_rust_is_named() {
    let text = "The crates need\nRust 1.85 or later.\n-- (a Rust toolchain of version 1.89 or \
                later)\nLua 5.1 or later, zstd 1.5 or later\n";
    assert_eq!(
        check_minimum_rust("README.md", text, "1.89"),
        ["README.md:2: says Rust 1.85 or later, the crates declare rust-version 1.89"]
    );
    assert_eq!(
        check_minimum_rust("x.rockspec", text, "1.85"),
        ["x.rockspec:3: says Rust 1.89 or later, the crates declare rust-version 1.85"]
    );
}

// ---- The format revision -------------------------------------------------------------------

/// The revision docs/FORMAT.md states in its opening (`Format revision N.`).
fn format_revision() -> u64 {
    let spec = read("docs/FORMAT.md");
    let (_, after) = spec
        .split_once("Format revision ")
        .expect("docs/FORMAT.md states `Format revision N.` at its top");
    let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().expect("a revision is a number")
}

/// Every Rust constant `...FORMAT_REVISION...: T = N;` in the given sources is `revision`.
fn check_revision_constants(sources: &[(String, String)], revision: u64) -> Vec<String> {
    let mut problems = Vec::new();
    for (path, text) in sources {
        for (n, line) in text.lines().enumerate() {
            let Some((before, value)) = line.split_once('=') else {
                continue;
            };
            let is_constant = before.contains("const ") && before.contains("FORMAT_REVISION");
            if !is_constant {
                continue;
            }
            let value = value.trim().trim_end_matches(';').trim();
            if value.parse::<u64>() != Ok(revision) {
                problems.push(format!(
                    "{path}:{}: `{}` is not docs/FORMAT.md's revision {revision}",
                    n + 1,
                    line.trim()
                ));
            }
        }
    }
    problems
}

fn rust_sources(dir: &Path, out: &mut Vec<(String, String)>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let rel = path
                .strip_prefix(root())
                .unwrap()
                .to_string_lossy()
                .into_owned();
            out.push((rel, fs::read_to_string(&path).unwrap()));
        }
    }
}

#[test]
fn the_format_revision_constants_agree_with_the_specification() {
    let mut sources = Vec::new();
    for dir in ["src", "c-abi/src", "lua-module/src"] {
        rust_sources(&root().join(dir), &mut sources);
    }
    let revision = format_revision();
    assert_eq!(
        savechain::FORMAT_REVISION,
        revision,
        "savechain::FORMAT_REVISION is not docs/FORMAT.md's revision"
    );
    let constants = sources
        .iter()
        .filter(|(_, text)| text.contains("FORMAT_REVISION"))
        .count();
    assert!(
        constants > 0,
        "no FORMAT_REVISION constant in src/ (src/text/mod.rs has one)"
    );
    assert_agree(
        "The format revision constants",
        check_revision_constants(&sources, revision),
    );
}

#[test]
fn a_revision_constant_of_another_revision_is_named() {
    let sources = [(
        "src/text/mod.rs".to_owned(),
        "pub(crate) const FORMAT_REVISION: u64 = 2;\nlet r = FORMAT_REVISION;\n".to_owned(),
    )];
    assert_eq!(
        check_revision_constants(&sources, 3),
        [
            "src/text/mod.rs:1: `pub(crate) const FORMAT_REVISION: u64 = 2;` is not \
          docs/FORMAT.md's revision 3"
        ]
    );
    assert_eq!(check_revision_constants(&sources, 2), Vec::<String>::new());
}
