//! An HTTP request's keyword arguments, as the JSON object the runner
//! calls the function with.

use axum::extract::Query;
use axum::http::{Method, Uri};
use serde_json::{Map, Value};

use crate::error::ApiError;

/// GET: the query parameters, as strings (a name given more than once, as
/// a list of them). POST: the body, a JSON object (empty means none).
pub(super) fn arguments(method: &Method, uri: &Uri, body: &[u8]) -> Result<Vec<u8>, ApiError> {
    let kwargs = if method == Method::GET {
        query_arguments(uri)?
    } else {
        body_arguments(body)?
    };
    serde_json::to_vec(&Value::Object(kwargs))
        .map_err(|e| ApiError::InvalidArgument(format!("the arguments cannot be encoded: {e}")))
}

fn query_arguments(uri: &Uri) -> Result<Map<String, Value>, ApiError> {
    let Query(pairs) = Query::<Vec<(String, String)>>::try_from_uri(uri)
        .map_err(|e| ApiError::InvalidArgument(format!("the query string does not parse: {e}")))?;
    let mut kwargs = Map::new();
    for (name, value) in pairs {
        match kwargs.get_mut(&name) {
            None => {
                kwargs.insert(name, Value::String(value));
            }
            Some(Value::Array(values)) => values.push(Value::String(value)),
            Some(first) => *first = Value::Array(vec![first.take(), Value::String(value)]),
        }
    }
    Ok(kwargs)
}

fn body_arguments(body: &[u8]) -> Result<Map<String, Value>, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Map::new());
    }
    match serde_json::from_slice(body) {
        Ok(Value::Object(kwargs)) => Ok(kwargs),
        Ok(other) => Err(ApiError::InvalidArgument(format!(
            "the body is a JSON {}, not an object: send an object whose keys are the \
             function's keyword arguments, e.g. {{\"name\": \"Ada\"}}",
            kind(&other)
        ))),
        Err(e) => Err(ApiError::InvalidArgument(format!(
            "the body is not valid JSON ({e}): send an object whose keys are the function's \
             keyword arguments, e.g. {{\"name\": \"Ada\"}}"
        ))),
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(method: Method, uri: &str, body: &str) -> Result<Value, String> {
        arguments(&method, &uri.parse().unwrap(), body.as_bytes())
            .map(|bytes| serde_json::from_slice(&bytes).unwrap())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn get_takes_the_query_and_post_the_body() {
        assert_eq!(
            args(Method::GET, "/e/w/n?name=Ada&tag=a&tag=b&tag=c", "").unwrap(),
            serde_json::json!({"name": "Ada", "tag": ["a", "b", "c"]})
        );
        assert_eq!(
            args(Method::GET, "/e/w/n", "").unwrap(),
            serde_json::json!({})
        );
        assert_eq!(
            args(Method::POST, "/e/w/n?ignored=1", r#"{"x": [1, 2.5, null]}"#).unwrap(),
            serde_json::json!({"x": [1, 2.5, null]})
        );
        assert_eq!(
            args(Method::POST, "/e/w/n", " \n").unwrap(),
            serde_json::json!({})
        );
    }

    #[test]
    fn a_body_that_is_not_a_json_object_is_refused_saying_why() {
        let err = args(Method::POST, "/e/w/n", "{\"x\": ").unwrap_err();
        assert!(err.starts_with("the body is not valid JSON ("), "{err}");
        let err = args(Method::POST, "/e/w/n", "[1, 2]").unwrap_err();
        assert!(
            err.starts_with("the body is a JSON array, not an object"),
            "{err}"
        );
    }

    #[test]
    fn the_runner_tells_json_from_a_pickle_by_the_first_byte() {
        let bytes = arguments(&Method::GET, &"/e/w/n".parse().unwrap(), b"").unwrap();
        assert_eq!(bytes.first(), Some(&b'{'));
    }
}
