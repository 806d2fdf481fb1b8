//! Names pinned to a version of their app: `/endpoint/<workspace>/greet@3`
//! calls `greet` as version 3 of its app served it. An endpoint name cannot
//! hold `@` (see [`super::check_name`]), so the first `@` starts the pin.

use crate::error::ApiError;

/// The endpoint name of a path segment and the version it pins, if any;
/// InvalidArgument for a pin that is not a version number.
pub(super) fn split(segment: &str) -> Result<(&str, Option<u32>), ApiError> {
    let Some((name, pin)) = segment.split_once('@') else {
        return Ok((segment, None));
    };
    match pin.parse::<u32>() {
        Ok(version) if version >= 1 && pin.bytes().all(|b| b.is_ascii_digit()) => {
            Ok((name, Some(version)))
        }
        _ => Err(ApiError::InvalidArgument(format!(
            "{segment:?} pins no version: after '@' comes the number of a version of the \
             endpoint's app, like \"{name}@3\" (levers9 deploy prints it)"
        ))),
    }
}

/// The 404 for a version of the app that did not serve the endpoint:
/// which versions did, and that the path without the pin calls the current
/// one.
pub(super) fn no_such_version(
    workspace: &str,
    name: &str,
    version: u32,
    app_name: &str,
    current: u32,
    versions: &[u32],
) -> ApiError {
    let served = match versions {
        [] => String::new(),
        [one] => format!(" (it served it in version {one})"),
        _ => format!(" (it served it in versions {})", ranges(versions)),
    };
    ApiError::NotFound(format!(
        "endpoint {name:?} of workspace {workspace:?} has no version {version}: version \
         {version} of its app {app_name:?} did not serve it{served}; pin one of those, or drop \
         \"@{version}\" from the path to call the current version ({current})"
    ))
}

/// Ascending versions as ranges: `1-3, 5, 7-8`.
fn ranges(versions: &[u32]) -> String {
    let mut spans: Vec<(u32, u32)> = Vec::new();
    for &v in versions {
        match spans.last_mut() {
            Some((_, end)) if v == *end + 1 => *end = v,
            _ => spans.push((v, v)),
        }
    }
    spans
        .iter()
        .map(|&(start, end)| match start == end {
            true => start.to_string(),
            false => format!("{start}-{end}"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_segment_is_a_name_and_maybe_the_version_it_pins() {
        assert_eq!(split("greet").unwrap(), ("greet", None));
        assert_eq!(split("greet@3").unwrap(), ("greet", Some(3)));
        assert_eq!(split("api.v2@12").unwrap(), ("api.v2", Some(12)));
        for bad in [
            "greet@",
            "greet@0",
            "greet@v3",
            "greet@+3",
            "greet@3@4",
            "greet@x",
        ] {
            let err = split(bad).unwrap_err().to_string();
            assert!(
                err.contains(&format!("{bad:?} pins no version")),
                "{bad}: {err}"
            );
        }
    }

    #[test]
    fn a_missing_version_names_the_versions_that_served_the_endpoint() {
        let err = no_such_version("ws", "greet", 9, "hello", 8, &[1, 2, 3, 5, 7, 8]);
        assert_eq!(
            err.to_string(),
            "endpoint \"greet\" of workspace \"ws\" has no version 9: version 9 of its app \
             \"hello\" did not serve it (it served it in versions 1-3, 5, 7-8); pin one of \
             those, or drop \"@9\" from the path to call the current version (8)"
        );
        let err = no_such_version("ws", "greet", 1, "hello", 2, &[2]).to_string();
        assert!(err.contains("(it served it in version 2);"), "{err}");
    }
}
