//! The schema's shared base shapes: request and notification params, typed `_meta` objects,
//! generic requests, notifications and results, pagination and caching.

use serde::{Deserialize, Serialize};

use crate::implementation::{Icon, Implementation};
use crate::jsonrpc::{JsonRpcRequest, RequestId};
use crate::meta::{JsonObject, Meta, RequestMeta, SERVER_INFO_KEY};
use crate::result::{CacheScope, Cursor, ResultType};

/// Params of a request that takes nothing but the envelope (`RequestParams`), such as
/// `server/discover`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RequestParams {
    /// The per-request envelope: protocol version, client capabilities, client info.
    #[serde(rename = "_meta", default)]
    pub meta: RequestMeta,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl RequestParams {
    /// Params carrying only `meta`.
    pub fn new(meta: RequestMeta) -> Self {
        RequestParams {
            meta,
            extra: Default::default(),
        }
    }
}

/// Params of the paginated list requests (`PaginatedRequestParams`): `tools/list`,
/// `prompts/list`, `resources/list`, `resources/templates/list`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct PaginatedRequestParams {
    /// The per-request envelope.
    #[serde(rename = "_meta", default)]
    pub meta: RequestMeta,
    /// Where to continue: the `nextCursor` of the previous page. Absent for the first page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<Cursor>,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl PaginatedRequestParams {
    /// The first page.
    pub fn new(meta: RequestMeta) -> Self {
        PaginatedRequestParams {
            meta,
            cursor: None,
            extra: Default::default(),
        }
    }

    /// Continues from `cursor`.
    pub fn with_cursor(mut self, cursor: impl Into<Cursor>) -> Self {
        self.cursor = Some(cursor.into());
        self
    }
}

/// A paginated list request (`PaginatedRequest`); see the per-method aliases such as
/// [`ListToolsRequest`](crate::tools::ListToolsRequest).
pub type PaginatedRequest = JsonRpcRequest<PaginatedRequestParams>;

/// The `_meta` of a notification (`NotificationMetaObject`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct NotificationMeta {
    /// On a `subscriptions/listen` stream: the JSON-RPC id of the listen request this
    /// notification belongs to (same JSON type as that id).
    #[serde(
        rename = "io.modelcontextprotocol/subscriptionId",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub subscription_id: Option<RequestId>,
    /// Any other keys, kept as they are.
    #[serde(flatten)]
    pub extra: Meta,
}

impl NotificationMeta {
    /// A `_meta` tying a notification to the listen request `id`.
    pub fn for_subscription(id: RequestId) -> Self {
        NotificationMeta {
            subscription_id: Some(id),
            extra: Meta::new(),
        }
    }
}

/// Params of notifications that carry nothing but `_meta` (`NotificationParams`), such as
/// `notifications/tools/list_changed`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct NotificationParams {
    /// Notification metadata (the subscription id on a listen stream).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<NotificationMeta>,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl NotificationParams {
    /// Params tying the notification to the listen request `id`.
    pub fn for_subscription(id: RequestId) -> Self {
        NotificationParams {
            meta: Some(NotificationMeta::for_subscription(id)),
            extra: Default::default(),
        }
    }

    /// The subscription id, if any.
    pub fn subscription_id(&self) -> Option<&RequestId> {
        self.meta.as_ref()?.subscription_id.as_ref()
    }
}

/// The typed view of a result's `_meta` (`ResultMetaObject`).
///
/// Results keep their `_meta` as an open [`Meta`] map; convert with [`ResultMeta::from_meta`]
/// and [`ResultMeta::into_meta`] to read or write the reserved keys.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ResultMeta {
    /// Who the server says it is (for display and logs only).
    #[serde(
        rename = "io.modelcontextprotocol/serverInfo",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub server_info: Option<Implementation>,
    /// Any other keys, kept as they are.
    #[serde(flatten)]
    pub extra: Meta,
}

impl ResultMeta {
    /// A `_meta` naming the server.
    pub fn with_server_info(info: Implementation) -> Self {
        ResultMeta {
            server_info: Some(info),
            extra: Meta::new(),
        }
    }

    /// Reads the reserved keys of a result's `_meta`. A malformed `serverInfo` is left in
    /// `extra` rather than failing.
    pub fn from_meta(meta: &Meta) -> Self {
        let mut extra = meta.clone();
        let server_info = match extra.remove(SERVER_INFO_KEY) {
            Some(v) => match serde_json::from_value::<Implementation>(v.clone()) {
                Ok(info) => Some(info),
                Err(_) => {
                    extra.insert(SERVER_INFO_KEY.to_owned(), v);
                    None
                }
            },
            None => None,
        };
        ResultMeta { server_info, extra }
    }

    /// The open `_meta` map.
    pub fn into_meta(self) -> Meta {
        let mut meta = self.extra;
        if let Some(info) = self.server_info
            && let Ok(v) = serde_json::to_value(info)
        {
            meta.insert(SERVER_INFO_KEY.to_owned(), v);
        }
        meta
    }
}

impl From<ResultMeta> for Meta {
    fn from(m: ResultMeta) -> Meta {
        m.into_meta()
    }
}

/// Any request object (`Request`): a method and optional params, without the JSON-RPC members.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct GenericRequest {
    /// The method name.
    pub method: String,
    /// The params.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<JsonObject>,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl GenericRequest {
    /// A request object for `method`.
    pub fn new(method: impl Into<String>, params: Option<JsonObject>) -> Self {
        GenericRequest {
            method: method.into(),
            params,
            extra: JsonObject::new(),
        }
    }
}

/// Any notification object (`Notification`): a method and optional params, without the
/// JSON-RPC members.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct GenericNotification {
    /// The notification name.
    pub method: String,
    /// The params.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<JsonObject>,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl GenericNotification {
    /// A notification object for `method`.
    pub fn new(method: impl Into<String>, params: Option<JsonObject>) -> Self {
        GenericNotification {
            method: method.into(),
            params,
            extra: JsonObject::new(),
        }
    }
}

/// Any result (`Result`, and the `ClientResult`/`ServerResult` unions): `resultType`,
/// `_meta` and every other member kept as received.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct GenericResult {
    /// How to read the result; missing means `"complete"`.
    #[serde(default)]
    pub result_type: ResultType,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// All other members.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The shared part of paginated results (`PaginatedResult`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct PaginatedResult {
    /// How to read the result; missing means `"complete"`.
    #[serde(default)]
    pub result_type: ResultType,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// The cursor of the next page; absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<Cursor>,
    /// All other members (the page's items among them).
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The shared part of cacheable results (`CacheableResult`): any result read only for its
/// caching hints. The concrete cacheable results implement [`Cacheable`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CacheableResult {
    /// How to read the result; missing means `"complete"`.
    #[serde(default)]
    pub result_type: ResultType,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// How long the result may be reused, in milliseconds. Required on the 2026-07-28 wire;
    /// `None` when an older server left it out (treat as 0).
    #[serde(
        default,
        deserialize_with = "crate::util::lenient_ttl",
        skip_serializing_if = "Option::is_none"
    )]
    pub ttl_ms: Option<u64>,
    /// Who may reuse the result. Required on the 2026-07-28 wire.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
    /// All other members.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Results that carry `ttlMs` and `cacheScope`: `server/discover`, the four list results and
/// `resources/read`.
///
/// The fields are `Option` so that a server can fill in defaults for whatever a handler left
/// unset ([`Cacheable::fill_cache_hints`]) and a client can tell an old server's result
/// (no hints) apart.
pub trait Cacheable {
    /// `ttlMs` and `cacheScope` as received or set.
    fn cache_hints(&self) -> (Option<u64>, Option<CacheScope>);

    /// Mutable access to `ttlMs` and `cacheScope`.
    fn cache_hints_mut(&mut self) -> (&mut Option<u64>, &mut Option<CacheScope>);

    /// The freshness lifetime a client should use: `ttlMs`, or 0 when absent.
    fn effective_ttl_ms(&self) -> u64 {
        self.cache_hints().0.unwrap_or(0)
    }

    /// The scope a client should use: `cacheScope`, or [`CacheScope::Private`] (the
    /// conservative choice) when absent.
    fn effective_cache_scope(&self) -> CacheScope {
        self.cache_hints().1.unwrap_or(CacheScope::Private)
    }

    /// Sets whichever of `ttlMs` and `cacheScope` is still unset.
    fn fill_cache_hints(&mut self, ttl_ms: u64, scope: CacheScope) {
        let (ttl, cache_scope) = self.cache_hints_mut();
        ttl.get_or_insert(ttl_ms);
        cache_scope.get_or_insert(scope);
    }

    /// Sets both hints.
    fn with_cache_hints(mut self, ttl_ms: u64, scope: CacheScope) -> Self
    where
        Self: Sized,
    {
        let (ttl, cache_scope) = self.cache_hints_mut();
        *ttl = Some(ttl_ms);
        *cache_scope = Some(scope);
        self
    }
}

macro_rules! impl_cacheable {
    ($($ty:ty),* $(,)?) => {$(
        impl $crate::base::Cacheable for $ty {
            fn cache_hints(&self) -> (Option<u64>, Option<$crate::result::CacheScope>) {
                (self.ttl_ms, self.cache_scope)
            }
            fn cache_hints_mut(
                &mut self,
            ) -> (&mut Option<u64>, &mut Option<$crate::result::CacheScope>) {
                (&mut self.ttl_ms, &mut self.cache_scope)
            }
        }
    )*};
}
pub(crate) use impl_cacheable;

impl_cacheable!(CacheableResult);

/// A name and an optional display title (`BaseMetadata`), shared by tools, prompts,
/// resources and implementations.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct BaseMetadata {
    /// Programmatic name.
    pub name: String,
    /// Human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The icon list mixin (`Icons`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Icons {
    /// Icons for display.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn result_meta_round_trips_through_the_open_map() {
        let meta = ResultMeta::with_server_info(Implementation::new("s", "1")).into_meta();
        assert_eq!(
            serde_json::to_value(&meta).unwrap(),
            json!({"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}})
        );
        let back = ResultMeta::from_meta(&meta);
        assert_eq!(back.server_info.unwrap().name, "s");

        let mut bad = Meta::new();
        bad.insert(SERVER_INFO_KEY.into(), json!(3));
        let m = ResultMeta::from_meta(&bad);
        assert!(m.server_info.is_none());
        assert_eq!(m.extra.get(SERVER_INFO_KEY), Some(&json!(3)));
    }

    #[test]
    fn generic_result_keeps_everything() {
        let v = json!({"resultType": "task", "task": {"taskId": "t1"}, "_meta": {"a": 1}});
        let r: GenericResult = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(r.result_type, ResultType::TASK);
        assert_eq!(serde_json::to_value(&r).unwrap(), v);
        let r: GenericResult = serde_json::from_value(json!({})).unwrap();
        assert!(r.result_type.is_complete());
    }

    #[test]
    fn cache_hints() {
        let mut r: CacheableResult =
            serde_json::from_value(json!({"resultType": "complete"})).unwrap();
        assert_eq!(r.effective_ttl_ms(), 0);
        assert_eq!(r.effective_cache_scope(), CacheScope::Private);
        r.fill_cache_hints(1000, CacheScope::Public);
        assert_eq!(r.cache_hints(), (Some(1000), Some(CacheScope::Public)));
        r.fill_cache_hints(5, CacheScope::Private);
        assert_eq!(r.cache_hints(), (Some(1000), Some(CacheScope::Public)));
    }

    #[test]
    fn notification_params_carry_the_subscription_id() {
        let p = NotificationParams::for_subscription(RequestId::from("listen-1"));
        assert_eq!(
            serde_json::to_value(&p).unwrap(),
            json!({"_meta": {"io.modelcontextprotocol/subscriptionId": "listen-1"}})
        );
        assert_eq!(p.subscription_id(), Some(&RequestId::from("listen-1")));
        assert_eq!(
            serde_json::to_value(NotificationParams::default()).unwrap(),
            json!({})
        );
    }
}
