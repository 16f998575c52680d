//! Typed errors: stable codes, fields in `data`, a lossless round trip.

use serde_json::json;
use session_protocol::*;

fn samples() -> Vec<Error> {
    let v = |major, minor| ProtocolVersion { major, minor };
    vec![
        Error::Parse { detail: "d".into() },
        Error::InvalidRequest { detail: "d".into() },
        Error::MethodNotFound { method: "m".into() },
        Error::InvalidParams {
            method: "m".into(),
            detail: "d".into(),
        },
        Error::Internal { detail: "d".into() },
        Error::Overloaded {
            queue: "session s".into(),
        },
        Error::NotInitialized { method: "m".into() },
        Error::AlreadyInitialized,
        Error::UnsupportedProtocol {
            client: v(2, 0),
            server: v(1, 0),
        },
        Error::LineTooLong { len: 10, limit: 5 },
        Error::TooDeep {
            limit: 64,
            offset: 70,
        },
        Error::Locked {
            path: "/p".into(),
            holder_pid: Some(7),
            holder_host: Some("h".into()),
        },
        Error::NotFound { path: "/p".into() },
        Error::SessionNotOpen {
            session_id: "s".into(),
        },
        Error::EntryNotFound {
            session: "/p".into(),
            entry_id: "e".into(),
        },
        Error::LimitExceeded {
            session: "/p".into(),
            limit: LimitKind::SourceBytes,
            limit_value: 10,
            needed: 20,
            exact: false,
        },
        Error::Corrupt {
            path: "/p".into(),
            offset: 96,
            detail: "bad check".into(),
        },
        Error::UnsupportedVersion {
            path: "/p".into(),
            found: "9".into(),
            supported: "1".into(),
        },
        Error::InvalidEntry { reason: "r".into() },
        Error::Exists {
            path: "/p".into(),
            session_id: "s".into(),
        },
        Error::LegacyJsonl { path: "/p".into() },
        Error::Io {
            path: "/p".into(),
            op: "open".into(),
            detail: "denied".into(),
        },
        Error::NotAJournal {
            path: "/p".into(),
            detail: "the file is empty".into(),
        },
        Error::Store { detail: "d".into() },
    ]
}

#[test]
fn every_error_round_trips_through_its_wire_form() {
    let mut codes = std::collections::BTreeSet::new();
    for e in samples() {
        assert!(codes.insert(e.code()), "code {} twice", e.code());
        let line = encode_error(Some(&RequestId::Number(1)), &e);
        let Incoming::Response {
            outcome: Err(object),
            ..
        } = Incoming::parse(line.as_bytes(), LineLimits::default()).expect("parses")
        else {
            panic!("{line}");
        };
        assert_eq!(object.code, e.code());
        assert_eq!(object.message, e.to_string());
        let wire = serde_json::to_value(&object).expect("serializes");
        crate::schema::assert_fits(&line, &crate::schema::bundle()["error"], &wire);
        crate::schema::assert_fits(&line, &crate::schema::bundle()["errorData"], &wire["data"]);
        assert_eq!(Error::from_object(object), e, "{line}");
    }
}

#[test]
fn codes_are_stable() {
    // Changing one of these breaks every client: add codes, never renumber.
    let expected = [
        -32700, -32600, -32601, -32602, -32603, -32001, -32002, -32003, -32004, -32005, -32006,
        1001, 1002, 1003, 1004, 1005, 1006, 1007, 1008, 1009, 1010, 1011, 1012, 1099,
    ];
    let codes: Vec<i64> = samples().iter().map(Error::code).collect();
    assert_eq!(codes, expected);
}

#[test]
fn the_library_errors_fields_are_in_data() {
    let e = Error::LimitExceeded {
        session: "/p".into(),
        limit: LimitKind::SourceEntries,
        limit_value: 10,
        needed: 20,
        exact: true,
    };
    let o = e.to_object();
    assert_eq!(
        o.data,
        Some(
            json!({"kind":"limitExceeded","session":"/p","limit":"sourceEntries","limitValue":10,"needed":20,"exact":true})
        )
    );
    assert_eq!(
        o.message,
        "/p: read limit exceeded: source entries limit is 10, the read needs 20"
    );
    let locked = Error::Locked {
        path: "/p".into(),
        holder_pid: Some(7),
        holder_host: None,
    };
    assert_eq!(
        locked.to_string(),
        "/p: session is owned by pid 7 on an unknown host"
    );
    assert_eq!(locked.to_object().data.expect("data")["holderPid"], 7);
}

#[test]
fn only_overload_is_retryable() {
    for e in samples() {
        assert_eq!(
            e.is_retryable(),
            matches!(e, Error::Overloaded { .. }),
            "{e:?}"
        );
    }
}

#[test]
fn a_newer_major_is_refused_by_name() {
    let e = Error::UnsupportedProtocol {
        client: ProtocolVersion { major: 2, minor: 1 },
        server: PROTOCOL_VERSION,
    };
    assert_eq!(
        e.to_string(),
        format!(
            "unsupported protocol version: the client speaks 2.1, this owner speaks 1.{} (major 1 only)",
            PROTOCOL_VERSION.minor
        )
    );
    assert!(PROTOCOL_VERSION.serves(ProtocolVersion { major: 1, minor: 9 }));
    assert!(!PROTOCOL_VERSION.serves(ProtocolVersion { major: 2, minor: 0 }));
    assert!(!PROTOCOL_VERSION.serves(ProtocolVersion { major: 0, minor: 9 }));
}

#[test]
fn unknown_codes_and_kinds_are_kept_raw() {
    let object = ErrorObject {
        code: 4242,
        message: "new".into(),
        data: Some(json!({"kind":"future"})),
    };
    assert_eq!(
        Error::from_object(object.clone()),
        Error::Unknown {
            code: 4242,
            message: "new".into(),
            data: object.data.clone()
        }
    );
    // A known kind under the wrong code is not believed either.
    let object = ErrorObject {
        code: 1,
        message: "m".into(),
        data: Some(json!({"kind":"alreadyInitialized"})),
    };
    assert!(matches!(
        Error::from_object(object.clone()),
        Error::Unknown { code: 1, .. }
    ));
    assert_eq!(Error::from_object(object.clone()).to_object(), object);
}

#[test]
fn the_schema_gives_every_kind_its_code() {
    // `errorKinds` of the committed schema (and so `ERROR_KINDS` in TypeScript) is
    // what the errors themselves say.
    let kinds = crate::schema::bundle()["errorKinds"]
        .as_object()
        .expect("errorKinds");
    let samples = samples();
    assert_eq!(kinds.len(), samples.len(), "one kind per error");
    for e in samples {
        let data = e.to_object().data.expect("typed errors have data");
        let kind = data["kind"].as_str().expect("a kind");
        assert_eq!(
            kinds[kind],
            json!({"code": e.code(), "retryable": e.is_retryable()}),
            "{kind}"
        );
    }
}
