//! Usage arithmetic for child-usage attribution.

use serde_json::Number;
use session_types::json::js_number;
use session_types::{Cost, Usage};

/// `a + b`, field by field: token counts saturate, costs are added as floats and written
/// the way JavaScript prints numbers (as [`Usage::minus`] does for subtraction).
pub(crate) fn plus(a: &Usage, b: &Usage) -> Usage {
    let f =
        |x: &Number, y: &Number| js_number(x.as_f64().unwrap_or(0.0) + y.as_f64().unwrap_or(0.0));
    Usage {
        input: a.input.saturating_add(b.input),
        output: a.output.saturating_add(b.output),
        cache_read: a.cache_read.saturating_add(b.cache_read),
        cache_write: a.cache_write.saturating_add(b.cache_write),
        total_tokens: a.total_tokens.saturating_add(b.total_tokens),
        cost: Cost {
            input: f(&a.cost.input, &b.cost.input),
            output: f(&a.cost.output, &b.cost.output),
            cache_read: f(&a.cost.cache_read, &b.cost.cache_read),
            cache_write: f(&a.cost.cache_write, &b.cost.cache_write),
            total: f(&a.cost.total, &b.cost.total),
            extra: a.cost.extra.clone(),
        },
        extra: a.extra.clone(),
    }
}
