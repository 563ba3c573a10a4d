//! One accepted connection as the HTTP server sees it: plain TCP or TLS, who is on the other
//! end ([`PeerInfo`], in every request's extensions), the connection permit it holds, and
//! the signal that closes it at shutdown.

use std::{
    io,
    net::SocketAddr,
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
};

use tokio::{
    io::{AsyncRead, AsyncWrite, ReadBuf},
    net::TcpStream,
    sync::{OwnedSemaphorePermit, Semaphore},
};
use tokio_rustls::server::TlsStream;
use tonic::transport::server::Connected;

use crate::net::{
    close::{CloseSignal, KillSwitch},
    identity::PeerIdentity,
};

/// Who a request came from. tonic puts it into every request's extensions.
#[derive(Debug, Clone)]
pub(crate) struct PeerInfo {
    pub addr: SocketAddr,
    /// The verified client certificate's identity (mTLS); `None` without one.
    pub identity: Option<Arc<PeerIdentity>>,
    /// Shared by the connection's streams for their unfinished requests.
    pub budget: RequestBudget,
    /// Resets this connection (`reset: { scope: connection }`).
    pub kill: KillSwitch,
}

/// The bytes of unfinished requests one connection's streams may hold together. A stream
/// reserves a whole request once its length prefix has arrived and reads no further until the
/// reservation is granted, so one connection cannot pin `streams × --max-request-bytes`.
#[derive(Debug, Clone)]
pub(crate) struct RequestBudget {
    semaphore: Arc<Semaphore>,
}

impl RequestBudget {
    pub(crate) fn new(bytes: usize) -> Self {
        Self {
            semaphore: Arc::new(Semaphore::new(bytes.min(Semaphore::MAX_PERMITS))),
        }
    }

    #[cfg(test)]
    /// A budget no request ever waits for (connections that are not ours: tests, embedders).
    pub(crate) fn unlimited() -> Self {
        Self::new(Semaphore::MAX_PERMITS)
    }

    pub(crate) fn semaphore(&self) -> Arc<Semaphore> {
        self.semaphore.clone()
    }

    /// Bytes not reserved right now.
    pub(crate) fn available(&self) -> usize {
        self.semaphore.available_permits()
    }
}

enum Io {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

/// An accepted connection, handed to the HTTP server.
pub(crate) struct Conn {
    io: Io,
    info: PeerInfo,
    close: CloseSignal,
    /// Counts against `--max-connections` until the connection is dropped.
    _permit: OwnedSemaphorePermit,
}

impl Conn {
    pub(crate) fn plain(
        tcp: TcpStream,
        info: PeerInfo,
        close: CloseSignal,
        permit: OwnedSemaphorePermit,
    ) -> Self {
        Self {
            io: Io::Plain(tcp),
            info,
            close,
            _permit: permit,
        }
    }

    pub(crate) fn tls(
        tls: TlsStream<TcpStream>,
        info: PeerInfo,
        close: CloseSignal,
        permit: OwnedSemaphorePermit,
    ) -> Self {
        Self {
            io: Io::Tls(Box::new(tls)),
            info,
            close,
            _permit: permit,
        }
    }

    /// Closed: after a reset, drop the socket with zero linger so the peer sees a TCP RST.
    fn closed<T>(&self, error: io::Error) -> Poll<io::Result<T>> {
        if self.close.is_reset() {
            let tcp = match &self.io {
                Io::Plain(tcp) => tcp,
                Io::Tls(tls) => tls.get_ref().0,
            };
            let _ = tcp.set_zero_linger();
        }
        Poll::Ready(Err(error))
    }

    /// `Pending` from the socket: be woken by a close too.
    fn pending<T>(&self, cx: &Context<'_>) -> Poll<io::Result<T>> {
        match self.close.register(cx) {
            Ok(()) => Poll::Pending,
            Err(closed) => self.closed(closed),
        }
    }
}

impl Connected for Conn {
    type ConnectInfo = PeerInfo;

    fn connect_info(&self) -> PeerInfo {
        self.info.clone()
    }
}

/// Runs `$op` on whichever stream the connection is, failing once closed.
macro_rules! delegate {
    ($self:ident, $cx:ident, |$io:ident| $op:expr) => {{
        let this = $self.get_mut();
        if let Err(closed) = this.close.check() {
            return this.closed(closed);
        }
        let polled = match &mut this.io {
            Io::Plain(tcp) => {
                let $io = Pin::new(tcp);
                $op
            }
            Io::Tls(tls) => {
                let $io = Pin::new(tls.as_mut());
                $op
            }
        };
        match polled {
            Poll::Pending => this.pending($cx),
            ready => ready,
        }
    }};
}

impl AsyncRead for Conn {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        delegate!(self, cx, |io| io.poll_read(cx, buf))
    }
}

impl AsyncWrite for Conn {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        delegate!(self, cx, |io| io.poll_write(cx, buf))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        delegate!(self, cx, |io| io.poll_write_vectored(cx, bufs))
    }

    fn is_write_vectored(&self) -> bool {
        match &self.io {
            Io::Plain(tcp) => tcp.is_write_vectored(),
            Io::Tls(tls) => tls.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        delegate!(self, cx, |io| io.poll_flush(cx))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        delegate!(self, cx, |io| io.poll_shutdown(cx))
    }
}
