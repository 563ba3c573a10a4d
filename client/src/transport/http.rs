//! What REST polling needs from HTTP: one `POST` of a JSON body on a fresh HTTP/1.1
//! connection, bounded by a timeout and a size limit; and the proto3 JSON form of
//! `DiscoveryRequest` / `DiscoveryResponse` (field names as Envoy writes them, `Any` with
//! `@type`) over the codec's descriptor pool.

use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::StatusCode;
use hyper::header::{ACCEPT, CONNECTION, CONTENT_TYPE, HOST};
use hyper_util::rt::TokioIo;
use prost::Message;
use prost_reflect::{DeserializeOptions, DynamicMessage, SerializeOptions};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::rustls::{ClientConfig, pki_types::ServerName};
use xdsloop_proto::Codec;
use xdsloop_proto::discovery::{DiscoveryRequest, DiscoveryResponse};

use crate::config::ClientTls;
use crate::error::ClientError;
use crate::transport::tls;

const REQUEST_MESSAGE: &str = "envoy.service.discovery.v3.DiscoveryRequest";
const RESPONSE_MESSAGE: &str = "envoy.service.discovery.v3.DiscoveryResponse";

/// Where REST requests go: `host:port` plus an optional path prefix, over TLS or not.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Base {
    pub authority: String,
    pub prefix: String,
    pub tls: Option<RestTls>,
}

/// TLS for REST polls: the configuration and the name the server's certificate must carry.
#[derive(Clone)]
pub(crate) struct RestTls {
    config: Arc<ClientConfig>,
    name: ServerName<'static>,
    /// For [`tls::explain`]: the CA file's name.
    settings: ClientTls,
}

impl std::fmt::Debug for RestTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RestTls").field("name", &self.name).finish()
    }
}

impl PartialEq for RestTls {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && self.settings == other.settings
    }
}

impl Eq for RestTls {}

impl Base {
    /// `host:port`, `http://host:port` or `http://host:port/prefix`, plaintext.
    #[cfg(test)]
    pub(crate) fn parse(server: &str) -> Result<Self, ClientError> {
        Self::new(server, None)
    }

    /// `host:port[/prefix]`, with `http://` or (with `tls`) `https://`.
    pub(crate) fn new(server: &str, tls: Option<&ClientTls>) -> Result<Self, ClientError> {
        let bad = |message: &str| ClientError::Address {
            address: server.to_string(),
            message: message.to_string(),
        };
        let uri = super::uri(server, tls.is_some())?;
        let rest = uri.split_once("://").map_or(server, |(_, rest)| rest);
        let (authority, prefix) = match rest.find('/') {
            Some(i) => (&rest[..i], rest[i..].trim_end_matches('/')),
            None => (rest, ""),
        };
        if authority.is_empty() || !authority.contains(':') {
            return Err(bad("expected host:port"));
        }
        let tls = match tls {
            None => None,
            Some(settings) => Some(RestTls {
                config: tls::rest_config(settings)?,
                name: server_name(authority, settings)?,
                settings: settings.clone(),
            }),
        };
        Ok(Self {
            authority: authority.to_string(),
            prefix: prefix.to_string(),
            tls,
        })
    }
}

/// `--tls-server-name`, or the host of `authority`.
fn server_name(authority: &str, tls: &ClientTls) -> Result<ServerName<'static>, ClientError> {
    let host = authority
        .rsplit_once(':')
        .map_or(authority, |(host, _)| host);
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let name = tls.server_name.as_deref().unwrap_or(host).to_string();
    ServerName::try_from(name.clone())
        .map_err(|e| ClientError::tls_because(format!("{name:?} is not a server name"), e))
}

/// What a poll got back.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Answer {
    /// 200: a DiscoveryResponse body.
    Body(Bytes),
    /// 304: nothing changed since the version the request carried (Envoy: no update).
    NotModified,
}

/// `POST`s `body` to `path` and returns the answer; any other status, a connection failure or
/// the timeout is an error (Envoy treats them all as a connection failure, retried later).
pub(crate) async fn post(
    base: &Base,
    path: &str,
    body: Vec<u8>,
    timeout: std::time::Duration,
    max_body_bytes: usize,
) -> Result<Answer, String> {
    let exchange = exchange(base, path, body, max_body_bytes);
    match tokio::time::timeout(timeout, exchange).await {
        Ok(result) => result,
        Err(_) => Err(format!(
            "no answer within {}",
            humantime::format_duration(timeout)
        )),
    }
}

async fn exchange(
    base: &Base,
    path: &str,
    body: Vec<u8>,
    max_body_bytes: usize,
) -> Result<Answer, String> {
    let stream = TcpStream::connect(&base.authority)
        .await
        .map_err(|e| format!("connect to {}: {e}", base.authority))?;
    let _ = stream.set_nodelay(true);
    let Some(tls) = &base.tls else {
        return over(stream, base, path, body, max_body_bytes).await;
    };
    let connector = TlsConnector::from(tls.config.clone());
    let stream = connector
        .connect(tls.name.clone(), stream)
        .await
        .map_err(|e| tls::describe(&e, Some(&tls.settings), format!("TLS: {e}")))?;
    over(stream, base, path, body, max_body_bytes).await
}

/// One request and its answer on a connected `stream`.
async fn over(
    stream: impl AsyncRead + AsyncWrite + Unpin + Send + 'static,
    base: &Base,
    path: &str,
    body: Vec<u8>,
    max_body_bytes: usize,
) -> Result<Answer, String> {
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| e.to_string())?;
    let request = hyper::Request::post(format!("{}{path}", base.prefix))
        .header(HOST, &base.authority)
        .header(CONTENT_TYPE, "application/json")
        .header(ACCEPT, "application/json")
        // One request per connection: the server may close it once it has answered.
        .header(CONNECTION, "close")
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| e.to_string())?;
    let response = async move {
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| e.to_string())?;
        let status = response.status();
        let body = Limited::new(response.into_body(), max_body_bytes)
            .collect()
            .await
            .map_err(|e| format!("reading the body: {e}"))?
            .to_bytes();
        match status {
            StatusCode::OK => Ok(Answer::Body(body)),
            StatusCode::NOT_MODIFIED => Ok(Answer::NotModified),
            other => {
                let text = String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned();
                Err(format!("HTTP {other}: {}", text.trim()))
            }
        }
    };
    // The connection is driven here, not spawned, so a timeout drops it with the request.
    tokio::pin!(response, connection);
    let mut connection_done = false;
    loop {
        tokio::select! {
            biased;
            answer = &mut response => return answer,
            done = &mut connection, if !connection_done => {
                connection_done = true;
                done.map_err(|e| e.to_string())?;
            }
        }
    }
}

/// A DiscoveryRequest as proto3 JSON with proto field names, as Envoy's REST client sends it.
pub(crate) fn request_json(codec: &Codec, request: &DiscoveryRequest) -> Vec<u8> {
    let desc = codec
        .pool()
        .get_message_by_name(REQUEST_MESSAGE)
        .expect("the Envoy API has DiscoveryRequest");
    let message = DynamicMessage::decode(desc, request.encode_to_vec().as_slice())
        .expect("a message we encoded decodes");
    let options = SerializeOptions::new().use_proto_field_name(true);
    let mut out = Vec::new();
    let mut serializer = serde_json::Serializer::new(&mut out);
    message
        .serialize_with_options(&mut serializer, &options)
        .expect("a DiscoveryRequest serializes");
    out
}

/// Parses a JSON DiscoveryResponse; resources are `Any`s with `@type`. Unknown fields are
/// ignored, as Envoy does for dynamic config.
pub(crate) fn response_from_json(codec: &Codec, body: &[u8]) -> Result<DiscoveryResponse, String> {
    let desc = codec
        .pool()
        .get_message_by_name(RESPONSE_MESSAGE)
        .expect("the Envoy API has DiscoveryResponse");
    let options = DeserializeOptions::new().deny_unknown_fields(false);
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    let message = DynamicMessage::deserialize_with_options(desc, &mut deserializer, &options)
        .map_err(|e| e.to_string())?;
    deserializer.end().map_err(|e| e.to_string())?;
    message.transcode_to().map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests;
