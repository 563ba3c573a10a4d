//! Who may read the admin data (`/status`, `/snapshot`, and anything else that shows clients'
//! configuration): a peer on loopback, a request with `Authorization: Bearer <--admin-token>`,
//! or a connection with a verified client certificate (mTLS). Anyone else gets 401 with a
//! hint saying which of the three to use. `/healthz` stays open, and so does xDS itself:
//! in a container the server listens on 0.0.0.0 for the Envoy next door.
//!
//! [`AdminAccess::check`] is the one decision; [`require`] applies it to axum routes, and
//! [`AdminAccess::check_grpc`] to a gRPC admin service (CSDS), which answers a refusal as
//! `UNAUTHENTICATED`.

use std::{fmt, net::IpAddr, sync::Arc};

use axum::{
    Json,
    extract::{Request, State},
    http::{HeaderMap, HeaderValue, StatusCode, header},
    middleware::Next,
    response::{IntoResponse, Response},
};
use serde_json::json;
use subtle::ConstantTimeEq;
use tracing::info;

use crate::net::conn::PeerInfo;

/// What a refused request is told.
pub(crate) const HINT: &str = "the admin data is served to loopback peers, to requests with \
                        `Authorization: Bearer <token>` (the server's --admin-token), and to \
                        connections with a verified client certificate (--tls-client-ca)";

/// The admin access rule. Cheap to clone; never prints the token.
#[derive(Clone, Default)]
pub(crate) struct AdminAccess {
    token: Option<Arc<str>>,
}

impl fmt::Debug for AdminAccess {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let token = self.token.as_ref().map(|_| "(set)");
        f.debug_struct("AdminAccess")
            .field("token", &token)
            .finish()
    }
}

/// Why a request may read the admin data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Allowed {
    Loopback,
    Token,
    ClientCertificate,
}

/// Why it may not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Denied {
    pub reason: String,
}

impl fmt::Display for Denied {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {HINT}", self.reason)
    }
}

impl From<Denied> for tonic::Status {
    fn from(denied: Denied) -> Self {
        tonic::Status::unauthenticated(denied.to_string())
    }
}

impl AdminAccess {
    /// `token`: the bearer token that opens the admin data to any peer (`--admin-token`).
    pub(crate) fn new(token: Option<String>) -> Self {
        let token = token.filter(|t| !t.is_empty()).map(Arc::from);
        Self { token }
    }

    /// The rule, for a peer (`None` when the connection did not come through
    /// [`crate::net::incoming`]: nothing is known about it) and the request's
    /// `Authorization` header.
    pub(crate) fn check(
        &self,
        peer: Option<&PeerInfo>,
        authorization: Option<&HeaderValue>,
    ) -> Result<Allowed, Denied> {
        if peer.is_some_and(|p| is_loopback(p.addr.ip())) {
            return Ok(Allowed::Loopback);
        }
        if peer.is_some_and(|p| p.identity.is_some()) {
            return Ok(Allowed::ClientCertificate);
        }
        let presented = authorization.and_then(|v| bearer(v.as_bytes()));
        let denied = |reason: &str| {
            Err(Denied {
                reason: reason.to_string(),
            })
        };
        match (&self.token, presented) {
            (Some(token), Some(given)) if bool::from(given.ct_eq(token.as_bytes())) => {
                Ok(Allowed::Token)
            }
            (Some(_), Some(_)) => denied("the bearer token is not the server's --admin-token"),
            (None, Some(_)) => {
                denied("a bearer token was sent, but the server has no --admin-token")
            }
            (_, None) => match peer {
                Some(p) => denied(&format!("{} is not a loopback peer", p.addr.ip())),
                None => denied("the peer is unknown"),
            },
        }
    }

    /// [`AdminAccess::check`] on a gRPC request (an admin service on the xDS port: CSDS);
    /// refused with `UNAUTHENTICATED` and the same hint.
    pub(crate) fn check_grpc<T>(
        &self,
        request: &tonic::Request<T>,
    ) -> Result<Allowed, tonic::Status> {
        let headers = request.metadata().clone().into_headers();
        self.check_request(request.extensions(), &headers)
            .map_err(tonic::Status::from)
    }

    /// [`AdminAccess::check`] on a request's extensions and headers.
    pub(crate) fn check_request(
        &self,
        extensions: &axum::http::Extensions,
        headers: &HeaderMap,
    ) -> Result<Allowed, Denied> {
        let peer = extensions.get::<PeerInfo>();
        let verdict = self.check(peer, headers.get(header::AUTHORIZATION));
        if let Err(denied) = &verdict {
            let peer = peer.map(|p| p.addr.to_string());
            info!(peer = peer.as_deref(), reason = %denied.reason, "admin request refused");
        }
        verdict
    }
}

/// `127.0.0.0/8`, `::1`, and IPv4 loopback mapped into IPv6.
fn is_loopback(ip: IpAddr) -> bool {
    ip.to_canonical().is_loopback()
}

/// The token of `Bearer <token>` (the scheme is case-insensitive).
fn bearer(value: &[u8]) -> Option<&[u8]> {
    let (scheme, token) = value.split_at_checked(7)?;
    let token = token.trim_ascii();
    (scheme.eq_ignore_ascii_case(b"bearer ") && !token.is_empty()).then_some(token)
}

/// axum middleware: the admin data for requests [`AdminAccess`] allows, 401 with the hint
/// for the others.
pub(crate) async fn require(
    State(access): State<AdminAccess>,
    request: Request,
    next: Next,
) -> Response {
    match access.check_request(request.extensions(), request.headers()) {
        Ok(_) => next.run(request).await,
        Err(denied) => {
            let body = json!({"error": denied.reason, "hint": HINT});
            let challenge = [(header::WWW_AUTHENTICATE, "Bearer realm=\"xdsloop-admin\"")];
            (StatusCode::UNAUTHORIZED, challenge, Json(body)).into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;

    use super::*;
    use crate::net::{conn::RequestBudget, identity::PeerIdentity};

    fn peer(addr: &str, cert: bool) -> PeerInfo {
        PeerInfo {
            addr: addr.parse::<SocketAddr>().unwrap(),
            identity: cert.then(|| Arc::new(PeerIdentity::default())),
            budget: RequestBudget::unlimited(),
            kill: Default::default(),
        }
    }

    fn header(text: &str) -> HeaderValue {
        HeaderValue::from_str(text).unwrap()
    }

    #[test]
    fn loopback_peers_are_allowed_and_remote_ones_need_a_token_or_a_certificate() {
        let open = AdminAccess::new(None);
        for addr in [
            "127.0.0.1:1",
            "127.8.9.1:1",
            "[::1]:1",
            "[::ffff:127.0.0.1]:1",
        ] {
            assert_eq!(
                open.check(Some(&peer(addr, false)), None),
                Ok(Allowed::Loopback)
            );
        }
        let remote = peer("10.1.2.3:4000", false);
        let denied = open.check(Some(&remote), None).unwrap_err();
        assert!(
            denied.reason.contains("10.1.2.3 is not a loopback peer"),
            "{denied}"
        );
        assert!(denied.to_string().contains("--admin-token"), "{denied}");
        let certified = peer("10.1.2.3:4000", true);
        assert_eq!(
            open.check(Some(&certified), None),
            Ok(Allowed::ClientCertificate)
        );
        assert!(
            open.check(None, None).is_err(),
            "an unknown peer is not trusted"
        );
    }

    #[test]
    fn the_bearer_token_must_match_exactly() {
        let access = AdminAccess::new(Some("s3cret".into()));
        let remote = peer("192.0.2.7:1", false);
        let check = |value: &str| access.check(Some(&remote), Some(&header(value)));
        assert_eq!(check("Bearer s3cret"), Ok(Allowed::Token));
        assert_eq!(check("bearer  s3cret "), Ok(Allowed::Token));
        for wrong in [
            "Bearer s3cre",
            "Bearer s3cret2",
            "Basic s3cret",
            "s3cret",
            "Bearer ",
        ] {
            assert!(check(wrong).is_err(), "{wrong:?}");
        }
        assert!(
            check("Bearer nope")
                .unwrap_err()
                .reason
                .contains("not the server's")
        );
        let no_token = AdminAccess::new(Some(String::new()));
        let denied = no_token.check(Some(&remote), Some(&header("Bearer x")));
        assert!(denied.unwrap_err().reason.contains("has no --admin-token"));
        assert!(
            !format!("{access:?}").contains("s3cret"),
            "Debug hides the token"
        );
    }
}
