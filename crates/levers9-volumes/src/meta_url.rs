//! A JuiceFS metadata URL split into what may be shown and the password,
//! which juicefs reads from `META_PASSWORD` so it never reaches a command
//! line (and with it `/proc/<pid>/cmdline` and `ps`).

/// `scheme://[user[:password]@]rest`, with the password taken out.
#[derive(Clone, PartialEq, Eq)]
pub struct MetaUrl {
    /// The URL without its password: safe for a command line and a log.
    pub shown: String,
    /// The password, percent-decoded; `None` when the URL has none.
    pub password: Option<String>,
}

impl std::fmt::Debug for MetaUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetaUrl")
            .field("shown", &self.shown)
            .field("password", &self.password.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

impl MetaUrl {
    /// Splits `url`. Only the authority (up to the first `/` after the
    /// scheme) can hold a password; the last `@` in it ends the user info,
    /// since a password may contain `@` only percent-encoded but people
    /// write it raw anyway.
    pub fn parse(url: &str) -> MetaUrl {
        let Some((scheme, rest)) = url.split_once("://") else {
            return MetaUrl {
                shown: url.to_owned(),
                password: None,
            };
        };
        let authority_end = rest.find('/').unwrap_or(rest.len());
        let (authority, path) = rest.split_at(authority_end);
        let Some((user_info, host)) = authority.rsplit_once('@') else {
            return MetaUrl {
                shown: url.to_owned(),
                password: None,
            };
        };
        let (user, password) = match user_info.split_once(':') {
            Some((user, password)) => (user, Some(percent_decode(password))),
            None => (user_info, None),
        };
        let shown = if user.is_empty() {
            format!("{scheme}://{host}{path}")
        } else {
            format!("{scheme}://{user}@{host}{path}")
        };
        MetaUrl {
            shown,
            password: password.filter(|p| !p.is_empty()),
        }
    }
}

/// The metadata engines that keep several file systems apart in one
/// database by a prefix of their tables (JuiceFS's `table_prefix`).
const SQL_SCHEMES: &[&str] = &["postgres://", "mysql://", "sqlite3://"];

/// `url` with `table_prefix=PREFIX` added, for a file system of its own
/// in that database; `None` for an engine without table prefixes (Redis).
pub fn with_table_prefix(url: &str, prefix: &str) -> Option<String> {
    if !SQL_SCHEMES.iter().any(|scheme| url.starts_with(scheme)) {
        return None;
    }
    let separator = if url.contains('?') { '&' } else { '?' };
    Some(format!("{url}{separator}table_prefix={prefix}"))
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = (bytes[i] == b'%')
            .then(|| text.get(i + 1..i + 3))
            .flatten()
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match hex {
            Some(byte) => {
                out.push(byte);
                i += 3;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::MetaUrl;

    #[test]
    fn the_password_is_taken_out_of_the_url() {
        let url = MetaUrl::parse("redis://:s3cret@10.0.0.1:6379/1");
        assert_eq!(url.shown, "redis://10.0.0.1:6379/1");
        assert_eq!(url.password.as_deref(), Some("s3cret"));

        let url = MetaUrl::parse("postgres://jfs:p%40ss@db:5432/meta?sslmode=disable");
        assert_eq!(url.shown, "postgres://jfs@db:5432/meta?sslmode=disable");
        assert_eq!(url.password.as_deref(), Some("p@ss"));

        let url = MetaUrl::parse("redis://user:raw@pass@h:1/2");
        assert_eq!(url.shown, "redis://user@h:1/2");
        assert_eq!(url.password.as_deref(), Some("raw@pass"));
    }

    #[test]
    fn sql_engines_take_a_table_prefix_and_redis_does_not() {
        assert_eq!(
            super::with_table_prefix("postgres://u:p@db:5432/meta?sslmode=disable", "ws1").unwrap(),
            "postgres://u:p@db:5432/meta?sslmode=disable&table_prefix=ws1"
        );
        assert_eq!(
            super::with_table_prefix("sqlite3:///m.db", "ws1").unwrap(),
            "sqlite3:///m.db?table_prefix=ws1"
        );
        assert_eq!(super::with_table_prefix("redis://h:6379/1", "ws1"), None);
    }

    #[test]
    fn a_url_without_a_password_is_kept_as_it_is() {
        for plain in [
            "redis://127.0.0.1:6379/1",
            "redis://jfs@h:1/2",
            "sqlite3:///x.db",
        ] {
            let url = MetaUrl::parse(plain);
            assert_eq!(url.shown, plain);
            assert_eq!(url.password, None);
        }
        assert!(!format!("{:?}", MetaUrl::parse("redis://:pw@h/1")).contains("pw@"));
    }
}
