//! The code's shape: no imports run in a circle between the modules of one folder. Each
//! file's own code is read (its tests, at the end, left out) for what it takes from its
//! siblings (`super::x`, `crate::folder::x`), and the graph must have no cycle.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The modules of one folder, by name, and the files each is made of.
fn modules_of(dir: &Path) -> BTreeMap<String, Vec<PathBuf>> {
    let mut modules = BTreeMap::new();
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            modules.insert(name, rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") && name != "mod" && name != "lib" {
            modules.insert(name, vec![path]);
        }
    }
    modules
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files
}

/// The code of a file, without its test module and its comments (a documentation link is
/// no import).
fn code_of(file: &Path) -> String {
    let text = fs::read_to_string(file).unwrap();
    let code = match text.find("\n#[cfg(test)]\nmod tests") {
        Some(at) => &text[..at],
        None => &text,
    };
    code.lines()
        .map(|line| line.find("//").map_or(line, |at| &line[..at]))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The first names after each `prefix` in `code`: `prefix::a`, or each of `prefix::{a, b::c}`.
fn names_after(code: &str, prefix: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    for (at, _) in code.match_indices(prefix) {
        let before = code[..at].chars().last();
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        let rest = &code[at + prefix.len()..];
        if let Some(list) = rest.strip_prefix('{') {
            let list = &list[..list.find('}').unwrap_or(list.len())];
            names.extend(list.split(',').map(|item| ident(item.trim())));
        } else {
            names.insert(ident(rest));
        }
    }
    names.retain(|n| !n.is_empty() && n != "self");
    names
}

/// The siblings each module of `dir` (at `module_path` from the crate) takes something from.
fn graph(dir: &Path, module_path: &str) -> BTreeMap<String, BTreeSet<String>> {
    let modules = modules_of(dir);
    let mut graph = BTreeMap::new();
    for (name, files) in &modules {
        let mut uses = BTreeSet::new();
        for file in files {
            let code = code_of(file);
            // A file directly in the folder reaches its siblings by `super::`; one deeper in
            // a sub-folder's tree by the crate path.
            if file.parent() == Some(dir) {
                uses.extend(names_after(&code, "super::"));
            }
            uses.extend(names_after(&code, &format!("{module_path}::")));
        }
        uses.retain(|used| used != name && modules.contains_key(used));
        graph.insert(name.clone(), uses);
    }
    graph
}

/// A cycle in `graph`, if it has one.
fn cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(start) = path.iter().position(|n| n == node) {
            let mut found = path[start..].to_vec();
            found.push(node.to_string());
            return Some(found);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(found) = visit(next, graph, path, done) {
                return Some(found);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|node| visit(node, graph, &mut Vec::new(), &mut done))
}

#[test]
fn no_imports_run_in_a_circle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut found = Vec::new();
    for (dir, module_path) in [
        (src.clone(), "crate".to_string()),
        (src.join("lua"), "crate::lua".to_string()),
        (src.join("lua/sandbox"), "crate::lua::sandbox".to_string()),
        (src.join("text"), "crate::text".to_string()),
        (src.join("text/reader"), "crate::text::reader".to_string()),
        (src.join("serde"), "crate::serde".to_string()),
        (src.join("upgrade"), "crate::upgrade".to_string()),
        (src.join("cache"), "crate::cache".to_string()),
        (src.join("batch"), "crate::batch".to_string()),
    ] {
        let graph = graph(&dir, &module_path);
        assert!(graph.len() > 1, "{} has modules", dir.display());
        if let Some(cycle) = cycle(&graph) {
            found.push(format!("{module_path}: {}", cycle.join(" -> ")));
        }
    }
    assert!(
        found.is_empty(),
        "imports in a circle:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_reader_finds_what_a_file_takes_from_its_siblings() {
    let code = "use super::{chunk::Chunk, library};\nuse super::slots::{self, A};\nfn f() { crate::lua::loan::x(); }";
    assert_eq!(
        names_after(code, "super::"),
        ["chunk", "library", "slots"].map(String::from).into()
    );
    assert_eq!(
        names_after(code, "crate::lua::"),
        ["loan"].map(String::from).into()
    );
    let graph: BTreeMap<String, BTreeSet<String>> =
        [("a", vec!["b"]), ("b", vec!["c"]), ("c", vec!["a"])]
            .into_iter()
            .map(|(n, e)| (n.to_string(), e.into_iter().map(String::from).collect()))
            .collect();
    assert_eq!(cycle(&graph).unwrap(), ["a", "b", "c", "a"]);
}
