//! Input requests across servers: what servers are offered (elicitation, URL
//! mode, sampling), and each request waiting for the embedder's answer under an
//! id unique in the manager (see the manager's "# Input requests").

use super::*;

/// The manager's input requests.
pub(super) struct Inputs {
    /// Whether servers are offered elicitation.
    pub(super) form: bool,
    /// Whether servers are offered sampling.
    pub(super) sampling: bool,
    /// Whether servers are offered URL-mode elicitation.
    pub(super) url: bool,
    /// Input requests waiting for an answer: id → (slot, the client's key).
    pub(super) waiting: BTreeMap<u64, (usize, u64)>,
    /// The id of the next input request (approvals take theirs from here too).
    next: u64,
}

impl Default for Inputs {
    fn default() -> Inputs {
        Inputs {
            form: false,
            sampling: false,
            url: false,
            waiting: BTreeMap::new(),
            next: 1,
        }
    }
}

impl Inputs {
    /// An id for a new input request, unique in this manager.
    pub(super) fn next_id(&mut self) -> u64 {
        let id = self.next;
        self.next += 1;
        id
    }

    /// Forgets the request slot `slot`'s client withdrew as `key`: its id, if it
    /// was waiting.
    pub(super) fn withdraw(&mut self, slot: usize, key: u64) -> Option<u64> {
        let id = self
            .waiting
            .iter()
            .find(|(_, (s, k))| *s == slot && *k == key)
            .map(|(id, _)| *id)?;
        self.waiting.remove(&id);
        Some(id)
    }
}

impl<P: Platform> Manager<P> {
    /// An id for an input request someone else asks (the gateway's approvals of
    /// its clients' calls), numbered with the manager's own so that the host
    /// tells them apart.
    pub(crate) fn new_input_id(&mut self) -> u64 {
        self.input.next_id()
    }

    /// Offers every server started from now on the `elicitation` capability: their
    /// requests for input become [`Event::InputRequested`]. Call before `start`; a
    /// server already connected keeps what it was offered until it reconnects.
    ///
    /// Approvals for `ask` rules come the same way, so this enables them too.
    pub fn enable_input_requests(&mut self) {
        self.input.form = true;
        self.approvals.enabled = true;
    }

    /// Offers every server started from now on the `sampling` capability: their
    /// `sampling/createMessage` requests become [`Event::InputRequested`] with
    /// `sampling` set, answered with a `CreateMessageResult` through
    /// [`Manager::answer_input`] (see [`crate::sampling`]). Call before `start`.
    pub fn enable_sampling(&mut self) {
        self.input.sampling = true;
    }

    /// Offers every server started from now on URL-mode elicitation: their
    /// requests to have the user open a URL become [`Event::InputRequested`]
    /// with `url` set, answered with an action alone. Call before `start`.
    pub fn enable_url_elicitation(&mut self) {
        self.input.url = true;
    }

    /// Answers input request `id`. An accepted answer (a JSON object) gets the
    /// requested schema's defaults for the fields it leaves out and must satisfy
    /// that schema. Err, naming the server and the reason, when it does not (the
    /// request stays open for a corrected answer) or when no request of that id is
    /// waiting (answered already, or withdrawn).
    pub fn answer_input(&mut self, id: u64, answer: &InputAnswer) -> Result<(), String> {
        if let Some(answered) = self.answer_approval(id, answer) {
            return answered;
        }
        let Some(&(i, key)) = self.input.waiting.get(&id) else {
            return Err(format!(
                "no input request {id} is waiting for an answer (it was answered already, \
                 or withdrawn when its call ended)"
            ));
        };
        let server = self.slots[i].config.name.clone();
        let Some(client) = self.slots[i].client.as_mut() else {
            self.input.waiting.remove(&id);
            return Err(format!(
                "input request {id} is gone: server `{server}` is no longer connected"
            ));
        };
        client
            .answer_input(key, answer)
            .map_err(|e| format!("input request {id} from server `{server}`: {e}"))?;
        self.input.waiting.remove(&id);
        self.flush(i);
        self.process(i);
        self.sync_statuses();
        Ok(())
    }
}
