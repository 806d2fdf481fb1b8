//! Signed cookies: the session of a signed-in person, and the short-lived
//! state of a sign-in in progress. A cookie's value is
//! `base64url(json).base64url(hmac)`; the HMAC covers a purpose label too,
//! so one kind of cookie cannot be replayed as the other.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use rand::RngCore as _;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use sha2::Sha256;

/// The session cookie's name.
pub const SESSION_COOKIE: &str = "levers9_session";
/// The cookie that carries a Google sign-in from its start to its callback.
pub const SIGNIN_COOKIE: &str = "levers9_signin";
/// How long a session lasts: a working day, then sign in again.
pub const SESSION_LIFETIME: Duration = Duration::from_secs(12 * 3600);
/// How long a person has to finish signing in at Google.
pub const SIGNIN_LIFETIME: Duration = Duration::from_secs(10 * 60);

/// A signed-in person.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Session {
    pub email: String,
    /// `google` or `dev`.
    pub method: String,
    /// Sent back in `x-csrf-token` on every state-changing call.
    pub csrf: String,
    /// Unix seconds.
    pub expires_at: u64,
}

/// A Google sign-in between its start and its callback.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct SigninState {
    pub state: String,
    pub nonce: String,
    pub pkce_verifier: String,
    pub expires_at: u64,
}

/// Why a cookie was not taken.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum CookieError {
    #[error("the cookie is not in the signed format")]
    Malformed,
    #[error("the cookie's signature does not match")]
    BadSignature,
    #[error("the cookie has expired")]
    Expired,
}

/// Something with an expiry that can ride in a signed cookie.
pub trait Expiring: Serialize + DeserializeOwned {
    /// The label the signature covers.
    const PURPOSE: &'static str;
    fn expires_at(&self) -> u64;
}

impl Expiring for Session {
    const PURPOSE: &'static str = "session";
    fn expires_at(&self) -> u64 {
        self.expires_at
    }
}

impl Expiring for SigninState {
    const PURPOSE: &'static str = "signin";
    fn expires_at(&self) -> u64 {
        self.expires_at
    }
}

/// Signs and opens cookies with the session secret.
#[derive(Clone)]
pub struct CookieKey {
    secret: Vec<u8>,
}

impl CookieKey {
    pub fn new(secret: &[u8]) -> CookieKey {
        CookieKey {
            secret: secret.to_vec(),
        }
    }

    fn mac(&self, purpose: &str, payload: &str) -> Hmac<Sha256> {
        // HMAC takes a key of any length: this cannot fail.
        let mut mac =
            Hmac::<Sha256>::new_from_slice(&self.secret).expect("HMAC accepts any key length");
        mac.update(purpose.as_bytes());
        mac.update(b".");
        mac.update(payload.as_bytes());
        mac
    }

    /// The cookie value for `value`.
    pub fn seal<T: Expiring>(&self, value: &T) -> String {
        let json = serde_json::to_vec(value).expect("cookie contents serialise");
        let payload = URL_SAFE_NO_PAD.encode(json);
        let tag = self.mac(T::PURPOSE, &payload).finalize().into_bytes();
        format!("{payload}.{}", URL_SAFE_NO_PAD.encode(tag))
    }

    /// Opens a cookie value: signature first (constant time), then expiry.
    pub fn open<T: Expiring>(&self, cookie: &str) -> Result<T, CookieError> {
        let (payload, tag) = cookie.split_once('.').ok_or(CookieError::Malformed)?;
        let tag = URL_SAFE_NO_PAD
            .decode(tag)
            .map_err(|_| CookieError::Malformed)?;
        self.mac(T::PURPOSE, payload)
            .verify_slice(&tag)
            .map_err(|_| CookieError::BadSignature)?;
        let json = URL_SAFE_NO_PAD
            .decode(payload)
            .map_err(|_| CookieError::Malformed)?;
        let value: T = serde_json::from_slice(&json).map_err(|_| CookieError::Malformed)?;
        if value.expires_at() <= unix_now() {
            return Err(CookieError::Expired);
        }
        Ok(value)
    }
}

impl Session {
    /// A new session for `email`, with a fresh CSRF token.
    pub fn new(email: &str, method: &str) -> Session {
        Session {
            email: email.to_owned(),
            method: method.to_owned(),
            csrf: random_token(),
            expires_at: unix_now() + SESSION_LIFETIME.as_secs(),
        }
    }
}

/// 32 random bytes, base64url.
pub fn random_token() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    URL_SAFE_NO_PAD.encode(bytes)
}

pub fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// A `Set-Cookie` value.
pub fn set_cookie(
    name: &str,
    value: &str,
    max_age: Duration,
    secure: bool,
    domain: Option<&str>,
) -> String {
    // Lax, not Strict: the redirect back from Google is a top-level GET from
    // another site, and it must carry the sign-in cookie.
    let mut cookie = format!(
        "{name}={value}; Path=/; Max-Age={}; HttpOnly; SameSite=Lax",
        max_age.as_secs()
    );
    if secure {
        cookie.push_str("; Secure");
    }
    if let Some(domain) = domain {
        cookie.push_str("; Domain=");
        cookie.push_str(domain);
    }
    cookie
}

/// The value of cookie `name` among a request's `Cookie` headers.
pub fn request_cookie<'a>(headers: &'a http::HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(|h| cookie_value(h, name))
}

/// The value of cookie `name` in a `Cookie` header.
fn cookie_value<'a>(header: &'a str, name: &str) -> Option<&'a str> {
    header.split(';').find_map(|pair| {
        let (k, v) = pair.trim().split_once('=')?;
        (k == name).then_some(v)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &[u8] = b"0123456789abcdef0123456789abcdef";

    #[test]
    fn a_sealed_session_opens_with_the_same_key_only() {
        let session = Session::new("ada@example.com", "dev");
        let cookie = CookieKey::new(SECRET).seal(&session);
        assert_eq!(CookieKey::new(SECRET).open::<Session>(&cookie), Ok(session));
        let other = CookieKey::new(b"another secret of thirty-two bytes!");
        assert_eq!(
            other.open::<Session>(&cookie),
            Err(CookieError::BadSignature)
        );
    }

    #[test]
    fn a_signin_cookie_is_not_a_session() {
        let key = CookieKey::new(SECRET);
        let state = SigninState {
            state: "s".into(),
            nonce: "n".into(),
            pkce_verifier: "v".into(),
            expires_at: unix_now() + 60,
        };
        let cookie = key.seal(&state);
        assert_eq!(key.open::<Session>(&cookie), Err(CookieError::BadSignature));
    }

    #[test]
    fn cookie_values_are_found_among_others() {
        let header = "a=1; levers9_session=x.y; b=2";
        assert_eq!(cookie_value(header, SESSION_COOKIE), Some("x.y"));
        assert_eq!(cookie_value(header, SIGNIN_COOKIE), None);
    }
}
