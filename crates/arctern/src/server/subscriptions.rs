//! `subscriptions/listen`: long-lived streams of list-change and resource-update
//! notifications.

use std::cell::RefCell;
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock};

use arctern_types::capabilities::ServerCapabilities;
use arctern_types::meta::SUBSCRIPTION_ID_KEY;
use arctern_types::methods;
use arctern_types::subscriptions::SubscriptionFilter;
use arctern_types::{ErrorObject, RequestId};
use bytes::Bytes;
use serde_json::{Value, json};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use super::connection::ReplyStream;
use super::context::Principal;
use super::tasks::TaskFeed;

/// Changes a server can announce on `subscriptions/listen` streams.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Change {
    /// The tool list changed.
    ToolsListChanged,
    /// The prompt list changed.
    PromptsListChanged,
    /// The resource list (or template list) changed.
    ResourcesListChanged,
    /// A resource's content changed.
    ResourceUpdated(Arc<str>),
}

/// Announces changes to every open `subscriptions/listen` stream that asked for them, and
/// to every legacy session, through the server's [`ChangeBus`] (on every instance of a fleet
/// when the bus is shared).
///
/// Cheap to clone; sending with no open stream does nothing.
#[derive(Debug, Clone)]
pub struct ChangeNotifier {
    bus: Arc<dyn ChangeBus>,
}

impl ChangeNotifier {
    /// Announces a change.
    pub fn notify(&self, change: Change) {
        self.bus.publish(change);
    }

    /// `notifications/tools/list_changed`.
    pub fn tools_changed(&self) {
        self.notify(Change::ToolsListChanged);
    }

    /// `notifications/prompts/list_changed`.
    pub fn prompts_changed(&self) {
        self.notify(Change::PromptsListChanged);
    }

    /// `notifications/resources/list_changed`.
    pub fn resources_changed(&self) {
        self.notify(Change::ResourcesListChanged);
    }

    /// `notifications/resources/updated` for `uri` (streams subscribed to it, or to a URI it
    /// lies under).
    pub fn resource_updated(&self, uri: impl Into<Arc<str>>) {
        self.notify(Change::ResourceUpdated(uri.into()));
    }

    /// How many streams and sessions of this instance receive changes.
    pub fn listeners(&self) -> usize {
        self.bus.local_receivers()
    }
}

/// Carries announced [`Change`]s to the `subscriptions/listen` streams and legacy sessions
/// that receive them: within one process ([`LocalChangeBus`], the default), or across every
/// instance of a fleet (a bus on a shared broker, such as the Redis one of the
/// `arctern-redis` crate).
///
/// A shared bus should deliver a change published here to this instance's receivers at once
/// (not through the broker), so that an outage of the broker only loses what crosses
/// instances; [`LocalChangeBus`] is the local fan-out to build one on.
pub trait ChangeBus: Send + Sync + fmt::Debug + 'static {
    /// Announces `change` to every receiver, on this instance and, for a shared bus, on the
    /// others. Never blocks; a change that cannot be sent is logged and dropped.
    fn publish(&self, change: Change);

    /// A receiver of every change published from now on, here or elsewhere.
    fn subscribe(&self) -> ChangeReceiver;

    /// How many receivers are open on this instance.
    fn local_receivers(&self) -> usize;
}

/// Receives the changes of a [`ChangeBus`].
#[derive(Debug)]
pub struct ChangeReceiver {
    rx: broadcast::Receiver<Change>,
}

/// Why [`ChangeReceiver::recv`] returned no change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ChangeRecvError {
    /// The receiver fell behind and this many changes were dropped: treat everything it
    /// follows as changed.
    #[error("missed {0} changes")]
    Lagged(u64),
    /// The bus is gone.
    #[error("the change bus closed")]
    Closed,
}

impl ChangeReceiver {
    /// A receiver on a broadcast channel (what a bus built on [`LocalChangeBus`] hands out).
    pub fn from_broadcast(rx: broadcast::Receiver<Change>) -> Self {
        ChangeReceiver { rx }
    }

    /// The next change.
    pub async fn recv(&mut self) -> Result<Change, ChangeRecvError> {
        self.rx.recv().await.map_err(|e| match e {
            broadcast::error::RecvError::Lagged(n) => ChangeRecvError::Lagged(n),
            broadcast::error::RecvError::Closed => ChangeRecvError::Closed,
        })
    }
}

/// Default capacity of a [`LocalChangeBus`]: a receiver that falls further behind gets a
/// conservative "everything you follow changed".
pub const DEFAULT_CHANGE_BUFFER: usize = 256;

/// The in-process [`ChangeBus`]: a broadcast channel. Changes reach the streams and sessions
/// of this process only.
#[derive(Debug, Clone)]
pub struct LocalChangeBus {
    tx: broadcast::Sender<Change>,
}

impl Default for LocalChangeBus {
    fn default() -> Self {
        LocalChangeBus::new(DEFAULT_CHANGE_BUFFER)
    }
}

impl LocalChangeBus {
    /// A bus buffering up to `capacity` changes per receiver (at least 1).
    pub fn new(capacity: usize) -> Self {
        LocalChangeBus {
            tx: broadcast::channel(capacity.max(1)).0,
        }
    }
}

impl ChangeBus for LocalChangeBus {
    fn publish(&self, change: Change) {
        // An error only means that no receiver is open.
        let _ = self.tx.send(change);
    }

    fn subscribe(&self) -> ChangeReceiver {
        ChangeReceiver::from_broadcast(self.tx.subscribe())
    }

    fn local_receivers(&self) -> usize {
        self.tx.receiver_count()
    }
}

/// The default [`SubscriptionPolicy::max_subscriptions`]: 256 per listener.
pub const DEFAULT_MAX_SUBSCRIPTIONS: usize = 256;
/// The default [`SubscriptionPolicy::max_uri_len`]: 8 KiB.
pub const DEFAULT_MAX_SUBSCRIPTION_URI_LEN: usize = 8 * 1024;

/// Limits on resource subscriptions, and who hears about which update.
///
/// Applies to `subscriptions/listen` streams (their `resourceSubscriptions`) and to the
/// `resources/subscribe` of 2025-era sessions alike. A subscription covers its own URI and
/// the URIs beneath it (`file:///a` covers `file:///a/b`), but only when it names more
/// than a scheme: `file:` or `file:///` covers nothing but itself.
///
/// ```
/// use arctern::server::{McpServer, SubscriptionPolicy};
///
/// /// Put in each request's extensions by the authentication layer.
/// #[derive(Clone)]
/// struct Tenant(String);
///
/// // Each tenant hears only about its own resources.
/// let server = McpServer::new("files").subscription_policy(
///     SubscriptionPolicy::default()
///         .max_subscriptions(64)
///         .filter(|subscriber, uri| match subscriber.extensions().get::<Tenant>() {
///             Some(Tenant(t)) => uri.starts_with(&format!("file:///tenants/{t}/")),
///             None => false,
///         }),
/// );
/// # let _ = server;
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct SubscriptionPolicy {
    /// Most resource subscriptions per listen stream or legacy session (default
    /// [`DEFAULT_MAX_SUBSCRIPTIONS`]); more are refused with `-32602`.
    pub max_subscriptions: usize,
    /// Longest subscribed URI in bytes (default [`DEFAULT_MAX_SUBSCRIPTION_URI_LEN`]);
    /// longer ones are refused with `-32602`.
    pub max_uri_len: usize,
    filter: Option<Arc<UpdateFilter>>,
}

type UpdateFilter = dyn Fn(&Subscriber<'_>, &str) -> bool + Send + Sync;

impl Default for SubscriptionPolicy {
    fn default() -> Self {
        SubscriptionPolicy {
            max_subscriptions: DEFAULT_MAX_SUBSCRIPTIONS,
            max_uri_len: DEFAULT_MAX_SUBSCRIPTION_URI_LEN,
            filter: None,
        }
    }
}

impl std::fmt::Debug for SubscriptionPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SubscriptionPolicy")
            .field("max_subscriptions", &self.max_subscriptions)
            .field("max_uri_len", &self.max_uri_len)
            .field("filter", &self.filter.is_some())
            .finish()
    }
}

impl SubscriptionPolicy {
    /// Sets the most subscriptions per listener.
    pub fn max_subscriptions(mut self, subscriptions: usize) -> Self {
        self.max_subscriptions = subscriptions;
        self
    }

    /// Sets the longest subscribed URI, in bytes.
    pub fn max_uri_len(mut self, bytes: usize) -> Self {
        self.max_uri_len = bytes;
        self
    }

    /// Decides, for each resource update a subscription covers, whether this subscriber
    /// hears about it: a multi-tenant server scopes updates by principal here. Without a
    /// filter every covering subscription is told.
    pub fn filter(
        mut self,
        filter: impl Fn(&Subscriber<'_>, &str) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.filter = Some(Arc::new(filter));
        self
    }

    /// Checks the URIs a listener asks for.
    pub(crate) fn check<'a>(
        &self,
        uris: impl IntoIterator<Item = &'a String>,
        already: usize,
    ) -> Result<(), ErrorObject> {
        let mut count = already;
        for uri in uris {
            if uri.len() > self.max_uri_len {
                return Err(ErrorObject::invalid_params(format!(
                    "A subscribed URI is longer than {} bytes",
                    self.max_uri_len
                )));
            }
            count += 1;
            if count > self.max_subscriptions {
                return Err(ErrorObject::invalid_params(format!(
                    "More than {} resource subscriptions",
                    self.max_subscriptions
                )));
            }
        }
        Ok(())
    }

    /// Whether `subscriber` hears about an update of `uri`.
    pub(crate) fn allows(&self, subscriber: &http::Extensions, uri: &str) -> bool {
        self.filter.as_ref().is_none_or(|filter| {
            filter(
                &Subscriber {
                    extensions: subscriber,
                },
                uri,
            )
        })
    }
}

/// Who subscribed: the extensions of the request that opened the `subscriptions/listen`
/// stream, or the `initialize` of a 2025-era session (where an authentication layer puts
/// the [`Principal`]).
#[derive(Debug)]
pub struct Subscriber<'a> {
    extensions: &'a http::Extensions,
}

impl Subscriber<'_> {
    /// The authenticated principal, if any.
    pub fn principal(&self) -> Option<&Principal> {
        self.extensions.get::<Principal>()
    }

    /// Everything the authentication layer and other middleware attached.
    pub fn extensions(&self) -> &http::Extensions {
        self.extensions
    }
}

/// A notification's bytes around the subscription id in its `_meta`.
#[derive(Debug)]
struct Template {
    /// Everything before the id (`{"jsonrpc":"2.0","method":…,"params":{…"_meta":{"…":`).
    head: Vec<u8>,
}

/// What follows the id: the end of `_meta`, of `params` and of the message.
const TEMPLATE_TAIL: &[u8] = b"}}}";

/// The list-change notifications, which never vary: rendered once per process.
static TOOLS_CHANGED: LazyLock<Arc<Template>> = LazyLock::new(|| {
    Arc::new(Template::new(
        methods::NOTIFICATIONS_TOOLS_LIST_CHANGED,
        None,
    ))
});
static PROMPTS_CHANGED: LazyLock<Arc<Template>> = LazyLock::new(|| {
    Arc::new(Template::new(
        methods::NOTIFICATIONS_PROMPTS_LIST_CHANGED,
        None,
    ))
});
static RESOURCES_CHANGED: LazyLock<Arc<Template>> = LazyLock::new(|| {
    Arc::new(Template::new(
        methods::NOTIFICATIONS_RESOURCES_LIST_CHANGED,
        None,
    ))
});

thread_local! {
    /// Per thread: the last resource update rendered, with its URI. One update reaches every
    /// stream as clones of the same `Change` (the bus carries changes, not bytes), so all
    /// but the first stream a thread serves reuse its rendering.
    static LAST_UPDATE: RefCell<Option<(Arc<str>, Arc<Template>)>> = const { RefCell::new(None) };
}

impl Template {
    /// The notification of `change` (whether any stream asked for it is up to each stream),
    /// rendered once and shared (see [`LAST_UPDATE`]).
    fn of(change: &Change) -> Arc<Template> {
        match change {
            Change::ToolsListChanged => TOOLS_CHANGED.clone(),
            Change::PromptsListChanged => PROMPTS_CHANGED.clone(),
            Change::ResourcesListChanged => RESOURCES_CHANGED.clone(),
            Change::ResourceUpdated(uri) => LAST_UPDATE.with_borrow_mut(|last| {
                if let Some((seen, template)) = last
                    && (Arc::ptr_eq(seen, uri) || **seen == **uri)
                {
                    return template.clone();
                }
                let template = Arc::new(Self::new(
                    methods::NOTIFICATIONS_RESOURCES_UPDATED,
                    Some(uri),
                ));
                *last = Some((uri.clone(), template.clone()));
                template
            }),
        }
    }

    /// `{"jsonrpc":"2.0","method":METHOD,"params":{["uri":URI,]"_meta":{KEY:` — the bytes a
    /// `json!` value of the same notification serializes to, up to the id.
    fn new(method: &str, uri: Option<&str>) -> Template {
        let mut head = Vec::with_capacity(128);
        head.extend_from_slice(br#"{"jsonrpc":"2.0","method":"#);
        write_json(&mut head, method);
        head.extend_from_slice(br#","params":{"#);
        if let Some(uri) = uri {
            head.extend_from_slice(br#""uri":"#);
            write_json(&mut head, uri);
            head.push(b',');
        }
        head.extend_from_slice(br#""_meta":{"#);
        write_json(&mut head, SUBSCRIPTION_ID_KEY);
        head.push(b':');
        Template { head }
    }

    /// The notification for the stream whose id serializes to `id`.
    fn splice(&self, id: &[u8]) -> Bytes {
        let mut out = Vec::with_capacity(self.head.len() + id.len() + TEMPLATE_TAIL.len());
        out.extend_from_slice(&self.head);
        out.extend_from_slice(id);
        out.extend_from_slice(TEMPLATE_TAIL);
        Bytes::from(out)
    }
}

/// Appends `s` as a JSON string.
fn write_json(out: &mut Vec<u8>, s: &str) {
    // Writing a string into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, s);
}

/// Serializes the graceful final result of a listen stream.
pub(crate) type Encoder = Arc<dyn Fn(&RequestId) -> Bytes + Send + Sync>;

/// Whether the declared capabilities allow `subscriptions/listen` at all.
pub(crate) fn listen_supported(caps: &ServerCapabilities) -> bool {
    caps.tools.as_ref().and_then(|t| t.list_changed) == Some(true)
        || caps.prompts.as_ref().and_then(|p| p.list_changed) == Some(true)
        || caps
            .resources
            .as_ref()
            .is_some_and(|r| r.list_changed == Some(true) || r.subscribe == Some(true))
        || caps
            .extensions
            .as_ref()
            .is_some_and(|e| e.contains_key(arctern_types::tasks::EXTENSION_ID))
}

#[derive(Debug)]
pub(crate) struct ChangeBroker {
    bus: Arc<dyn ChangeBus>,
    /// Open `subscriptions/listen` streams.
    open: Arc<AtomicUsize>,
}

/// A `subscriptions/listen` request over the server's limit on open streams.
#[derive(Debug)]
pub(crate) struct TooManyStreams {
    /// The limit.
    pub(crate) limit: usize,
}

impl ChangeBroker {
    pub(crate) fn new(bus: Arc<dyn ChangeBus>) -> Self {
        ChangeBroker {
            bus,
            open: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// A receiver of every change from now on (a legacy session's forwarder).
    pub(crate) fn subscribe(&self) -> ChangeReceiver {
        self.bus.subscribe()
    }

    /// Counts a stream about to open against `limit`; the slot frees when the guard drops.
    pub(crate) fn reserve(&self, limit: usize) -> Result<OpenStream, TooManyStreams> {
        self.open
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |open| {
                (open < limit).then_some(open + 1)
            })
            .map_err(|_| TooManyStreams { limit })?;
        Ok(OpenStream(self.open.clone()))
    }

    pub(crate) fn notifier(&self) -> ChangeNotifier {
        ChangeNotifier {
            bus: self.bus.clone(),
        }
    }

    /// Opens a stream: the acknowledgement first, then the changes that match the honoured
    /// filter, each tagged with the subscription id, until the client leaves or the server
    /// shuts down (then a final result).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn listen(
        &self,
        slot: OpenStream,
        id: RequestId,
        requested: SubscriptionFilter,
        caps: &ServerCapabilities,
        policy: &SubscriptionPolicy,
        subscriber: http::Extensions,
        shutdown: CancellationToken,
        encoder: Encoder,
        tasks: Option<TaskFeed>,
    ) -> ReplyStream {
        let mut honoured = honour(&requested, caps);
        if let Some(feed) = &tasks {
            honoured
                .extra
                .insert("taskIds".to_owned(), json!(feed.ids()));
        }
        let ack = notification(
            methods::NOTIFICATIONS_SUBSCRIPTIONS_ACKNOWLEDGED,
            &id,
            Some((
                "notifications",
                serde_json::to_value(&honoured).unwrap_or(Value::Null),
            )),
        );
        let id_json = serde_json::to_vec(&id).unwrap_or_else(|_| b"null".to_vec());
        let state = ListenState {
            _slot: slot,
            id,
            id_json,
            filter: honoured,
            policy: policy.clone(),
            subscriber,
            rx: self.bus.subscribe(),
            shutdown,
            encoder,
            ack: Some(ack),
            pending: Vec::new(),
            done: false,
            tasks,
        };
        ReplyStream::new(futures::stream::unfold(state, ListenState::next))
    }
}

/// One open `subscriptions/listen` stream, counted against the server's limit until dropped.
#[derive(Debug)]
pub(crate) struct OpenStream(Arc<AtomicUsize>);

impl Drop for OpenStream {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

struct ListenState {
    _slot: OpenStream,
    id: RequestId,
    /// The id as JSON, spliced into every notification.
    id_json: Vec<u8>,
    filter: SubscriptionFilter,
    policy: SubscriptionPolicy,
    subscriber: http::Extensions,
    rx: ChangeReceiver,
    shutdown: CancellationToken,
    encoder: Encoder,
    ack: Option<Bytes>,
    pending: Vec<Bytes>,
    done: bool,
    tasks: Option<TaskFeed>,
}

/// The next task state for a stream that follows tasks (never, for one that does not).
async fn next_task(feed: &mut Option<TaskFeed>) -> arctern_types::tasks::DetailedTask {
    match feed {
        Some(feed) => feed.next().await,
        None => std::future::pending().await,
    }
}

impl ListenState {
    async fn next(mut self) -> Option<(Bytes, ListenState)> {
        if let Some(ack) = self.ack.take() {
            return Some((ack, self));
        }
        loop {
            if let Some(msg) = self.pending.pop() {
                return Some((msg, self));
            }
            if self.done {
                return None;
            }
            tokio::select! {
                _ = self.shutdown.cancelled() => {
                    self.done = true;
                    let bytes = (self.encoder)(&self.id);
                    return Some((bytes, self));
                }
                change = self.rx.recv() => match change {
                    Ok(change) => {
                        if let Some(msg) = self.render(&change) {
                            return Some((msg, self));
                        }
                    }
                    Err(ChangeRecvError::Lagged(missed)) => {
                        tracing::warn!(missed, "a subscription stream fell behind; announcing every list it follows as changed");
                        self.pending = self.everything_changed();
                    }
                    Err(ChangeRecvError::Closed) => return None,
                },
                task = next_task(&mut self.tasks) => {
                    let msg = task_notification(&self.id, &task);
                    return Some((msg, self));
                }
            }
        }
    }

    /// The change's notification with this stream's id, if the stream follows it.
    fn render(&self, change: &Change) -> Option<Bytes> {
        let f = &self.filter;
        let follows = match change {
            Change::ToolsListChanged => f.tools_list_changed == Some(true),
            Change::PromptsListChanged => f.prompts_list_changed == Some(true),
            Change::ResourcesListChanged => f.resources_list_changed == Some(true),
            Change::ResourceUpdated(uri) => {
                f.resource_subscriptions
                    .as_deref()
                    .unwrap_or_default()
                    .iter()
                    .any(|s| covers(s, uri))
                    && self.policy.allows(&self.subscriber, uri)
            }
        };
        follows.then(|| Template::of(change).splice(&self.id_json))
    }

    fn everything_changed(&self) -> Vec<Bytes> {
        let f = &self.filter;
        let mut out = Vec::new();
        for (on, method) in [
            (
                f.tools_list_changed,
                methods::NOTIFICATIONS_TOOLS_LIST_CHANGED,
            ),
            (
                f.prompts_list_changed,
                methods::NOTIFICATIONS_PROMPTS_LIST_CHANGED,
            ),
            (
                f.resources_list_changed,
                methods::NOTIFICATIONS_RESOURCES_LIST_CHANGED,
            ),
        ] {
            if on == Some(true) {
                out.push(Template::new(method, None).splice(&self.id_json));
            }
        }
        for uri in f.resource_subscriptions.iter().flatten() {
            let template = Template::new(methods::NOTIFICATIONS_RESOURCES_UPDATED, Some(uri));
            out.push(template.splice(&self.id_json));
        }
        out
    }
}

/// Whether a subscription to `subscribed` covers an update of `uri`: the same resource, or
/// one beneath it when the subscription names more than a scheme (`file:`, `file://` and
/// `file:///` cover only themselves, never every file).
pub(crate) fn covers(subscribed: &str, uri: &str) -> bool {
    match uri.strip_prefix(subscribed) {
        Some("") => true,
        Some(rest) => {
            (subscribed.ends_with('/') || rest.starts_with('/'))
                && names_more_than_scheme(subscribed)
        }
        None => false,
    }
}

/// Whether a URI has an authority or a path beyond its scheme (and slashes).
fn names_more_than_scheme(uri: &str) -> bool {
    let rest = match uri.split_once(':') {
        Some((scheme, rest))
            if !scheme.is_empty()
                && scheme
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.')) =>
        {
            rest
        }
        _ => uri,
    };
    rest.bytes().any(|b| b != b'/')
}

/// The part of a requested filter this server honours.
fn honour(requested: &SubscriptionFilter, caps: &ServerCapabilities) -> SubscriptionFilter {
    let tools = caps.tools.as_ref().and_then(|t| t.list_changed) == Some(true);
    let prompts = caps.prompts.as_ref().and_then(|p| p.list_changed) == Some(true);
    let resources = caps.resources.as_ref().and_then(|r| r.list_changed) == Some(true);
    let subscribe = caps.resources.as_ref().and_then(|r| r.subscribe) == Some(true);
    let on = |asked: Option<bool>, offered: bool| (asked == Some(true) && offered).then_some(true);
    let mut honoured = SubscriptionFilter::default();
    honoured.tools_list_changed = on(requested.tools_list_changed, tools);
    honoured.prompts_list_changed = on(requested.prompts_list_changed, prompts);
    honoured.resources_list_changed = on(requested.resources_list_changed, resources);
    honoured.resource_subscriptions = requested
        .resource_subscriptions
        .clone()
        .filter(|_| subscribe);
    honoured
}

/// `notifications/tasks`: the task as `tasks/get` would give it, tagged with the stream.
fn task_notification(id: &RequestId, task: &arctern_types::tasks::DetailedTask) -> Bytes {
    let mut params = match serde_json::to_value(task) {
        Ok(Value::Object(params)) => params,
        _ => serde_json::Map::new(),
    };
    params.insert(
        "_meta".to_owned(),
        json!({ SUBSCRIPTION_ID_KEY: id_value(id) }),
    );
    let msg = json!({"jsonrpc": "2.0", "method": methods::NOTIFICATIONS_TASKS, "params": params});
    Bytes::from(serde_json::to_vec(&msg).unwrap_or_default())
}

fn id_value(id: &RequestId) -> Value {
    serde_json::to_value(id).unwrap_or(Value::Null)
}

fn notification(method: &str, id: &RequestId, field: Option<(&str, Value)>) -> Bytes {
    let mut params = serde_json::Map::new();
    if let Some((k, v)) = field {
        params.insert(k.to_owned(), v);
    }
    params.insert(
        "_meta".to_owned(),
        json!({ SUBSCRIPTION_ID_KEY: id_value(id) }),
    );
    let msg = json!({"jsonrpc": "2.0", "method": method, "params": params});
    Bytes::from(serde_json::to_vec(&msg).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sub_resources_are_covered() {
        assert!(covers("file:///a", "file:///a"));
        assert!(covers("file:///a", "file:///a/b"));
        assert!(covers("file:///a/", "file:///a/b"));
        assert!(!covers("file:///a", "file:///ab"));
        assert!(!covers("file:///a/b", "file:///a"));
    }

    #[test]
    fn a_bare_scheme_covers_nothing_beneath_it() {
        for scheme_only in [
            "file:", "file://", "file:///", "https:", "https://", "/", "",
        ] {
            assert!(
                !covers(scheme_only, "file:///tenants/alice/invoice-42.pdf"),
                "{scheme_only:?}"
            );
            assert!(covers(scheme_only, scheme_only), "itself: {scheme_only:?}");
        }
        assert!(covers("https://example.com", "https://example.com/a"));
        assert!(covers("file:///tenants/", "file:///tenants/alice"));
        assert!(covers("config:prod", "config:prod/db"));
    }

    #[test]
    fn the_policy_caps_count_and_length() {
        let policy = SubscriptionPolicy::default()
            .max_subscriptions(2)
            .max_uri_len(10);
        let uris = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(policy.check(&uris(&["a:1", "a:2"]), 0).is_ok());
        assert!(policy.check(&uris(&["a:1", "a:2", "a:3"]), 0).is_err());
        assert!(policy.check(&uris(&["a:1"]), 2).is_err());
        assert!(policy.check(&uris(&["a:12345678901"]), 0).is_err());
    }

    /// A spliced template is byte for byte the notification built as a JSON value.
    #[test]
    fn templates_splice_the_subscription_id() {
        let uri = "file:///a \"quoted\"/\u{e9}\n";
        for id in [RequestId::Number(7), RequestId::String("s-\"1\"".into())] {
            let id_json = serde_json::to_vec(&id).unwrap();
            let spliced = Template::of(&Change::ResourceUpdated(uri.into())).splice(&id_json);
            let built = notification(
                methods::NOTIFICATIONS_RESOURCES_UPDATED,
                &id,
                Some(("uri", Value::String(uri.into()))),
            );
            assert_eq!(spliced, built);
            let parsed: Value = serde_json::from_slice(&spliced).unwrap();
            assert_eq!(parsed["params"]["uri"], uri);
            assert_eq!(
                parsed["params"]["_meta"][SUBSCRIPTION_ID_KEY],
                id_value(&id)
            );
            let spliced = Template::of(&Change::ToolsListChanged).splice(&id_json);
            let built = notification(methods::NOTIFICATIONS_TOOLS_LIST_CHANGED, &id, None);
            assert_eq!(spliced, built);
            // Another URI is rendered anew, not served the remembered one.
            let other = "file:///b";
            let spliced = Template::of(&Change::ResourceUpdated(other.into())).splice(&id_json);
            let built = notification(
                methods::NOTIFICATIONS_RESOURCES_UPDATED,
                &id,
                Some(("uri", Value::String(other.into()))),
            );
            assert_eq!(spliced, built);
        }
    }
}
