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

/// The depth check one byte at a time (what `check_line` answers, however it skips
/// through strings).
fn oracle(line: &[u8], max_depth: usize) -> Result<(), usize> {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for (offset, &b) in line.iter().enumerate() {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > max_depth {
                    return Err(offset);
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(())
}

#[test]
fn the_depth_check_agrees_with_a_byte_at_a_time_scan() {
    // Generated lines of brackets, quotes, backslashes and text (a fixed xorshift),
    // and every fixture line, at several bounds.
    let alphabet = br#"[]{}"\\\ax:,"#;
    let mut x = 0x9e37_79b9_7f4a_7c15_u64;
    let mut lines: Vec<Vec<u8>> = (0..4000)
        .map(|i| {
            (0..(i % 200))
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    alphabet[(x % alphabet.len() as u64) as usize]
                })
                .collect()
        })
        .collect();
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures");
    for dir in ["legacy", "edge", "leniency"] {
        for e in std::fs::read_dir(fixtures.join(dir)).expect("fixtures") {
            let p = e.expect("entry").path();
            if p.extension().is_some_and(|x| x == "jsonl") {
                let text = std::fs::read(&p).expect("fixture");
                lines.extend(text.split(|b| *b == b'\n').map(<[u8]>::to_vec));
            }
        }
    }
    let mut refused = 0;
    for line in &lines {
        for max_depth in [0, 1, 2, 3, 5, 64] {
            let limits = LineLimits {
                max_depth,
                ..LineLimits::default()
            };
            let got = check_line(line, limits).map_err(|e| match e {
                LineError::TooDeep { offset, .. } => offset,
                other => panic!("{other:?}"),
            });
            assert_eq!(
                got,
                oracle(line, max_depth),
                "{}",
                String::from_utf8_lossy(line)
            );
            refused += usize::from(got.is_err());
        }
    }
    assert!(refused > 1000, "only {refused} refusals compared");
}
