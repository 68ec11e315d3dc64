//! The deprecated HTTP+SSE transport (MCP 2024-11-05), the client side.
//!
//! A GET opens the event stream; its first `endpoint` event names the URL to
//! POST messages to, and every answer arrives on the stream. The endpoint must be
//! on the configured URL's origin, as the reference SDKs require: one elsewhere
//! fails the server and nothing is sent (the host would not add the configured
//! headers there, but the messages themselves are the user's too). Messages are
//! POSTed one at a time, in order. The stream ending closes the connection.

use crate::prelude::*;

use super::port::{Head, Method, Request};
use super::sse::SseParser;
use super::{ACCEPT_BOTH, EVENT_STREAM, Hold, Post, Purpose, Reading, RemoteConnection};
use crate::remote::port::HttpPort;
use crate::transport::Failure;

impl<P: HttpPort> RemoteConnection<P> {
    /// Opens the event stream.
    pub(super) fn open_stream(&mut self) {
        let request = Request {
            method: Method::Get,
            url: self.target.base().to_string(),
            headers: vec![("accept".into(), EVENT_STREAM.into())],
            body: Vec::new(),
        };
        self.start(request, Purpose::Stream);
    }

    pub(super) fn on_stream_head(&mut self, id: u64, head: Head) {
        if (200..300).contains(&head.status) && head.media_type() == EVENT_STREAM {
            if let Some(ex) = self.exchanges.get_mut(&id) {
                ex.reading = Reading::Events {
                    parser: SseParser::new(self.cap),
                    answered: false,
                    before: None,
                };
            }
            return;
        }
        self.finish(id);
        if matches!(head.status, 401 | 403)
            && let Some(Failure::NeedsAuthorization { server, failure }) =
                self.target.unauthorized()
        {
            return self.close(failure.predicate(&server));
        }
        // A predicate: the manager reports it as "server `x` answered …".
        let why = format!(
            "answered GET {} with HTTP {} ({}), not an event stream",
            self.url(),
            head.status,
            head.header("content-type").unwrap_or("no content type")
        );
        self.close(why);
    }

    /// The `endpoint` event: where messages go, if it is on the configured origin.
    pub(super) fn on_endpoint(&mut self, data: &str) {
        if self.endpoint.is_some() {
            return;
        }
        let from = self.target.base().to_string();
        match self.target.resolve(&from, data) {
            Ok(url) => {
                self.endpoint = Some(url);
                self.send_queued_legacy();
            }
            Err(Some(elsewhere)) => {
                let why = format!(
                    "named {} in its endpoint event, another origin than {}; mcpbox sends \
                     messages only to the configured origin, so nothing was sent (if the server \
                     really lives there, configure that URL)",
                    elsewhere.origin,
                    self.url()
                );
                self.close(why);
            }
            Err(None) => {
                self.close(format!(
                    "sent an endpoint event that is not a URL: {data:?}"
                ));
            }
        }
    }

    /// POSTs the next message to the endpoint, once it is known, one at a time.
    pub(super) fn send_queued_legacy(&mut self) -> bool {
        let Some(endpoint) = self.endpoint.clone() else {
            return false;
        };
        if self.hold.is_some() || self.over {
            return false;
        }
        let Some(out) = self.queue.pop_front() else {
            return false;
        };
        if let Some(v) = &out.meta.protocol_version {
            self.version = Some(v.clone());
        }
        let mut h = vec![
            ("accept".to_string(), ACCEPT_BOTH.to_string()),
            ("content-type".to_string(), "application/json".to_string()),
        ];
        h.extend(super::headers::protocol(
            Some(&out.meta),
            out.meta.protocol_version.as_deref(),
        ));
        let request = Request {
            method: Method::Post,
            url: endpoint,
            headers: h,
            body: out.message.as_bytes().to_vec(),
        };
        let post = Post {
            out,
            stale: None,
            retried: false,
            first: false,
        };
        if let Some(id) = self.start(request, Purpose::Post(post)) {
            self.hold = Some(Hold::Legacy(id));
        }
        true
    }

    /// A legacy POST's answer: the real answer comes on the stream; an error
    /// status fails the request it carried.
    pub(super) fn on_legacy_post_head(&mut self, id: u64, head: Head) {
        let Some(ex) = self.exchanges.get_mut(&id) else {
            return;
        };
        ex.reading = Reading::Body {
            status: head.status,
            buf: Vec::new(),
            over: None,
            cap: super::ERROR_BODY_CAP,
        };
    }
}
