//! Content blocks: what tools return and prompts contain, and the contents of resources.

use serde::{Deserialize, Deserializer, Serialize};

use crate::implementation::Icon;
use crate::meta::{JsonObject, Meta};
use crate::resources::Resource;
use crate::tags;
use crate::util::{buffer_object, from_object, serialize_variants, str_member};

/// The sender or recipient of a message (`Role`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Role {
    /// The user.
    User,
    /// The assistant (the model).
    Assistant,
}

/// Hints for the client on how to use or show an object (`Annotations`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Annotations {
    /// Who the object is meant for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<Vec<Role>>,
    /// Importance from 0 (least) to 1 (most).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<f64>,
    /// When the object was last modified, as an ISO 8601 timestamp.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<String>,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl Annotations {
    /// Annotations naming the audience.
    pub fn for_audience(audience: impl IntoIterator<Item = Role>) -> Self {
        Annotations {
            audience: Some(audience.into_iter().collect()),
            ..Default::default()
        }
    }

    /// Sets the priority (0 to 1).
    pub fn with_priority(mut self, priority: f64) -> Self {
        self.priority = Some(priority);
        self
    }
}

/// Text (`TextContent`, `"type": "text"`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct TextContent {
    /// Always `"text"`.
    #[serde(rename = "type")]
    pub kind: tags::Text,
    /// The text.
    pub text: String,
    /// Display hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl TextContent {
    /// A text block.
    pub fn new(text: impl Into<String>) -> Self {
        TextContent {
            text: text.into(),
            ..Default::default()
        }
    }

    /// Sets the annotations.
    pub fn with_annotations(mut self, annotations: Annotations) -> Self {
        self.annotations = Some(annotations);
        self
    }
}

/// An image (`ImageContent`, `"type": "image"`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ImageContent {
    /// Always `"image"`.
    #[serde(rename = "type")]
    pub kind: tags::Image,
    /// The base64-encoded image data.
    pub data: String,
    /// The image MIME type, such as `image/png`.
    pub mime_type: String,
    /// Display hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ImageContent {
    /// An image from base64 data and a MIME type.
    pub fn new(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        ImageContent {
            data: data.into(),
            mime_type: mime_type.into(),
            ..Default::default()
        }
    }
}

/// Audio (`AudioContent`, `"type": "audio"`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct AudioContent {
    /// Always `"audio"`.
    #[serde(rename = "type")]
    pub kind: tags::Audio,
    /// The base64-encoded audio data.
    pub data: String,
    /// The audio MIME type, such as `audio/wav`.
    pub mime_type: String,
    /// Display hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl AudioContent {
    /// Audio from base64 data and a MIME type.
    pub fn new(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        AudioContent {
            data: data.into(),
            mime_type: mime_type.into(),
            ..Default::default()
        }
    }
}

/// A link to a resource the client may read (`ResourceLink`, `"type": "resource_link"`).
/// The same members as [`Resource`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ResourceLink {
    /// Always `"resource_link"`.
    #[serde(rename = "type")]
    pub kind: tags::ResourceLink,
    /// The resource URI.
    pub uri: String,
    /// Programmatic name.
    pub name: String,
    /// Human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the resource is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The MIME type, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Display hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Size in bytes of the raw content, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Icons for display.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ResourceLink {
    /// A link to `uri` named `name`.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        ResourceLink {
            uri: uri.into(),
            name: name.into(),
            ..Default::default()
        }
    }
}

impl From<Resource> for ResourceLink {
    fn from(r: Resource) -> Self {
        ResourceLink {
            kind: tags::ResourceLink,
            uri: r.uri,
            name: r.name,
            title: r.title,
            description: r.description,
            mime_type: r.mime_type,
            annotations: r.annotations,
            size: r.size,
            icons: r.icons,
            meta: r.meta,
            extra: r.extra,
        }
    }
}

/// A resource's contents embedded in a message (`EmbeddedResource`, `"type": "resource"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct EmbeddedResource {
    /// Always `"resource"`.
    #[serde(rename = "type")]
    pub kind: tags::Resource,
    /// The contents.
    pub resource: ResourceContents,
    /// Display hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl EmbeddedResource {
    /// Embeds `contents`.
    pub fn new(contents: impl Into<ResourceContents>) -> Self {
        EmbeddedResource {
            kind: tags::Resource,
            resource: contents.into(),
            annotations: None,
            meta: None,
            extra: JsonObject::new(),
        }
    }
}

/// The text contents of a resource (`TextResourceContents`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct TextResourceContents {
    /// The resource URI.
    pub uri: String,
    /// The MIME type, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The text.
    pub text: String,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl TextResourceContents {
    /// Text contents of `uri`.
    pub fn new(uri: impl Into<String>, text: impl Into<String>) -> Self {
        TextResourceContents {
            uri: uri.into(),
            text: text.into(),
            ..Default::default()
        }
    }

    /// Sets the MIME type.
    pub fn with_mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }
}

/// The binary contents of a resource (`BlobResourceContents`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct BlobResourceContents {
    /// The resource URI.
    pub uri: String,
    /// The MIME type, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The base64-encoded bytes.
    pub blob: String,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this type does not model, kept as received and written back as they came.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl BlobResourceContents {
    /// Binary contents of `uri` from base64 data.
    pub fn new(uri: impl Into<String>, blob: impl Into<String>) -> Self {
        BlobResourceContents {
            uri: uri.into(),
            blob: blob.into(),
            ..Default::default()
        }
    }

    /// Sets the MIME type.
    pub fn with_mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }
}

/// The contents of a resource: text or binary.
///
/// The schema names the shared base `ResourceContents` (`uri`, `mimeType?`, `_meta?`); every
/// place that holds contents (`EmbeddedResource.resource`, `ReadResourceResult.contents`)
/// takes one of its two concrete forms, which is what this enum is.
///
/// On the wire the union is untagged. Deserializing picks the variant by its required member:
/// an object with `text` is [`ResourceContents::Text`], one with `blob` is
/// [`ResourceContents::Blob`]; an object with both or neither is rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResourceContents {
    /// Text contents.
    Text(TextResourceContents),
    /// Binary contents.
    Blob(BlobResourceContents),
}

serialize_variants!(ResourceContents { Text, Blob });

impl<'de> Deserialize<'de> for ResourceContents {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = buffer_object(d, "resource contents (an object)")?;
        match (map.contains_key("text"), map.contains_key("blob")) {
            (true, false) => from_object(map).map(ResourceContents::Text),
            (false, true) => from_object(map).map(ResourceContents::Blob),
            (true, true) => Err(serde::de::Error::custom(
                "resource contents have both `text` and `blob`",
            )),
            (false, false) => Err(serde::de::Error::custom(
                "resource contents need a `text` or a `blob` member",
            )),
        }
    }
}

impl ResourceContents {
    /// The resource URI.
    pub fn uri(&self) -> &str {
        match self {
            ResourceContents::Text(t) => &t.uri,
            ResourceContents::Blob(b) => &b.uri,
        }
    }

    /// The MIME type, if known.
    pub fn mime_type(&self) -> Option<&str> {
        match self {
            ResourceContents::Text(t) => t.mime_type.as_deref(),
            ResourceContents::Blob(b) => b.mime_type.as_deref(),
        }
    }

    /// The text, for text contents.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            ResourceContents::Text(t) => Some(&t.text),
            ResourceContents::Blob(_) => None,
        }
    }

    /// The base64 data, for binary contents.
    pub fn as_blob(&self) -> Option<&str> {
        match self {
            ResourceContents::Blob(b) => Some(&b.blob),
            ResourceContents::Text(_) => None,
        }
    }
}

impl From<TextResourceContents> for ResourceContents {
    fn from(c: TextResourceContents) -> Self {
        ResourceContents::Text(c)
    }
}

impl From<BlobResourceContents> for ResourceContents {
    fn from(c: BlobResourceContents) -> Self {
        ResourceContents::Blob(c)
    }
}

/// A block of content in a tool result or prompt message (`ContentBlock`), tagged by `type`.
///
/// Deserializing reads `type` first and decodes the matching variant, so errors name the
/// member that is wrong. A `type` this crate does not know (one a newer revision added, as
/// `audio` and `resource_link` were added before) is kept as [`ContentBlock::Unknown`] and
/// written back exactly as it came, so one new kind of block never fails a whole result.
/// An object without a string `type` is rejected.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ContentBlock {
    /// `"text"`.
    Text(TextContent),
    /// `"image"`.
    Image(ImageContent),
    /// `"audio"`.
    Audio(AudioContent),
    /// `"resource_link"`.
    ResourceLink(ResourceLink),
    /// `"resource"`.
    Resource(EmbeddedResource),
    /// Any other `type`, kept as received.
    Unknown(UnknownContent),
}

serialize_variants!(ContentBlock {
    Text,
    Image,
    Audio,
    ResourceLink,
    Resource,
    Unknown
});

impl<'de> Deserialize<'de> for ContentBlock {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = buffer_object(d, "a content block (an object)")?;
        match str_member(&map, "type") {
            Some(tags::Text::VALUE) => from_object(map).map(ContentBlock::Text),
            Some(tags::Image::VALUE) => from_object(map).map(ContentBlock::Image),
            Some(tags::Audio::VALUE) => from_object(map).map(ContentBlock::Audio),
            Some(tags::ResourceLink::VALUE) => from_object(map).map(ContentBlock::ResourceLink),
            Some(tags::Resource::VALUE) => from_object(map).map(ContentBlock::Resource),
            Some(_) => Ok(ContentBlock::Unknown(UnknownContent(map))),
            None => Err(serde::de::Error::missing_field("type")),
        }
    }
}

/// A content block of a `type` this crate does not model, as received: it serializes back
/// to the same JSON object, member for member. Its meaning is for a newer peer to know;
/// show it as unsupported, or pass it on.
#[derive(Debug, Clone, PartialEq)]
pub struct UnknownContent(JsonObject);

impl UnknownContent {
    /// A block from its JSON object, which must have a string `type`; the object comes back
    /// as the error otherwise. (For the kinds this crate models, use their own types: this
    /// one is for kinds it does not.)
    pub fn new(object: JsonObject) -> Result<Self, JsonObject> {
        if object.get("type").is_some_and(serde_json::Value::is_string) {
            Ok(UnknownContent(object))
        } else {
            Err(object)
        }
    }

    /// The block's `type`.
    pub fn kind(&self) -> &str {
        str_member(&self.0, "type").unwrap_or_default()
    }

    /// The whole block.
    pub fn as_object(&self) -> &JsonObject {
        &self.0
    }

    /// The whole block, by value.
    pub fn into_object(self) -> JsonObject {
        self.0
    }
}

impl Serialize for UnknownContent {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text(TextContent::new(text))
    }

    /// An image block from base64 data and a MIME type.
    pub fn image(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        ContentBlock::Image(ImageContent::new(data, mime_type))
    }

    /// An audio block from base64 data and a MIME type.
    pub fn audio(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        ContentBlock::Audio(AudioContent::new(data, mime_type))
    }

    /// A link to the resource `uri` named `name`.
    pub fn resource_link(uri: impl Into<String>, name: impl Into<String>) -> Self {
        ContentBlock::ResourceLink(ResourceLink::new(uri, name))
    }

    /// An embedded resource.
    pub fn resource(contents: impl Into<ResourceContents>) -> Self {
        ContentBlock::Resource(EmbeddedResource::new(contents))
    }

    /// The wire `type`.
    pub fn kind(&self) -> &str {
        match self {
            ContentBlock::Text(_) => tags::Text::VALUE,
            ContentBlock::Image(_) => tags::Image::VALUE,
            ContentBlock::Audio(_) => tags::Audio::VALUE,
            ContentBlock::ResourceLink(_) => tags::ResourceLink::VALUE,
            ContentBlock::Resource(_) => tags::Resource::VALUE,
            ContentBlock::Unknown(u) => u.kind(),
        }
    }

    /// The text of a text block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            ContentBlock::Text(t) => Some(&t.text),
            _ => None,
        }
    }

    /// The annotations of any block this crate models (`None` for an unknown one).
    pub fn annotations(&self) -> Option<&Annotations> {
        match self {
            ContentBlock::Text(c) => c.annotations.as_ref(),
            ContentBlock::Image(c) => c.annotations.as_ref(),
            ContentBlock::Audio(c) => c.annotations.as_ref(),
            ContentBlock::ResourceLink(c) => c.annotations.as_ref(),
            ContentBlock::Resource(c) => c.annotations.as_ref(),
            ContentBlock::Unknown(_) => None,
        }
    }
}

impl From<TextContent> for ContentBlock {
    fn from(c: TextContent) -> Self {
        ContentBlock::Text(c)
    }
}

impl From<ImageContent> for ContentBlock {
    fn from(c: ImageContent) -> Self {
        ContentBlock::Image(c)
    }
}

impl From<AudioContent> for ContentBlock {
    fn from(c: AudioContent) -> Self {
        ContentBlock::Audio(c)
    }
}

impl From<ResourceLink> for ContentBlock {
    fn from(c: ResourceLink) -> Self {
        ContentBlock::ResourceLink(c)
    }
}

impl From<EmbeddedResource> for ContentBlock {
    fn from(c: EmbeddedResource) -> Self {
        ContentBlock::Resource(c)
    }
}

impl From<String> for ContentBlock {
    fn from(text: String) -> Self {
        ContentBlock::text(text)
    }
}

impl From<&str> for ContentBlock {
    fn from(text: &str) -> Self {
        ContentBlock::text(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn blocks_are_tagged_by_type() {
        let b = ContentBlock::text("hi");
        assert_eq!(
            serde_json::to_value(&b).unwrap(),
            json!({"type": "text", "text": "hi"})
        );
        let b: ContentBlock = serde_json::from_value(
            json!({"type": "image", "data": "AA==", "mimeType": "image/png"}),
        )
        .unwrap();
        assert_eq!(b, ContentBlock::image("AA==", "image/png"));
        assert_eq!(b.kind(), "image");
        // A newer revision's block is kept, and written back as it came.
        let video = json!({"type": "video", "uri": "https://example.com/v.mp4", "x": {"y": [1]}});
        let b: ContentBlock = serde_json::from_value(video.clone()).unwrap();
        assert_eq!(b.kind(), "video");
        assert!(matches!(&b, ContentBlock::Unknown(u) if u.as_object()["x"]["y"][0] == 1));
        assert_eq!(serde_json::to_value(&b).unwrap(), video);
        assert!(b.as_text().is_none() && b.annotations().is_none());
        assert!(UnknownContent::new(json!({"uri": "x"}).as_object().cloned().unwrap()).is_err());
        let e = serde_json::from_value::<ContentBlock>(json!({"type": 7})).unwrap_err();
        assert!(e.to_string().contains("missing field `type`"), "{e}");
        let e = serde_json::from_value::<ContentBlock>(json!({"text": "x"})).unwrap_err();
        assert!(e.to_string().contains("missing field `type`"), "{e}");
        // A variant's own errors come through.
        let e = serde_json::from_value::<ContentBlock>(json!({"type": "image", "data": "AA=="}))
            .unwrap_err();
        assert!(e.to_string().contains("mimeType"), "{e}");
        // A standalone struct keeps its tag and checks it.
        assert!(
            serde_json::from_value::<TextContent>(json!({"type": "image", "text": "x"})).is_err()
        );
    }

    #[test]
    fn resource_contents_pick_text_or_blob() {
        let t: ResourceContents =
            serde_json::from_value(json!({"uri": "a:b", "text": "x"})).unwrap();
        assert_eq!(t.as_text(), Some("x"));
        let b: ResourceContents =
            serde_json::from_value(json!({"uri": "a:b", "blob": "AA==", "mimeType": "x/y"}))
                .unwrap();
        assert_eq!(b.as_blob(), Some("AA=="));
        assert_eq!(b.mime_type(), Some("x/y"));
        // An empty text is still text.
        let t: ResourceContents =
            serde_json::from_value(json!({"uri": "a:b", "text": ""})).unwrap();
        assert!(matches!(t, ResourceContents::Text(_)));
        assert!(serde_json::from_value::<ResourceContents>(json!({"uri": "a:b"})).is_err());
        assert!(
            serde_json::from_value::<ResourceContents>(
                json!({"uri": "a:b", "text": "", "blob": ""})
            )
            .is_err()
        );
        let e = ContentBlock::resource(TextResourceContents::new("a:b", "x"));
        assert_eq!(
            serde_json::to_value(&e).unwrap(),
            json!({"type": "resource", "resource": {"uri": "a:b", "text": "x"}})
        );
    }
}
