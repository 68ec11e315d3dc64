//! The remote transports' HTTP port, bound to `wasi:http/outgoing-handler`.
//!
//! Each exchange is one `outgoing-request` handed to `handle`, its body written
//! without blocking (a piece per `poll`, as the host's buffer takes it), then its
//! `future-incoming-response` and the response body's `input-stream` read without
//! blocking. Their pollables are asked for once per stage and offered to the
//! platform's `block`. Resources are dropped children first (pollable, stream,
//! body, response), as the component model requires.

use core::cell::OnceCell;

use alloc::collections::BTreeMap;

use super::bindings::wasi::http::outgoing_handler;
use super::bindings::wasi::http::types::{
    ErrorCode, Fields, FutureIncomingResponse, IncomingBody, IncomingResponse,
    Method as WasiMethod, OutgoingBody, OutgoingRequest, RequestOptions, Scheme, http_error_code,
};
use super::bindings::wasi::io::poll::Pollable;
use super::bindings::wasi::io::streams::{InputStream, OutputStream, StreamError};
use crate::prelude::*;
use crate::remote::port::{
    ErrorKind, ExchangeId, Head, HttpError, HttpPort, Method, Progress, Request,
};
use crate::remote::target::split_url;

/// How long establishing a connection may take (the host's connect timeout).
const CONNECT_TIMEOUT_NS: u64 = 10_000_000_000;
/// The most body bytes read per `poll`.
const READ_CHUNK: u64 = 64 * 1024;

/// The port: the exchanges in flight.
#[derive(Default)]
pub struct WasiHttp {
    next: ExchangeId,
    exchanges: BTreeMap<ExchangeId, Exchange>,
}

impl core::fmt::Debug for WasiHttp {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("WasiHttp")
            .field("exchanges", &self.exchanges.len())
            .finish()
    }
}

/// One exchange. Field order is drop order: pollables before what they watch.
struct Exchange {
    upload_pollable: OnceCell<Pollable>,
    pollable: OnceCell<Pollable>,
    upload: Option<Upload>,
    stage: Stage,
}

/// A request body being written.
struct Upload {
    stream: Option<OutputStream>,
    body: Option<OutgoingBody>,
    data: Vec<u8>,
    at: usize,
}

impl Upload {
    /// Writes what the host takes now; true when the body is complete.
    fn write(&mut self) -> bool {
        let Some(stream) = &self.stream else {
            return true;
        };
        while self.at < self.data.len() {
            let Ok(n) = stream.check_write() else {
                // The host dropped the body: the response says why.
                return self.finish();
            };
            if n == 0 {
                return false;
            }
            let n = (n as usize).min(self.data.len() - self.at);
            if stream.write(&self.data[self.at..self.at + n]).is_err() {
                return self.finish();
            }
            self.at += n;
        }
        self.finish()
    }

    fn finish(&mut self) -> bool {
        self.stream = None;
        if let Some(body) = self.body.take() {
            let _ = OutgoingBody::finish(body, None);
        }
        self.data = Vec::new();
        true
    }
}

/// Where the response is. Field order is drop order: children first.
enum Stage {
    Waiting(FutureIncomingResponse),
    Reading {
        stream: InputStream,
        _body: IncomingBody,
        _response: IncomingResponse,
    },
    Done,
}

impl WasiHttp {
    /// Whether an exchange waits for something (what [`Self::pollables`]
    /// would give), without subscribing to anything. For `turns.step`, which
    /// the stock component does not export.
    #[cfg_attr(feature = "stock", allow(dead_code))]
    pub fn waiting(&self) -> bool {
        self.exchanges.values().any(|ex| {
            matches!(
                &ex.upload,
                Some(Upload {
                    stream: Some(_),
                    ..
                })
            ) || !matches!(ex.stage, Stage::Done)
        })
    }

    /// The pollables of every exchange that waits for something.
    pub fn pollables<'a>(&'a self, out: &mut Vec<&'a Pollable>) {
        for ex in self.exchanges.values() {
            if let Some(Upload {
                stream: Some(stream),
                ..
            }) = &ex.upload
            {
                out.push(ex.upload_pollable.get_or_init(|| stream.subscribe()));
            }
            match &ex.stage {
                Stage::Waiting(future) => out.push(ex.pollable.get_or_init(|| future.subscribe())),
                Stage::Reading { stream, .. } => {
                    out.push(ex.pollable.get_or_init(|| stream.subscribe()));
                }
                Stage::Done => {}
            }
        }
    }
}

impl HttpPort for WasiHttp {
    fn now_ms(&self) -> u64 {
        super::bindings::wasi::clocks::monotonic_clock::now() / 1_000_000
    }

    fn start(&mut self, request: Request) -> Result<ExchangeId, HttpError> {
        let (scheme, authority, path) = split_url(&request.url).ok_or_else(|| {
            HttpError::new(
                ErrorKind::Other,
                format!("{:?} is not an HTTP URL", request.url),
            )
        })?;
        let entries: Vec<(String, Vec<u8>)> = request
            .headers
            .iter()
            .map(|(n, v)| (n.clone(), v.as_bytes().to_vec()))
            .collect();
        let fields = Fields::from_list(&entries).map_err(|e| {
            HttpError::new(
                ErrorKind::Other,
                format!("the host refused a header ({e:?})"),
            )
        })?;
        let outgoing = OutgoingRequest::new(fields);
        let method = match request.method {
            Method::Get => WasiMethod::Get,
            Method::Post => WasiMethod::Post,
            Method::Delete => WasiMethod::Delete,
            Method::Head => WasiMethod::Head,
        };
        let scheme = if scheme == "https" {
            Scheme::Https
        } else {
            Scheme::Http
        };
        let invalid = |what: &str| HttpError::new(ErrorKind::Other, format!("invalid {what}"));
        outgoing
            .set_method(&method)
            .map_err(|()| invalid("method"))?;
        outgoing
            .set_scheme(Some(&scheme))
            .map_err(|()| invalid("scheme"))?;
        outgoing
            .set_authority(Some(&authority))
            .map_err(|()| invalid("authority"))?;
        outgoing
            .set_path_with_query(Some(&path))
            .map_err(|()| invalid("path"))?;
        // A body only where there is one: GET, HEAD and DELETE go without.
        let upload = if request.body.is_empty() {
            None
        } else {
            let body = outgoing.body().map_err(|()| invalid("body"))?;
            let stream = body.write().map_err(|()| invalid("body stream"))?;
            Some(Upload {
                stream: Some(stream),
                body: Some(body),
                data: request.body,
                at: 0,
            })
        };
        let options = RequestOptions::new();
        let _ = options.set_connect_timeout(Some(CONNECT_TIMEOUT_NS));
        let future = outgoing_handler::handle(outgoing, Some(options)).map_err(from_error_code)?;
        let id = self.next;
        self.next += 1;
        let mut ex = Exchange {
            upload_pollable: OnceCell::new(),
            pollable: OnceCell::new(),
            upload,
            stage: Stage::Waiting(future),
        };
        ex.write();
        self.exchanges.insert(id, ex);
        Ok(id)
    }

    fn poll(&mut self, id: ExchangeId) -> Progress {
        let Some(ex) = self.exchanges.get_mut(&id) else {
            return Progress::Failed(HttpError::new(ErrorKind::Other, "the exchange is over"));
        };
        ex.write();
        match &ex.stage {
            Stage::Waiting(future) => match future.get() {
                None => Progress::Pending,
                Some(Err(())) => ex.done(Progress::Failed(HttpError::new(
                    ErrorKind::Other,
                    "the response was taken twice",
                ))),
                Some(Ok(Err(code))) => ex.done(Progress::Failed(from_error_code(code))),
                Some(Ok(Ok(response))) => ex.head(response),
            },
            Stage::Reading { stream, .. } => match stream.read(READ_CHUNK) {
                Ok(bytes) if bytes.is_empty() => Progress::Pending,
                Ok(bytes) => Progress::Data(bytes),
                Err(StreamError::Closed) => ex.done(Progress::End),
                Err(StreamError::LastOperationFailed(e)) => {
                    let error = match http_error_code(&e) {
                        Some(code) => from_error_code(code),
                        None => HttpError::new(ErrorKind::Broken, e.to_debug_string()),
                    };
                    ex.done(Progress::Failed(error))
                }
            },
            Stage::Done => {
                Progress::Failed(HttpError::new(ErrorKind::Other, "the exchange is over"))
            }
        }
    }

    fn close(&mut self, id: ExchangeId) {
        self.exchanges.remove(&id);
    }
}

impl Exchange {
    fn write(&mut self) {
        if let Some(upload) = &mut self.upload
            && upload.write()
        {
            self.upload_pollable.take();
            self.upload = None;
        }
    }

    /// Moves to `Done` (dropping the pollable first) and returns `progress`.
    fn done(&mut self, progress: Progress) -> Progress {
        self.pollable.take();
        self.stage = Stage::Done;
        progress
    }

    /// The response came: its head, and its body to read from now on.
    fn head(&mut self, response: IncomingResponse) -> Progress {
        let status = response.status();
        let headers = {
            let fields = response.headers();
            fields
                .entries()
                .into_iter()
                .map(|(n, v)| {
                    (
                        n.to_ascii_lowercase(),
                        String::from_utf8_lossy(&v).into_owned(),
                    )
                })
                .collect()
        };
        self.pollable.take();
        let Ok(body) = response.consume() else {
            self.stage = Stage::Done;
            return Progress::Failed(HttpError::new(ErrorKind::Other, "no response body"));
        };
        let Ok(stream) = body.stream() else {
            self.stage = Stage::Done;
            return Progress::Failed(HttpError::new(ErrorKind::Other, "no response body stream"));
        };
        self.stage = Stage::Reading {
            stream,
            _body: body,
            _response: response,
        };
        Progress::Head(Head { status, headers })
    }
}

/// What a `wasi:http` error code means to the transports.
fn from_error_code(code: ErrorCode) -> HttpError {
    use ErrorCode as E;
    let (kind, message) = match code {
        E::ConnectionRefused => (ErrorKind::Connect, "connection refused".into()),
        E::DnsTimeout => (ErrorKind::Connect, "DNS lookup timed out".into()),
        E::DnsError(e) => (
            ErrorKind::Connect,
            format!("DNS lookup failed ({})", e.rcode.unwrap_or_default()),
        ),
        E::DestinationNotFound => (ErrorKind::Connect, "host not found".into()),
        E::DestinationUnavailable => (ErrorKind::Connect, "host unavailable".into()),
        E::DestinationIpProhibited => (ErrorKind::Connect, "address prohibited".into()),
        E::DestinationIpUnroutable => (ErrorKind::Connect, "address unroutable".into()),
        E::ConnectionTimeout => (ErrorKind::Connect, "connecting timed out".into()),
        E::ConnectionLimitReached => (ErrorKind::Connect, "too many connections".into()),
        E::TlsProtocolError => (ErrorKind::Connect, "TLS handshake failed".into()),
        E::TlsCertificateError => (ErrorKind::Connect, "the TLS certificate was refused".into()),
        E::TlsAlertReceived(a) => (
            ErrorKind::Connect,
            format!("TLS alert: {}", a.alert_message.unwrap_or_default()),
        ),
        E::ConnectionTerminated => (ErrorKind::Broken, "the connection was closed".into()),
        E::ConnectionReadTimeout => (ErrorKind::Broken, "reading timed out".into()),
        E::ConnectionWriteTimeout => (ErrorKind::Broken, "writing timed out".into()),
        E::HttpResponseIncomplete => (ErrorKind::Broken, "the response was cut off".into()),
        E::HttpProtocolError => (ErrorKind::Broken, "not a valid HTTP response".into()),
        E::HttpResponseTimeout => (ErrorKind::Broken, "no response in time".into()),
        E::HttpRequestDenied => (ErrorKind::Denied, "the host refused the request".into()),
        E::InternalError(Some(m)) => (ErrorKind::Other, m),
        other => (ErrorKind::Other, format!("{other:?}")),
    };
    HttpError { kind, message }
}
