//! Malformed lines: each is refused with the error a server answers with.

use session_protocol::*;

fn refusal(line: &[u8]) -> Refusal {
    match parse_request(line, LineLimits::default()) {
        Ok(r) => panic!("accepted {}: {r:?}", String::from_utf8_lossy(line)),
        Err(r) => r,
    }
}

#[test]
fn garbage_is_a_parse_error_with_no_id() {
    for line in [
        &b"\x00\xff\xfe garbage"[..],
        b"{",
        b"not json",
        b"{\"a\":1} trailing",
    ] {
        let r = refusal(line);
        assert_eq!(r.id, None);
        assert!(matches!(*r.error, Error::Parse { .. }), "{r:?}");
        assert_eq!(r.error.code(), code::PARSE_ERROR);
    }
}

#[test]
fn invalid_utf8_inside_a_string_is_a_parse_error() {
    let r = refusal(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xc3\x28\"}");
    assert_eq!(
        *r.error,
        Error::Parse {
            detail: "invalid utf-8 at byte 34".into()
        }
    );
}

#[test]
fn json_that_is_not_a_request_is_an_invalid_request() {
    let cases: [&[u8]; 6] = [
        b"[1,2]",
        br#"{"id":1,"method":"initialize"}"#,
        br#"{"jsonrpc":"1.0","id":1,"method":"initialize"}"#,
        br#"{"jsonrpc":"2.0","id":null,"method":"initialize"}"#,
        br#"{"jsonrpc":"2.0","id":1.5,"method":"initialize"}"#,
        br#"{"jsonrpc":"2.0","id":1,"method":"x","result":{}}"#,
    ];
    for line in cases {
        let r = refusal(line);
        assert!(matches!(*r.error, Error::InvalidRequest { .. }), "{r:?}");
    }
    // The id is echoed when it could be read.
    assert_eq!(refusal(cases[2]).id, Some(RequestId::Number(1)));
}

#[test]
fn unknown_methods_and_wrong_params_name_the_request() {
    let r = refusal(br#"{"jsonrpc":"2.0","id":"a","method":"session/explode","params":{}}"#);
    assert_eq!(r.id, Some(RequestId::String("a".into())));
    assert_eq!(
        *r.error,
        Error::MethodNotFound {
            method: "session/explode".into()
        }
    );
    assert_eq!(r.error.code(), code::METHOD_NOT_FOUND);

    for params in [
        r#"{"sessionId":5,"message":{"role":"user","content":"x"}}"#,
        r#"{"message":{"role":"user","content":"x"}}"#,
        r#"{"sessionId":"s","message":{"role":"user","content":"x"},"sesionId":"typo"}"#,
        r#"[1]"#,
    ] {
        let line = format!(
            r#"{{"jsonrpc":"2.0","id":2,"method":"session/appendMessage","params":{params}}}"#
        );
        let r = refusal(line.as_bytes());
        assert_eq!(r.id, Some(RequestId::Number(2)));
        let Error::InvalidParams { method, .. } = &*r.error else {
            panic!("{params}: {r:?}");
        };
        assert_eq!(method, "session/appendMessage");
        assert_eq!(r.error.code(), code::INVALID_PARAMS);
    }
}

#[test]
fn absent_params_read_as_an_empty_object() {
    let (_, r) = parse_request(
        br#"{"jsonrpc":"2.0","id":1,"method":"store/listAll"}"#,
        LineLimits::default(),
    )
    .expect("accepted");
    assert_eq!(
        r,
        call::StoreListAll::request(ListAllParams { progress: None })
    );
}

#[test]
fn responses_and_notifications_are_classified() {
    let ok = Incoming::parse(
        br#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
        LineLimits::default(),
    );
    assert!(matches!(ok, Ok(Incoming::Response { outcome: Ok(_), .. })));
    let err = Incoming::parse(
        br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"m"}}"#,
        LineLimits::default(),
    );
    assert!(matches!(
        err,
        Ok(Incoming::Response {
            outcome: Err(ErrorObject { code: -32001, .. }),
            ..
        })
    ));
    let note = Incoming::parse(
        br#"{"jsonrpc":"2.0","method":"initialized"}"#,
        LineLimits::default(),
    );
    assert!(matches!(note, Ok(Incoming::Notification { .. })));
}

#[test]
fn error_lines_carry_a_null_id_when_unknown() {
    let line = encode_error(None, &Error::Parse { detail: "x".into() });
    assert_eq!(
        line,
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error: x","data":{"kind":"parse","detail":"x"}}}"#
    );
}

#[test]
fn the_appended_answer_is_the_generic_encoders_line() {
    let strings = [
        "",
        "a1b2c3d4",
        "q\"uote",
        "back\\slash",
        "ctl\u{1}\u{8}\t\n\r\u{c}\u{1f}\u{7f}",
        "é Ω 🦀",
        "\u{2028}\u{2029}/",
    ];
    let mut ids: Vec<RequestId> = [0, 1, -1, 12345, i64::MIN, i64::MAX]
        .into_iter()
        .map(RequestId::Number)
        .collect();
    ids.extend(strings.iter().map(|s| RequestId::String((*s).to_owned())));
    for id in &ids {
        for entry in strings {
            let entry_id = session_types::EntryId::new(entry);
            let generic = encode_result(
                id,
                &Appended {
                    entry_id: entry_id.clone(),
                },
            );
            assert_eq!(encode_appended(id, &entry_id), generic, "{id:?} {entry:?}");
        }
    }
}
