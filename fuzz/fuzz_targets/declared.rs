//! Any bytes, as a declared step file (a mod's, a stranger's) and a save's data, split at
//! the first line `---`: reading the file never panics; a step it makes either joins a
//! chain or is refused; and running it on the data never panics, and fails or upgrades.
#![no_main]

use libfuzzer_sys::fuzz_target;
use savechain::upgrade::{Chain, Step};
use savechain::{Options, Save};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (step_text, document) = text.split_once("\n---\n").unwrap_or((text, "{}"));
    let Ok(step) = Step::declared_file("0001-fuzzed.json", step_text) else {
        return;
    };
    let Ok(chain) = Chain::new("1.0.0", vec![step]) else {
        return;
    };
    let Ok(value) = savechain::text::from_str(document) else {
        return;
    };
    let save = Save::new(1, value);
    if let Ok(upgraded) = chain.upgrader().upgrade(save, &Options::default()) {
        assert_eq!(upgraded.save.meta.version, 2);
        // What was upgraded is a save: it writes and reads back the same.
        let text = upgraded.save.to_string().unwrap();
        assert_eq!(Save::from_str(&text).unwrap(), upgraded.save);
    }
});
