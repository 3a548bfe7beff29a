//! The OpenAPI document of the HTTP API, served at `GET /v1/openapi.json`.

/// OpenAPI 3.1, written by hand next to the routes (`lib.rs`); a test checks that every
/// route is documented and every documented path is routed.
pub const OPENAPI_JSON: &str = include_str!("openapi.json");

#[cfg(test)]
mod tests {
    #[test]
    fn the_document_is_openapi_3_1_and_lists_every_route() {
        let doc: serde_json::Value = serde_json::from_str(super::OPENAPI_JSON).unwrap();
        assert_eq!(doc["openapi"], "3.1.0");
        let documented: std::collections::BTreeSet<String> = doc["paths"]
            .as_object()
            .unwrap()
            .iter()
            .flat_map(|(path, ops)| {
                ops.as_object()
                    .unwrap()
                    .keys()
                    .map(move |method| format!("{} {path}", method.to_uppercase()))
            })
            .collect();
        // the routes as lib.rs declares them
        let source = include_str!("lib.rs");
        let mut routed = std::collections::BTreeSet::new();
        for chunk in source.split(".route(").skip(1) {
            // a route's definition ends where its `.route(` call closes
            let mut depth = 1;
            let end = chunk
                .char_indices()
                .find(|&(_, c)| {
                    depth += match c {
                        '(' => 1,
                        ')' => -1,
                        _ => 0,
                    };
                    depth == 0
                })
                .map_or(chunk.len(), |(i, _)| i);
            let def = &chunk[..end];
            let path = def.split('"').nth(1).unwrap();
            for (name, method) in [
                ("post(", "POST"),
                ("get(", "GET"),
                ("delete(", "DELETE"),
                ("patch(", "PATCH"),
            ] {
                if def.contains(name) {
                    routed.insert(format!("{method} {path}"));
                }
            }
        }
        assert_eq!(routed, documented);
    }
}
