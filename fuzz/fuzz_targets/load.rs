//! Any bytes: the text reader and the save loader must not panic, and whatever they accept
//! must be written back (pretty and compact) to text that reads as an equal value and is a
//! canonical fixed point.
#![no_main]

use libfuzzer_sys::fuzz_target;
use savechain::text::{self, Style};
use savechain::Save;

fn write(v: &savechain::Value, style: Style) -> Result<Vec<u8>, savechain::Error> {
    let mut out = Vec::new();
    text::write_value(&mut out, v, style)?;
    Ok(out)
}

fn check_value(data: &[u8]) {
    let Ok(v) = text::from_slice(data) else {
        return;
    };
    for style in [Style::Pretty, Style::Compact] {
        // The reader refuses anything deeper than MAX_DEPTH and the writer checks the same
        // limit, so refusing to write what was just read is a bug.
        let written = match write(&v, style) {
            Ok(bytes) => bytes,
            Err(e) => panic!("the writer ({style:?}) refused a value the reader accepted: {e}"),
        };
        let back = match text::from_slice(&written) {
            Ok(back) => back,
            Err(e) => panic!(
                "the {style:?} text does not read back: {e}\n--- text ---\n{}",
                String::from_utf8_lossy(&written)
            ),
        };
        assert!(
            back == v,
            "{style:?} round trip changed the value\n--- read ---\n{v:?}\n--- re-read ---\n{back:?}"
        );
        let again = write(&back, style).expect("writing the re-read value");
        assert!(
            again == written,
            "{style:?} text is not a fixed point\n--- first ---\n{}\n--- second ---\n{}",
            String::from_utf8_lossy(&written),
            String::from_utf8_lossy(&again)
        );
    }
}

fn check_save(data: &[u8]) {
    let Ok(save) = Save::from_slice(data) else {
        return;
    };
    for compact in [false, true] {
        let written = if compact {
            save.to_vec_compact()
        } else {
            save.to_vec()
        };
        let written = match written {
            Ok(bytes) => bytes,
            Err(e) => panic!("Save::to_vec (compact: {compact}) refused a loaded save: {e}"),
        };
        let back = match Save::from_slice(&written) {
            Ok(back) => back,
            Err(e) => panic!(
                "the written save (compact: {compact}) does not load: {e}\n--- text ---\n{}",
                String::from_utf8_lossy(&written)
            ),
        };
        assert!(
            back == save,
            "save round trip (compact: {compact}) changed it\n--- loaded ---\n{save:?}\n--- reloaded ---\n{back:?}"
        );
        let again = if compact {
            back.to_vec_compact()
        } else {
            back.to_vec()
        }
        .expect("writing the reloaded save");
        assert!(
            again == written,
            "save text (compact: {compact}) is not a fixed point\n--- first ---\n{}\n--- second ---\n{}",
            String::from_utf8_lossy(&written),
            String::from_utf8_lossy(&again)
        );
    }
}

fuzz_target!(|data: &[u8]| {
    check_value(data);
    check_save(data);
});
