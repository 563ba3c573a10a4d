//! How a gRPC stream ended, as the client tells it: the reason for people, and the status the
//! server sent if it sent one.

use tonic::Status;

use crate::core::stream::StreamEnd;
use crate::transport::hub::error_chain;

/// A status tonic made up from a transport error (it keeps the error as its source) is not
/// one the server sent: the stream broke without a status.
pub(super) fn stream_end(reason: String, status: &Status) -> StreamEnd {
    let from_server = std::error::Error::source(status).is_none();
    let status = from_server.then(|| (code_name(status.code()), status.message().to_string()));
    StreamEnd { reason, status }
}

/// A gRPC status code as the spec writes it (`DEADLINE_EXCEEDED`).
fn code_name(code: tonic::Code) -> String {
    let camel = format!("{code:?}");
    let mut name = String::with_capacity(camel.len() + 4);
    for (i, c) in camel.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            name.push('_');
        }
        name.push(c.to_ascii_uppercase());
    }
    name
}

pub(super) fn status_text(status: &Status) -> String {
    let mut text = format!("{:?}: {}", status.code(), status.message());
    if let Some(source) = std::error::Error::source(status) {
        text.push_str(": ");
        text.push_str(&error_chain(source));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_codes_are_named_as_the_grpc_spec_writes_them() {
        assert_eq!(code_name(tonic::Code::Ok), "OK");
        assert_eq!(code_name(tonic::Code::Unavailable), "UNAVAILABLE");
        assert_eq!(
            code_name(tonic::Code::DeadlineExceeded),
            "DEADLINE_EXCEEDED"
        );
        assert_eq!(code_name(tonic::Code::InvalidArgument), "INVALID_ARGUMENT");
    }

    #[test]
    fn a_status_made_from_a_transport_error_is_no_status_from_the_server() {
        let sent = Status::unavailable("going away");
        let end = stream_end(status_text(&sent), &sent);
        assert_eq!(
            end.status,
            Some(("UNAVAILABLE".to_string(), "going away".to_string()))
        );
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "reset by peer");
        let broken = Status::from_error(Box::new(io));
        let end = stream_end(status_text(&broken), &broken);
        assert_eq!(end.status, None, "{end:?}");
        assert!(end.reason.contains("reset by peer"), "{}", end.reason);
    }
}
