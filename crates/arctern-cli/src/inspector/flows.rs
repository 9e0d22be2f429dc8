//! What the inspector holds: the connection, the flows it ran (every round of each), and the
//! questions waiting for the page. The client's handler parks each question here until the
//! page answers it; the flow driver sends one round at a time so that each can be shown.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use arctern::client::{
    Client, ClientHandler, Continuation, HandlerCapabilities, Input, InputOrigin,
};
use arctern::types::elicitation::{
    ElicitContent, ElicitRequestParams, ElicitResult, RequestedSchema,
};
use arctern::types::mrtr::{InputRequest, InputRequiredResult};
use arctern::types::roots::{ListRootsRequestParams, ListRootsResult, Root};
use arctern::types::sampling::{CreateMessageRequestParams, CreateMessageResult};
use arctern::{ErrorKind, Outcome};
use serde::Serialize;
use serde_json::{Map, Value, json};
use tokio::sync::oneshot;

use super::tap::Frames;
use crate::fields::{self, Kind};
use crate::session::Endpoint;

/// The limits of one inspector, from its flags.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Flows kept (the oldest finished one goes first).
    pub max_flows: usize,
    /// Rounds of one flow before it is stopped.
    pub max_rounds: u32,
    /// How long a question waits for the page.
    pub answer_timeout: Duration,
}

/// A call the page asked for.
#[derive(Debug, Clone)]
pub enum Call {
    /// `tools/call` with checked arguments.
    Tool(String, Map<String, Value>),
    /// `prompts/get` with its string arguments.
    Prompt(String, Map<String, Value>),
    /// `resources/read`.
    Resource(String),
}

impl Call {
    fn kind(&self) -> &'static str {
        match self {
            Call::Tool(..) => "tool",
            Call::Prompt(..) => "prompt",
            Call::Resource(_) => "resource",
        }
    }

    fn target(&self) -> &str {
        match self {
            Call::Tool(n, _) | Call::Prompt(n, _) | Call::Resource(n) => n,
        }
    }

    fn origin(&self) -> InputOrigin {
        match self {
            Call::Tool(n, _) => InputOrigin::tool(n.as_str()),
            Call::Prompt(n, _) => InputOrigin::prompt(n.as_str()),
            Call::Resource(u) => InputOrigin::resource(u.as_str()),
        }
    }

    fn arguments(&self) -> Value {
        match self {
            Call::Tool(_, a) | Call::Prompt(_, a) => Value::Object(a.clone()),
            Call::Resource(_) => Value::Null,
        }
    }
}

/// The size and a short fingerprint of a `requestState`: equal states show the same hash,
/// a re-sealed one a new hash, without showing the state itself.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct StateInfo {
    /// Its length in bytes.
    pub bytes: usize,
    /// FNV-1a 64 of its bytes, the first 8 hex digits (not a security measure).
    pub hash: String,
}

impl StateInfo {
    fn of(state: &str) -> StateInfo {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in state.bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        StateInfo {
            bytes: state.len(),
            hash: format!("{h:016x}")[..8].to_owned(),
        }
    }
}

/// A question of a round, as the timeline shows it.
#[derive(Debug, Clone, Serialize)]
pub struct QuestionView {
    /// Its key in `inputRequests` (a request id on a 2025 session).
    pub key: String,
    /// `elicitation/form`, `elicitation/url`, `sampling` or `roots`.
    pub kind: String,
}

/// One answer given, for the timeline and for "Copy as `arctern call`".
#[derive(Debug, Clone, Serialize)]
pub struct AnswerView {
    /// The question's key.
    pub key: String,
    /// Its place among the flow's questions, from 1 (`@N` of `--answer`).
    pub place: usize,
    /// `accept`, `decline`, `cancel`, `answered` (sampling, roots) or `failed`.
    pub action: String,
    /// The form's content, for an accepted form.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<Value>,
}

/// One round of a flow.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Round {
    /// From 0.
    pub index: usize,
    /// The JSON-RPC id of the request.
    pub id: Option<Value>,
    /// `input_required`, `complete`, `task` or `error`.
    pub result_type: String,
    /// What the server asked.
    pub questions: Vec<QuestionView>,
    /// What the page answered.
    pub answers: Vec<AnswerView>,
    /// The `requestState` the request carried.
    pub state_sent: Option<StateInfo>,
    /// The `requestState` the server answered with.
    pub state_received: Option<StateInfo>,
    /// From sending the request to its answer, human waits left out.
    pub latency_ms: u64,
    /// How long the questions of this round waited for the person.
    pub human_wait_ms: u64,
    /// The error, for an `error` round.
    pub error: Option<String>,
    /// What the request carried, for the state lab.
    #[serde(skip)]
    sent: Continuation,
}

/// One experiment of the state lab: a round sent again, changed, and what came of it.
#[derive(Debug, Clone, Serialize)]
pub struct LabRun {
    /// `replay`, `tamper` or `drop`.
    pub action: String,
    /// The round sent again.
    pub round: usize,
    /// What a server that seals its state should answer.
    pub expected: String,
    /// What it answered.
    pub actual: String,
}

/// One call, all of its rounds.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Flow {
    /// From 1.
    pub id: u64,
    /// `tool`, `prompt` or `resource`.
    pub kind: &'static str,
    /// The tool's or prompt's name, or the resource's URI.
    pub target: String,
    /// The arguments sent.
    pub arguments: Value,
    /// `running`, `complete`, `error` or `task`.
    pub status: &'static str,
    /// Its rounds, in order.
    pub rounds: Vec<Round>,
    /// The final result.
    pub result: Option<Value>,
    /// Why it failed.
    pub error: Option<String>,
    /// The same call from a terminal, answers included.
    pub command: String,
    /// The state lab's experiments on this flow.
    pub lab: Vec<LabRun>,
    /// The call, for the state lab.
    #[serde(skip)]
    call: Option<Call>,
}

/// A question waiting for the page.
struct Pending {
    id: u64,
    view: Value,
    question: Asked,
    reply: oneshot::Sender<Reply>,
}

/// What a question needs to check the page's answer.
#[derive(Clone)]
enum Asked {
    Elicit(Box<ElicitRequestParams>),
    Sampling,
}

/// The page's answer, checked.
enum Reply {
    Elicit(ElicitResult),
    Sampling(Box<CreateMessageResult>),
    DeclineSampling,
}

#[derive(Default)]
struct State {
    next_flow: u64,
    flows: VecDeque<Flow>,
    active: Option<u64>,
    next_question: u64,
    pending: Vec<Pending>,
    /// What the handler saw during the current round: its questions (a 2025 session asks
    /// them while the call is open), its answers and the time they waited.
    notes: Notes,
}

#[derive(Default)]
struct Notes {
    questions: Vec<QuestionView>,
    answers: Vec<AnswerView>,
    wait: Duration,
    /// Questions asked so far in the flow (for `@N`).
    places: Vec<String>,
}

/// The inspector: one connection, its flows and its open questions.
pub struct Inspector {
    client: OnceLock<Client>,
    /// Every frame sent and received.
    pub frames: Arc<Frames>,
    endpoint: Endpoint,
    roots: Vec<Root>,
    limits: Limits,
    state: Mutex<State>,
}

/// Why the page's request was refused: the HTTP status and the message.
pub type Refusal = (u16, String);

impl Inspector {
    /// An inspector for `endpoint`, not connected yet.
    pub fn new(
        endpoint: Endpoint,
        roots: Vec<Root>,
        limits: Limits,
        frames: Arc<Frames>,
    ) -> Arc<Inspector> {
        Arc::new(Inspector {
            client: OnceLock::new(),
            frames,
            endpoint,
            roots,
            limits,
            state: Mutex::new(State::default()),
        })
    }

    /// Sets the connected client (once).
    pub fn connected(&self, client: Client) {
        let _ = self.client.set(client);
    }

    /// The client; set before the web server starts.
    pub fn client(&self) -> &Client {
        self.client.get().expect("connected before serving")
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The connection: version, era, server, capabilities, instructions.
    pub fn connection(&self) -> Value {
        let client = self.client();
        let version = client.protocol_version();
        json!({
            "target": self.endpoint.describe(),
            "protocolVersion": version.to_string(),
            "era": if version.is_modern() { "modern" } else { "legacy" },
            "serverInfo": client.server_info(),
            "capabilities": client.server_capabilities(),
            "instructions": client.instructions(),
            "clientInfo": client.client_info(),
            "clientCapabilities": client.capabilities(),
        })
    }

    /// The flows, newest last.
    pub fn flows(&self) -> Vec<Flow> {
        self.lock().flows.iter().cloned().collect()
    }

    /// The questions waiting for the page.
    pub fn questions(&self) -> Vec<Value> {
        self.lock().pending.iter().map(|p| p.view.clone()).collect()
    }

    /// Starts a flow; refused while another runs (its questions belong to it alone).
    pub fn start(self: &Arc<Self>, call: Call) -> Result<u64, Refusal> {
        let id = {
            let mut state = self.lock();
            if state.active.is_some() {
                return Err((
                    409,
                    "another call is still running; answer or cancel its questions first".into(),
                ));
            }
            state.next_flow += 1;
            let id = state.next_flow;
            state.active = Some(id);
            state.notes = Notes::default();
            while state.flows.len() >= self.limits.max_flows.max(1) {
                state.flows.pop_front();
            }
            let mut flow = Flow {
                id,
                kind: call.kind(),
                target: call.target().to_owned(),
                arguments: call.arguments(),
                status: "running",
                rounds: Vec::new(),
                result: None,
                error: None,
                command: String::new(),
                lab: Vec::new(),
                call: Some(call.clone()),
            };
            flow.command = self.command(&flow);
            state.flows.push_back(flow);
            id
        };
        let me = self.clone();
        tokio::spawn(async move { me.drive(id, call).await });
        Ok(id)
    }

    fn with_flow(&self, id: u64, f: impl FnOnce(&mut Flow)) {
        let mut state = self.lock();
        if let Some(flow) = state.flows.iter_mut().find(|f| f.id == id) {
            f(flow);
            flow.command = self.command(flow);
        }
    }

    /// One round of `call`.
    async fn round(&self, call: &Call, next: Continuation) -> arctern::Result<Outcome<Value>> {
        let client = self.client();
        fn value<T: Serialize>(o: Outcome<T>) -> arctern::Result<Outcome<Value>> {
            Ok(match o {
                Outcome::Complete(r) => {
                    Outcome::Complete(serde_json::to_value(r).unwrap_or(Value::Null))
                }
                Outcome::InputRequired(i) => Outcome::InputRequired(i),
                Outcome::Task(t) => Outcome::Task(t),
                _ => {
                    return Err(arctern::Error::new(
                        ErrorKind::Protocol,
                        "a result of a kind this inspector does not know",
                    ));
                }
            })
        }
        match call {
            Call::Tool(name, args) => value(client.call_tool_once(name, args, next).await?),
            Call::Prompt(name, args) => value(client.get_prompt_once(name, args, next).await?),
            Call::Resource(uri) => value(client.read_resource_once(uri, next).await?),
        }
    }

    /// Sends the rounds of a flow, each answered in the page, until it completes or fails.
    async fn drive(self: Arc<Self>, id: u64, call: Call) {
        let mut next = Continuation::new();
        for index in 0..self.limits.max_rounds.max(1) as usize {
            let sent = next.request_state.as_deref().map(StateInfo::of);
            let began = Instant::now();
            let outcome = self.round(&call, next.clone()).await;
            let elapsed = began.elapsed();
            let round_id = self.frames.last_round_id();
            let mut round = Round {
                index,
                id: round_id,
                result_type: String::new(),
                questions: Vec::new(),
                answers: Vec::new(),
                state_sent: sent,
                state_received: None,
                latency_ms: 0,
                human_wait_ms: 0,
                error: None,
                sent: next.clone(),
            };
            // A 2025 session asks while the call is open: those questions, answers and
            // waits belong to this round, and its wait is no latency.
            let notes = self.take_notes();
            round.questions = notes.questions;
            round.answers = notes.answers;
            round.human_wait_ms = millis(notes.wait);
            round.latency_ms = millis(elapsed.saturating_sub(notes.wait));
            match outcome {
                Err(e) => {
                    round.result_type = "error".into();
                    round.error = Some(e.to_string());
                    let why = e.to_string();
                    self.finish(id, round, "error", None, Some(why));
                    return;
                }
                Ok(Outcome::Complete(result)) => {
                    round.result_type = "complete".into();
                    self.finish(id, round, "complete", Some(result), None);
                    return;
                }
                Ok(Outcome::Task(task)) => {
                    round.result_type = "task".into();
                    let task = serde_json::to_value(task).unwrap_or(Value::Null);
                    self.finish(
                        id,
                        round,
                        "task",
                        Some(task),
                        Some(
                            "the call became a task; the inspector does not follow tasks yet"
                                .into(),
                        ),
                    );
                    return;
                }
                Ok(Outcome::InputRequired(irr)) => {
                    round.result_type = "input_required".into();
                    round.state_received = irr.request_state.as_deref().map(StateInfo::of);
                    round.questions = questions(&irr);
                    let waiting = round.clone();
                    self.with_flow(id, |f| f.rounds.push(waiting));
                    let asked = Instant::now();
                    let answers = self.client().answer(call.origin(), &irr).await;
                    let wait = asked.elapsed();
                    let notes = self.take_notes();
                    self.with_flow(id, |f| {
                        if let Some(last) = f.rounds.last_mut() {
                            last.answers = notes.answers;
                            last.human_wait_ms = millis(wait);
                        }
                    });
                    match answers {
                        Ok(answers) => {
                            next = Continuation::after(&irr).with_responses(answers);
                        }
                        Err(e) => {
                            let why = format!("the questions were not answered: {e}");
                            self.end(id, "error", None, Some(why));
                            return;
                        }
                    }
                }
                // `round` maps every other kind to an error.
                Ok(_) => {
                    round.result_type = "error".into();
                    self.finish(id, round, "error", None, Some("unknown result".into()));
                    return;
                }
            }
        }
        let why = format!(
            "stopped after {} rounds (--max-rounds)",
            self.limits.max_rounds
        );
        self.end(id, "error", None, Some(why));
    }

    fn take_notes(&self) -> Notes {
        let mut state = self.lock();
        let places = std::mem::take(&mut state.notes.places);
        let notes = std::mem::take(&mut state.notes);
        state.notes.places = places;
        notes
    }

    fn finish(
        &self,
        id: u64,
        round: Round,
        status: &'static str,
        result: Option<Value>,
        error: Option<String>,
    ) {
        self.with_flow(id, |f| f.rounds.push(round));
        self.end(id, status, result, error);
    }

    fn end(&self, id: u64, status: &'static str, result: Option<Value>, error: Option<String>) {
        self.with_flow(id, |f| {
            f.status = status;
            f.result = result;
            f.error = error;
        });
        let mut state = self.lock();
        if state.active == Some(id) {
            state.active = None;
        }
    }

    /// Parks a question until the page answers it (or the wait runs out).
    async fn ask(&self, key: &str, kind: &str, view: Value, question: Asked) -> Option<Reply> {
        let (tx, rx) = oneshot::channel();
        {
            let mut state = self.lock();
            state.next_question += 1;
            let id = state.next_question;
            if !state.notes.places.iter().any(|k| k == key) {
                state.notes.places.push(key.to_owned());
            }
            state.notes.questions.push(QuestionView {
                key: key.to_owned(),
                kind: kind.to_owned(),
            });
            let mut view = view;
            view["id"] = json!(id);
            view["key"] = json!(key);
            view["kind"] = json!(kind);
            view["flow"] = json!(state.active);
            state.pending.push(Pending {
                id,
                view,
                question,
                reply: tx,
            });
        }
        let began = Instant::now();
        let reply = tokio::time::timeout(self.limits.answer_timeout, rx).await;
        let mut state = self.lock();
        state.notes.wait += began.elapsed();
        // Gone when it timed out: no late answer can arrive for it.
        state.pending.retain(|p| !p.reply.is_closed());
        reply.ok().and_then(Result::ok)
    }

    fn note_answer(&self, key: &str, action: &str, content: Option<Value>) {
        let mut state = self.lock();
        let place = state
            .notes
            .places
            .iter()
            .position(|k| k == key)
            .map_or(0, |i| i + 1);
        state.notes.answers.push(AnswerView {
            key: key.to_owned(),
            place,
            action: action.to_owned(),
            content,
        });
    }

    /// The page answers question `id`: checked as the terminal form checks it, then handed
    /// to the waiting round.
    pub fn answer(&self, id: u64, body: &Value) -> Result<(), Refusal> {
        let mut state = self.lock();
        let Some(at) = state.pending.iter().position(|p| p.id == id) else {
            return Err((404, format!("no question {id} is waiting")));
        };
        let action = body.get("action").and_then(Value::as_str).unwrap_or("");
        let reply = match (&state.pending[at].question, action) {
            (Asked::Elicit(_), "decline") => Reply::Elicit(ElicitResult::decline()),
            (Asked::Elicit(_), "cancel") => Reply::Elicit(ElicitResult::cancel()),
            (Asked::Elicit(p), "accept") => match &**p {
                ElicitRequestParams::Url(_) => Reply::Elicit(ElicitResult::accept_url()),
                ElicitRequestParams::Form(f) => {
                    let empty = Map::new();
                    let given = body
                        .get("fields")
                        .and_then(Value::as_object)
                        .unwrap_or(&empty);
                    let content = form_content(&f.requested_schema, given).map_err(|e| (400, e))?;
                    Reply::Elicit(ElicitResult::accept(content))
                }
                _ => return Err((400, "this kind of question cannot be answered here".into())),
            },
            (Asked::Sampling, "decline") => Reply::DeclineSampling,
            (Asked::Sampling, "accept") => {
                let text = body.get("text").and_then(Value::as_str).unwrap_or("");
                if text.trim().is_empty() {
                    return Err((400, "write the model's answer, or decline".into()));
                }
                Reply::Sampling(Box::new(CreateMessageResult::text(
                    "arctern-inspect (a person)",
                    text,
                )))
            }
            _ => {
                return Err((
                    400,
                    format!("{action:?} is no answer to this question (accept, decline or cancel)"),
                ));
            }
        };
        let pending = state.pending.remove(at);
        let _ = pending.reply.send(reply);
        Ok(())
    }

    /// The state lab: sends round `index` of flow `id` again, unchanged (`replay`), with one
    /// byte of its `requestState` changed (`tamper`) or without it (`drop`), and notes what
    /// the server answered next to what a server that seals its state should answer. This
    /// breaks the client rule that the state goes back as it came: for servers you control.
    pub fn lab(self: &Arc<Self>, id: u64, index: usize, action: &str) -> Result<(), Refusal> {
        let (call, mut next) = {
            let state = self.lock();
            if state.active.is_some() {
                return Err((409, "a call is running; try again when it is done".into()));
            }
            let flow = state
                .flows
                .iter()
                .find(|f| f.id == id)
                .ok_or((404, format!("no flow {id}")))?;
            let round = flow
                .rounds
                .get(index)
                .ok_or((404, format!("flow {id} has no round {index}")))?;
            (
                flow.call
                    .clone()
                    .ok_or((400, "no call to repeat".to_owned()))?,
                round.sent.clone(),
            )
        };
        let expected = match action {
            "replay" => {
                "the same answer as before; refused instead by a server that lets a state be used once"
            }
            "tamper" => {
                "refused: -32602 \"Invalid or expired requestState\" (the sealed state no longer authenticates)"
            }
            "drop" => {
                "the answers without their state: asked again from the start (input_required), or refused"
            }
            _ => {
                return Err((
                    400,
                    format!("{action:?} is no experiment (replay, tamper or drop)"),
                ));
            }
        };
        match action {
            "tamper" => {
                let Some(state) = next.request_state.as_mut() else {
                    return Err((400, format!("round {index} carried no requestState")));
                };
                *state = tampered(state);
            }
            "drop" => next.request_state = None,
            _ => {}
        }
        let me = self.clone();
        let action = action.to_owned();
        tokio::spawn(async move {
            let actual = match me.round(&call, next).await {
                Ok(Outcome::Complete(_)) => "complete".to_owned(),
                Ok(Outcome::InputRequired(irr)) => format!(
                    "input_required, asking {}",
                    questions(&irr)
                        .iter()
                        .map(|q| q.key.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                Ok(Outcome::Task(_)) => "task".to_owned(),
                Ok(_) => "an unknown result".to_owned(),
                Err(e) => match e.protocol_error() {
                    Some(o) => format!("error {} {:?}", o.code.0, o.message),
                    None => format!("error: {e}"),
                },
            };
            me.with_flow(id, |f| {
                f.lab.push(LabRun {
                    action,
                    round: index,
                    expected: expected.to_owned(),
                    actual,
                })
            });
        });
        Ok(())
    }

    /// `arctern call …` (or `prompt`, `read`) for `flow`, with the answers it was given.
    fn command(&self, flow: &Flow) -> String {
        let mut words: Vec<String> = vec!["arctern".into()];
        words.push(
            match flow.kind {
                "tool" => "call",
                "prompt" => "prompt",
                _ => "read",
            }
            .into(),
        );
        match &self.endpoint {
            Endpoint::Url(u) => words.push(u.clone()),
            Endpoint::Stdio(cmd) => {
                words.push("--stdio".into());
                words.push(shlex::try_join(cmd.iter().map(String::as_str)).unwrap_or_default());
            }
        }
        words.push(flow.target.clone());
        if let Value::Object(args) = &flow.arguments {
            match flow.kind {
                "tool" if !args.is_empty() => {
                    words.push("--json".into());
                    words.push(Value::Object(args.clone()).to_string());
                }
                "prompt" => {
                    for (k, v) in args {
                        words.push("--arg".into());
                        words.push(format!("{k}={}", v.as_str().unwrap_or_default()));
                    }
                }
                _ => {}
            }
        }
        let legacy = !self.client().protocol_version().is_modern();
        for answer in flow.rounds.iter().flat_map(|r| &r.answers) {
            // A 2025 server's keys are request ids, which shift: name questions by place.
            let name = if legacy || answer.key.is_empty() {
                format!("@{}", answer.place)
            } else {
                answer.key.clone()
            };
            match (answer.action.as_str(), &answer.content) {
                ("accept", Some(content)) => {
                    words.push("--answer".into());
                    words.push(format!("{name}={content}"));
                }
                ("accept", None) => {
                    words.push("--answer".into());
                    words.push(format!("{name}=accept"));
                }
                ("decline", _) | ("cancel", _) => {
                    words.push("--decline".into());
                    words.push(name);
                }
                _ => {}
            }
        }
        words
            .iter()
            .map(|w| shlex::try_quote(w).map_or_else(|_| w.clone(), |q| q.into_owned()))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// `state` with its middle character changed to another one of the same alphabet.
fn tampered(state: &str) -> String {
    let mut bytes = state.as_bytes().to_vec();
    if let Some(b) = bytes.get_mut(state.len() / 2) {
        *b = if *b == b'A' { b'B' } else { b'A' };
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The questions of an `input_required` round, with their kinds.
fn questions(irr: &InputRequiredResult) -> Vec<QuestionView> {
    irr.input_requests
        .iter()
        .flatten()
        .map(|(key, request)| QuestionView {
            key: key.clone(),
            kind: match request {
                InputRequest::Elicit(e) => match &e.params {
                    ElicitRequestParams::Url(_) => "elicitation/url",
                    _ => "elicitation/form",
                },
                InputRequest::CreateMessage(_) => "sampling",
                InputRequest::ListRoots(_) => "roots",
                _ => "unknown",
            }
            .to_owned(),
        })
        .collect()
}

/// The page's form, typed and checked field by field as the terminal form does it: an empty
/// field takes its default, a required one without a default is refused, any other value is
/// read by the same rules as the terminal's (and `--answer`'s).
pub fn form_content(
    schema: &RequestedSchema,
    given: &Map<String, Value>,
) -> Result<ElicitContent, String> {
    if let Some(unknown) = given.keys().find(|k| schema.properties.get(k).is_none()) {
        return Err(format!("the form has no field {unknown:?}"));
    }
    let mut content = ElicitContent::new();
    for (name, field) in schema.properties.iter() {
        let kind = fields::kind(field);
        let label = fields::labels(field).0.unwrap_or(name);
        let text = match given.get(name) {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(s)) => s.clone(),
            Some(Value::Array(items)) => Value::Array(items.clone()).to_string(),
            Some(other) => other.to_string(),
        };
        let empty = match kind {
            Kind::Multi { .. } => text.is_empty() || text == "[]",
            _ => text.trim().is_empty(),
        };
        if empty {
            if let Some(d) = fields::default_value(&kind) {
                content.insert(name.to_owned(), d);
            } else if schema.is_required(name) {
                return Err(format!("{label}: A value is required."));
            }
            continue;
        }
        let value = fields::from_text(&kind, &text).map_err(|e| format!("{label}: {e}"))?;
        content.insert(name.to_owned(), value);
    }
    Ok(content)
}

/// A form field as the page draws it.
fn field_view(name: &str, schema: &RequestedSchema) -> Value {
    let Some(field) = schema.properties.get(name) else {
        return Value::Null;
    };
    let (title, description) = fields::labels(field);
    let kind = fields::kind(field);
    let default = fields::default_value(&kind).map(|v| match v {
        arctern::types::elicitation::ElicitValue::String(s) => json!(s),
        arctern::types::elicitation::ElicitValue::StringArray(a) => json!(a),
        other => json!(
            serde_json::to_value(other)
                .unwrap_or(Value::Null)
                .to_string()
        ),
    });
    let (kind_name, options) = match &kind {
        Kind::Text(_) => ("text", Vec::new()),
        Kind::Number(_) => ("number", Vec::new()),
        Kind::Boolean(_) => ("boolean", Vec::new()),
        Kind::Single { options, .. } => ("single", options.clone()),
        Kind::Multi { options, .. } => ("multi", options.clone()),
    };
    json!({
        "name": name,
        "label": title.unwrap_or(name),
        "description": description,
        "required": schema.is_required(name),
        "kind": kind_name,
        "expects": fields::describe(&kind),
        "options": options.iter().map(|c| json!({"value": c.value, "title": c.title})).collect::<Vec<_>>(),
        "default": default,
    })
}

/// The client's side of the questions: each waits for the page.
pub struct Handler(pub Arc<Inspector>);

impl Handler {
    async fn elicit(&self, input: Input<ElicitRequestParams>) -> arctern::Result<ElicitResult> {
        let inspector = &self.0;
        let key = input.key().to_owned();
        let origin = input.origin();
        let asker = json!({
            "method": origin.method(),
            "target": origin.target(),
            "server": input.server_info().map(|s| s.title.clone().unwrap_or_else(|| s.name.clone())),
        });
        let (kind, view) = match input.params() {
            ElicitRequestParams::Form(f) => (
                "elicitation/form",
                json!({
                    "asker": asker,
                    "message": f.message,
                    "fields": f.requested_schema.properties.names()
                        .map(|n| field_view(n, &f.requested_schema)).collect::<Vec<_>>(),
                }),
            ),
            ElicitRequestParams::Url(u) => {
                let parts = crate::form::url_parts(&u.url);
                let (warnings, web) = crate::form::url_lines(&u.url, false);
                (
                    "elicitation/url",
                    json!({
                        "asker": asker,
                        "message": u.message,
                        "url": u.url,
                        "domain": parts.and_then(|p| p.host),
                        // Only http(s) may be opened; the page checks the scheme again.
                        "openable": web,
                        "warnings": warnings.into_iter().filter(|l| l.starts_with("Careful")).collect::<Vec<_>>(),
                    }),
                )
            }
            _ => {
                return Err(arctern::Error::new(
                    ErrorKind::InputRequired,
                    "this kind of question cannot be shown",
                ));
            }
        };
        let asked = Asked::Elicit(Box::new(input.params().clone()));
        match inspector.ask(&key, kind, view, asked).await {
            Some(Reply::Elicit(result)) => {
                let action = serde_json::to_value(result.action)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default();
                let content = result
                    .content
                    .as_ref()
                    .and_then(|c| serde_json::to_value(c).ok());
                inspector.note_answer(&key, &action, content);
                Ok(result)
            }
            _ => {
                inspector.note_answer(&key, "failed", None);
                Err(arctern::Error::new(
                    ErrorKind::InputRequired,
                    "the question was not answered",
                ))
            }
        }
    }

    async fn sample(
        &self,
        input: Input<CreateMessageRequestParams>,
    ) -> arctern::Result<CreateMessageResult> {
        let inspector = &self.0;
        let key = input.key().to_owned();
        let view = json!({
            "message": "The server asks for an LLM completion. Write the model's answer, or decline.",
            "request": input.params(),
        });
        match inspector.ask(&key, "sampling", view, Asked::Sampling).await {
            Some(Reply::Sampling(result)) => {
                inspector.note_answer(&key, "answered", None);
                Ok(*result)
            }
            Some(Reply::DeclineSampling) => {
                inspector.note_answer(&key, "decline", None);
                Err(arctern::Error::new(
                    ErrorKind::InputRequired,
                    "the user declined the sampling request",
                ))
            }
            _ => {
                inspector.note_answer(&key, "failed", None);
                Err(arctern::Error::new(
                    ErrorKind::InputRequired,
                    "the question was not answered",
                ))
            }
        }
    }
}

impl ClientHandler for Handler {
    fn capabilities(&self) -> HandlerCapabilities {
        let mut caps = HandlerCapabilities::none()
            .elicitation()
            .elicitation_url()
            .sampling();
        if !self.0.roots.is_empty() {
            caps = caps.roots();
        }
        caps
    }

    fn elicit(
        &self,
        input: Input<ElicitRequestParams>,
    ) -> impl Future<Output = arctern::Result<ElicitResult>> + Send {
        let me = Handler(self.0.clone());
        async move { me.elicit(input).await }
    }

    fn create_message(
        &self,
        input: Input<CreateMessageRequestParams>,
    ) -> impl Future<Output = arctern::Result<CreateMessageResult>> + Send {
        let me = Handler(self.0.clone());
        async move { me.sample(input).await }
    }

    fn list_roots(
        &self,
        input: Input<ListRootsRequestParams>,
    ) -> impl Future<Output = arctern::Result<ListRootsResult>> + Send {
        self.0.note_answer(input.key(), "answered", None);
        std::future::ready(Ok(ListRootsResult::new(self.0.roots.clone())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tampering_changes_one_byte() {
        let t = tampered("abcdef");
        assert_eq!(t.len(), 6);
        assert_eq!(
            t.bytes()
                .zip("abcdef".bytes())
                .filter(|(a, b)| a != b)
                .count(),
            1
        );
        assert_eq!(tampered("AAA"), "ABA");
    }

    #[test]
    fn state_info_tells_states_apart() {
        let a = StateInfo::of("sealed-1");
        assert_eq!(a, StateInfo::of("sealed-1"));
        assert_ne!(a.hash, StateInfo::of("sealed-2").hash);
        assert_eq!(a.bytes, 8);
        assert_eq!(a.hash.len(), 8);
    }

    #[test]
    fn the_page_form_follows_the_terminal_rules() {
        let schema: RequestedSchema = serde_json::from_value(json!({
            "type": "object",
            "properties": {
                "days": {"type": "integer", "minimum": 1, "maximum": 90, "title": "Days"},
                "note": {"type": "string"},
                "tier": {"type": "string", "enum": ["a", "b"], "default": "a"}
            },
            "required": ["days"]
        }))
        .unwrap();
        let fields = |v: Value| v.as_object().unwrap().clone();
        let err = form_content(&schema, &fields(json!({}))).unwrap_err();
        assert_eq!(err, "Days: A value is required.");
        let err = form_content(&schema, &fields(json!({"days": "500"}))).unwrap_err();
        assert!(err.starts_with("Days: "), "{err}");
        let ok = form_content(&schema, &fields(json!({"days": "3"}))).unwrap();
        assert_eq!(
            serde_json::to_value(&ok).unwrap(),
            json!({"days": 3, "tier": "a"})
        );
        assert!(form_content(&schema, &fields(json!({"bogus": "1"}))).is_err());
    }
}
