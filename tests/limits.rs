//! Nesting and size limits: deep input is refused cleanly, large input loads.

use savechain::text::{self, MAX_DEPTH};
use savechain::{ErrorKind, Save, Value};

fn nested_arrays(depth: usize) -> String {
    format!("{}{}", "[".repeat(depth), "]".repeat(depth))
}

#[test]
fn data_nested_128_levels_loads() {
    let save = format!(
        r#"{{"meta": {{"version": 1}}, "data": {}}}"#,
        nested_arrays(128)
    );
    let loaded = Save::from_str(&save).unwrap();
    let back = Save::from_slice(&loaded.to_vec().unwrap()).unwrap();
    assert_eq!(back, loaded);
}

#[test]
fn the_limit_is_exact() {
    assert!(text::from_str(&nested_arrays(MAX_DEPTH)).is_ok());
    let err = text::from_str(&nested_arrays(MAX_DEPTH + 1)).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Value);
    assert_eq!(err.column(), Some(MAX_DEPTH + 1));
}

#[test]
fn a_lower_limit_asked_by_the_caller_is_exact_too() {
    use savechain::lua::{from_text_with_max_depth, mlua::Lua};
    let lua = Lua::new();
    for limit in [1, 2, 7, 511, MAX_DEPTH] {
        let fits = nested_arrays(limit);
        let deeper = nested_arrays(limit + 1);
        assert!(text::from_slice_with_max_depth(fits.as_bytes(), limit).is_ok());
        assert!(from_text_with_max_depth(&lua, fits.as_bytes(), limit).is_ok());
        let errors = [
            text::from_slice_with_max_depth(deeper.as_bytes(), limit).unwrap_err(),
            from_text_with_max_depth(&lua, deeper.as_bytes(), limit)
                .map(|_| ())
                .unwrap_err(),
        ];
        for err in errors {
            assert_eq!(err.kind(), ErrorKind::Value);
            assert_eq!(err.column(), Some(limit + 1));
            assert!(
                err.message()
                    .contains(&format!("nested more than {limit} arrays and objects deep")),
                "{err}"
            );
        }
    }
    // Objects and tags count as arrays do; the default stays the format's.
    let tagged = r#"{"a": [["d", "0x1p+0"]]}"#;
    assert!(text::from_slice_with_max_depth(tagged.as_bytes(), 3).is_ok());
    let err = text::from_slice_with_max_depth(tagged.as_bytes(), 2).unwrap_err();
    assert_eq!(err.column(), Some(8));
    // No limit the format has no room for.
    for limit in [0, MAX_DEPTH + 1] {
        let err = text::from_slice_with_max_depth(b"[]", limit).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Usage);
        assert!(err.message().contains("from 1 to 512"), "{err}");
        assert!(from_text_with_max_depth(&lua, b"[]", limit).is_err());
    }
}

#[test]
fn absurd_depth_is_an_error_not_a_stack_overflow() {
    for open in ["[", "{\"k\":", "[\"a\", ["] {
        let text = open.repeat(1_000_000);
        let err = text::from_str(&text).unwrap_err();
        assert!(err.message().contains("nested more than"), "{err}");
    }
}

fn nest(depth: usize, leaf: Value) -> Value {
    (0..depth).fold(leaf, |inner, _| Value::Array(vec![inner]))
}

#[test]
fn the_writer_refuses_what_could_not_be_read_back() {
    let err = text::to_vec(&nest(MAX_DEPTH + 1, Value::Null)).unwrap_err();
    assert!(err.message().contains("could not be read back"), "{err}");
    assert!(text::to_vec(&nest(MAX_DEPTH, Value::Null)).is_ok());
    // A double is written as a two-element array, so it is a level of its own.
    assert!(text::to_vec(&nest(MAX_DEPTH - 1, Value::Double(1.0))).is_ok());
    assert!(text::to_vec(&nest(MAX_DEPTH, Value::Double(1.0))).is_err());
}

#[test]
fn a_32_mib_string_loads() {
    let big = "x".repeat(32 << 20);
    let text = format!(r#"{{"meta": {{"version": 1}}, "data": {{"blob": "{big}"}}}}"#);
    let save = Save::from_str(&text).unwrap();
    assert_eq!(
        save.data.get("blob").and_then(Value::as_str).map(str::len),
        Some(32 << 20)
    );
}

#[test]
fn an_object_with_200k_keys_loads() {
    let members: Vec<String> = (0..200_000)
        .rev()
        .map(|i| format!("\"k{i}\": {i}"))
        .collect();
    let text = format!("{{{}}}", members.join(","));
    let value = text::from_str(&text).unwrap();
    let map = value.as_object().unwrap();
    assert_eq!(map.len(), 200_000);
    assert_eq!(map.get("k123456"), Some(&Value::Int(123_456)));
}
