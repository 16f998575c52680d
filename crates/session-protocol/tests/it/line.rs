//! The line checks that run before any parser: size and nesting depth.

use session_protocol::*;

fn nested(depth: usize) -> String {
    format!("{}{}", "[".repeat(depth), "]".repeat(depth))
}

#[test]
fn depth_at_the_bound_passes_and_one_more_is_refused() {
    let limits = LineLimits::default();
    assert_eq!(limits.max_depth, MAX_DEPTH);
    // Below serde_json's own recursion limit, so our refusal always comes first.
    const { assert!(MAX_DEPTH < 128) };
    let at_bound: serde_json::Value =
        serde_json::from_str(&nested(MAX_DEPTH)).expect("serde reads it");
    assert!(at_bound.is_array());
    assert_eq!(check_line(nested(MAX_DEPTH).as_bytes(), limits), Ok(()));
    assert_eq!(
        check_line(nested(MAX_DEPTH + 1).as_bytes(), limits),
        Err(LineError::TooDeep {
            limit: MAX_DEPTH,
            offset: MAX_DEPTH
        })
    );
}

#[test]
fn brackets_inside_strings_do_not_count() {
    let limits = LineLimits {
        max_depth: 2,
        ..LineLimits::default()
    };
    assert_eq!(check_line(br#"{"a":"[[[[{{{\"]]]"}"#, limits), Ok(()));
    assert_eq!(
        check_line(br#"{"a":"\\",  "b":[[1]]}"#, limits).map_err(|_| ()),
        Err(())
    );
}

#[test]
fn a_hundred_thousand_levels_are_refused_without_parsing() {
    let deep = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}}"#,
        nested(100_000)
    );
    let r = Incoming::parse(deep.as_bytes(), LineLimits::default()).expect_err("refused");
    assert_eq!(r.id, None);
    // The envelope's `{` is level 1, so the 64th `[` crosses the bound.
    let first = deep.find('[').expect("params open");
    assert_eq!(
        *r.error,
        Error::TooDeep {
            limit: MAX_DEPTH as u64,
            offset: (first + MAX_DEPTH - 1) as u64
        }
    );
    assert_eq!(r.error.code(), code::TOO_DEEP);
}

#[test]
fn the_line_size_limit_is_checked_first() {
    let limits = LineLimits {
        max_line_bytes: 16,
        max_depth: 4,
    };
    let line = br#"{"jsonrpc":"2.0","id":1}"#;
    assert_eq!(
        check_line(line, limits),
        Err(LineError::TooLong {
            len: line.len(),
            limit: 16
        })
    );
    let r = Incoming::parse(line, limits).expect_err("refused");
    assert_eq!(
        *r.error,
        Error::LineTooLong {
            len: line.len() as u64,
            limit: 16
        }
    );
    assert_eq!(r.error.code(), code::LINE_TOO_LONG);
}
