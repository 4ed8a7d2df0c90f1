//! A download host whose answers break off mid-body or never end: the
//! faults [`BodyFault::CutShort`], [`BodyFault::Reset`] and
//! [`BodyFault::Endless`], which the mock library cannot serve (its bodies
//! are whole). The fake server answers a faulty request with a redirect here.
//!
//! It is hyper serving one route per body: `200`, a `Content-Length` for the
//! whole body, the first half, then the body fails and hyper drops the
//! connection. For a reset the socket lingers zero seconds, so the kernel
//! sends a TCP RST instead of a FIN. An endless body has no length: the
//! whole body, then zeros for as long as the client reads.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::body::{Body, Bytes, Frame};

use crate::truth::BodyFault;

/// The broken host, serving until dropped.
pub(crate) struct BrokenHost {
    /// Where each body is served.
    urls: Vec<String>,
    /// Dropping it stops the accept loop and the host's thread.
    _stop: tokio::sync::oneshot::Sender<()>,
}

/// One broken answer: the whole body it announces and how it breaks.
#[derive(Clone)]
pub(crate) struct Broken {
    pub(crate) whole: Bytes,
    pub(crate) kind: BodyFault,
}

impl BrokenHost {
    /// Starts the host on 127.0.0.1 (free ports) on its own thread, serving
    /// each of `bodies` at its own URL ([`BrokenHost::urls`]).
    ///
    /// # Errors
    /// The socket or the runtime cannot be created.
    pub(crate) fn start(bodies: Vec<Broken>) -> std::io::Result<BrokenHost> {
        // Two listeners: resets come from one whose sockets linger zero
        // seconds, so that closing them sends RST rather than FIN.
        let bind = || -> std::io::Result<(std::net::TcpListener, String)> {
            let l = std::net::TcpListener::bind(("127.0.0.1", 0))?;
            l.set_nonblocking(true)?;
            let base = format!("http://{}", l.local_addr()?);
            Ok((l, base))
        };
        let ((closing, closing_base), (resetting, resetting_base)) = (bind()?, bind()?);
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let urls = bodies
            .iter()
            .enumerate()
            .map(|(i, b)| {
                let base = if b.kind == BodyFault::Reset { &resetting_base } else { &closing_base };
                format!("{base}/broken/{i}")
            })
            .collect();
        let bodies = Arc::new(bodies);
        std::thread::Builder::new().name("llmgw-broken-host".into()).spawn(move || {
            runtime.block_on(async move {
                let (Ok(closing), Ok(resetting)) =
                    (tokio::net::TcpListener::from_std(closing), tokio::net::TcpListener::from_std(resetting))
                else {
                    return;
                };
                tokio::select! {
                    _ = stopped => {}
                    () = serve(closing, bodies.clone(), false) => {}
                    () = serve(resetting, bodies, true) => {}
                }
            });
        })?;
        Ok(BrokenHost { urls, _stop: stop })
    }

    /// The URL of each body, in the order given: `http://127.0.0.1:40125/broken/0`.
    pub(crate) fn urls(&self) -> impl Iterator<Item = &str> {
        self.urls.iter().map(String::as_str)
    }
}

async fn serve(listener: tokio::net::TcpListener, bodies: Arc<Vec<Broken>>, reset: bool) {
    while let Ok((stream, _)) = listener.accept().await {
        let bodies = bodies.clone();
        if reset {
            let _ = socket2::SockRef::from(&stream).set_linger(Some(Duration::ZERO));
        }
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                let broken = req
                    .uri()
                    .path()
                    .strip_prefix("/broken/")
                    .and_then(|i| i.parse::<usize>().ok())
                    .and_then(|i| bodies.get(i).cloned());
                async move {
                    let resp = match broken {
                        Some(b) if b.kind == BodyFault::Endless => hyper::Response::builder()
                            .header("content-type", "application/octet-stream")
                            .body(HalfBody::endless(&b))
                            .expect("a valid response"),
                        Some(b) => hyper::Response::builder()
                            .header("content-type", "application/octet-stream")
                            .header("content-length", b.whole.len())
                            .body(HalfBody::new(&b))
                            .expect("a valid response"),
                        None => hyper::Response::builder().status(404).body(HalfBody::empty()).expect("valid"),
                    };
                    Ok::<_, Infallible>(resp)
                }
            });
            let io = hyper_util::rt::TokioIo::new(stream);
            let _ = hyper::server::conn::http1::Builder::new().serve_connection(io, service).await;
        });
    }
}

/// A body that yields the first half of its bytes (none for a reset), then
/// fails; or, endless, all of them and then zeros for ever.
struct HalfBody {
    part: Option<Bytes>,
    announced: u64,
    failed: bool,
    endless: bool,
}

/// Zeros an endless body goes on with, a chunk at a time.
const ZEROS: &[u8] = &[0; 64 * 1024];

impl HalfBody {
    fn new(b: &Broken) -> HalfBody {
        let part = match b.kind {
            BodyFault::Reset => b.whole.slice(..b.whole.len().min(1)),
            _ => b.whole.slice(..b.whole.len() / 2),
        };
        HalfBody { part: Some(part), announced: b.whole.len() as u64, failed: false, endless: false }
    }

    fn endless(b: &Broken) -> HalfBody {
        HalfBody { part: Some(b.whole.clone()), announced: 0, failed: false, endless: true }
    }

    fn empty() -> HalfBody {
        HalfBody { part: None, announced: 0, failed: true, endless: false }
    }
}

impl Body for HalfBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        if let Some(part) = self.part.take() {
            return Poll::Ready(Some(Ok(Frame::data(part))));
        }
        if self.endless {
            return Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(ZEROS)))));
        }
        if self.failed {
            return Poll::Ready(None);
        }
        self.failed = true;
        Poll::Ready(Some(Err(std::io::Error::new(std::io::ErrorKind::ConnectionAborted, "the body breaks off here"))))
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        if self.endless {
            return hyper::body::SizeHint::default();
        }
        hyper::body::SizeHint::with_exact(self.announced)
    }
}
