// The wire types of `session-protocol` (docs/rpc.md): generated from the Rust types by
// `cargo xtask protocol` into ./generated/ (never edited by hand), plus the few
// client-side names this package adds.

import type { JsonValue, Methods } from "./generated/index.js";

export type * from "./generated/index.js";
export { ERROR_KINDS, PROTOCOL_VERSION } from "./generated/index.js";

/** A JSON value. */
export type Json = JsonValue;

export type Method = keyof Methods;
export type ParamsOf<M extends Method> = Methods[M]["params"];
export type ResultOf<M extends Method> = Methods[M]["result"];

