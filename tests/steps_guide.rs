//! The examples of `docs/STEPS.md` do what the guide says: each Lua block with lines
//! `-- <data before>  ->  <data after>` runs as a step, under `--strict`, on each "before"
//! and must give its "after" (or leave it as it is, for `unchanged`).

use std::fs;

use savechain::upgrade::Chain;
use savechain::{Options, Save, Value};

const GUIDE: &str = include_str!("../docs/STEPS.md");

/// An example: the block's code, and the data before and after it.
struct Example {
    code: String,
    cases: Vec<(String, Option<String>)>,
}

fn examples() -> Vec<Example> {
    let mut examples = Vec::new();
    let mut block: Option<Example> = None;
    let mut before: Option<String> = None;
    for line in GUIDE.lines() {
        if line == "```lua" {
            block = Some(Example {
                code: String::new(),
                cases: Vec::new(),
            });
            continue;
        }
        let Some(example) = block.as_mut() else {
            continue;
        };
        if line == "```" {
            let example = block.take().unwrap();
            if !example.cases.is_empty() {
                examples.push(example);
            }
        } else if let Some(rest) = line.strip_prefix("--   ->  ") {
            let before = before.take().expect("an arrow after a 'before' line");
            example.cases.push((before, after(rest)));
        } else if let Some(rest) = line.strip_prefix("-- {") {
            match rest.split_once("  ->  ") {
                Some((from, to)) => example.cases.push((format!("{{{from}"), after(to))),
                None => before = Some(format!("{{{rest}")),
            }
        } else {
            example.code.push_str(line);
            example.code.push('\n');
        }
    }
    examples
}

fn after(text: &str) -> Option<String> {
    let text = text.trim();
    (text != "unchanged").then(|| text.to_string())
}

#[test]
fn every_before_and_after_in_the_steps_guide_holds() {
    let examples = examples();
    assert!(examples.len() >= 6, "the guide's examples were found");
    for example in examples {
        let dir = tempfile::tempdir().unwrap();
        let step = format!(
            "local up = require('savechain.upgrade')\nreturn function(data)\n{}end\n",
            example.code
        );
        fs::write(dir.path().join("0001-example.lua"), &step).unwrap();
        let chain = Chain::from_lua_dir("1.0.0", dir.path()).unwrap();
        for (before, after) in &example.cases {
            let save = Save::from_str(&format!(
                r#"{{"meta": {{"version": 1}}, "data": {before}}}"#
            ))
            .unwrap();
            let mut strict = Options::default();
            strict.strict = true;
            let upgraded = chain
                .upgrader()
                .upgrade(save, &strict)
                .unwrap_or_else(|e| panic!("{}\n{before}: {e}", example.code));
            let expected: Value =
                savechain::text::from_str(after.as_deref().unwrap_or(before)).unwrap();
            assert_eq!(
                upgraded.save.data, expected,
                "{}\non {before}",
                example.code
            );
        }
    }
}

/// The declared step of the guide is a valid step file, and does what the guide says.
#[test]
fn the_declared_step_in_the_steps_guide_reads_and_runs() {
    let blocks: Vec<&str> = GUIDE
        .split("```json\n")
        .skip(1)
        .map(|rest| rest.split("```").next().unwrap())
        .collect();
    assert_eq!(blocks.len(), 1, "the guide's JSON blocks");
    let step = savechain::upgrade::Step::declared_file("0006-shields.json", blocks[0]).unwrap();
    assert_eq!(step.kind_name(), "declared");
    let chain = Chain::new("1.0.0", vec![step]).unwrap();
    let mut options = Options::default();
    options.strict = true;
    let save = Save::from_str(
        r#"{"meta": {"version": 6}, "data": {"player": {"coins": 5, "tutorial_done": true},
            "ship": {"cargo": [{"mass": 2}, {"mass": 1.5}]}}}"#,
    )
    .unwrap();
    let upgraded = chain.upgrader().upgrade(save, &options).unwrap();
    assert_eq!(
        upgraded.save.data.to_string(),
        r#"{"player":{"gold":5},"ship":{"cargo":[{"mass":["d","0x1p+1"]},{"mass":["d","0x1.8p+0"]}],"shield":100}}"#
    );
}
