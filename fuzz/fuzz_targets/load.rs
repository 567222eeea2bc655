//! Any bytes: the text reader and the save loader must not panic, and whatever they accept
//! must be written back (pretty and compact) to text that reads as an equal value and is a
//! canonical fixed point.
#![no_main]

use libfuzzer_sys::fuzz_target;
use savechain::text;
use savechain::Save;

fn check_value(data: &[u8]) {
    let Ok(v) = text::from_slice(data) else {
        return;
    };

    // Pretty. The reader refuses anything deeper than MAX_DEPTH and the writer checks the
    // same limit, so refusing to write what was just read is a bug.
    let pretty = match text::to_vec(&v) {
        Ok(bytes) => bytes,
        Err(e) => panic!("text::to_vec refused a value text::from_slice accepted: {e}"),
    };
    let back = match text::from_slice(&pretty) {
        Ok(back) => back,
        Err(e) => panic!(
            "the pretty text does not read back: {e}\n--- text ---\n{}",
            String::from_utf8_lossy(&pretty)
        ),
    };
    assert!(
        back == v,
        "pretty round trip changed the value\n--- read ---\n{v:?}\n--- re-read ---\n{back:?}"
    );
    let again = text::to_vec(&back).expect("writing the re-read value");
    assert!(
        again == pretty,
        "pretty text is not a fixed point\n--- first ---\n{}\n--- second ---\n{}",
        String::from_utf8_lossy(&pretty),
        String::from_utf8_lossy(&again)
    );

    // Compact.
    let compact = match text::to_vec_compact(&v) {
        Ok(bytes) => bytes,
        Err(e) => panic!("text::to_vec_compact refused a value text::from_slice accepted: {e}"),
    };
    let back = match text::from_slice(&compact) {
        Ok(back) => back,
        Err(e) => panic!(
            "the compact text does not read back: {e}\n--- text ---\n{}",
            String::from_utf8_lossy(&compact)
        ),
    };
    assert!(
        back == v,
        "compact round trip changed the value\n--- read ---\n{v:?}\n--- re-read ---\n{back:?}"
    );
    let again = text::to_vec_compact(&back).expect("writing the re-read value");
    assert!(
        again == compact,
        "compact text is not a fixed point\n--- first ---\n{}\n--- second ---\n{}",
        String::from_utf8_lossy(&compact),
        String::from_utf8_lossy(&again)
    );
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
