//! Any bytes: the text reader and the save loader must not panic, and whatever they accept
//! must be written back (pretty, compact and the decimal view) to text that reads as an
//! equal value and is a fixed point.
#![no_main]

use std::fmt::Debug;

use libfuzzer_sys::fuzz_target;
use savechain::text::{self, Style};
use savechain::{Error, Save, Value};

/// Checks one accepted document of either kind in both styles: the writer accepts it (the
/// reader and the writer share MAX_DEPTH, so a refusal is a bug), the text reads back equal,
/// and writing again gives the same bytes.
fn check_round_trip<T: PartialEq + Debug>(
    what: &str,
    loaded: &T,
    write: impl Fn(&T, Style) -> Result<Vec<u8>, Error>,
    read: impl Fn(&[u8]) -> Result<T, Error>,
) {
    for style in [Style::Pretty, Style::Compact, Style::Decimal] {
        let written = match write(loaded, style) {
            Ok(bytes) => bytes,
            Err(e) => panic!("the writer ({style:?}) refused a {what} the reader accepted: {e}"),
        };
        let back = match read(&written) {
            Ok(back) => back,
            Err(e) => panic!(
                "the {style:?} text of a {what} does not read back: {e}\n--- text ---\n{}",
                String::from_utf8_lossy(&written)
            ),
        };
        assert!(
            &back == loaded,
            "{style:?} round trip changed the {what}\n--- read ---\n{loaded:?}\n--- re-read ---\n{back:?}"
        );
        let again = write(&back, style).expect("writing the re-read document");
        assert!(
            again == written,
            "{style:?} text of a {what} is not a fixed point\n--- first ---\n{}\n--- second ---\n{}",
            String::from_utf8_lossy(&written),
            String::from_utf8_lossy(&again)
        );
    }
}

fn write_value(value: &Value, style: Style) -> Result<Vec<u8>, Error> {
    let mut out = Vec::new();
    text::write_value(&mut out, value, style)?;
    Ok(out)
}

fn write_save(save: &Save, style: Style) -> Result<Vec<u8>, Error> {
    let mut out = Vec::new();
    save.write(&mut out, style)?;
    Ok(out)
}

fuzz_target!(|data: &[u8]| {
    if let Ok(value) = text::from_slice(data) {
        check_round_trip("value", &value, write_value, text::from_slice);
    }
    if let Ok(save) = Save::from_slice(data) {
        check_round_trip("save", &save, write_save, Save::from_slice);
    }
});
