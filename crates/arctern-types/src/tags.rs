//! Zero-sized constants for the discriminating members of tagged wire objects.
//!
//! Many schema types carry a constant member that tells them apart from their siblings in a
//! union: `"type": "text"` on [`TextContent`](crate::content::TextContent),
//! `"method": "elicitation/create"` on [`ElicitRequest`](crate::elicitation::ElicitRequest),
//! `"mode": "url"` on URL-mode elicitations, and so on. Each such member is a field of one of
//! the unit types below: it always serializes as its constant and refuses any other string when
//! deserializing, so a standalone struct keeps its discriminator on the wire and the unions that
//! contain it can pick the right variant deterministically.
//!
//! These fields are filled in by `Default` (and by every constructor), so user code never has
//! to name them.

use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

macro_rules! wire_tags {
    ($($(#[$doc:meta])* $name:ident = $value:literal;)*) => {$(
        $(#[$doc])*
        #[derive(Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name;

        impl $name {
            /// The constant wire value.
            pub const VALUE: &'static str = $value;

            /// The constant wire value.
            pub const fn as_str(self) -> &'static str {
                $value
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Debug::fmt($value, f)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str($value)
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str($value)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                d.deserialize_str(ConstVisitor($value)).map(|()| $name)
            }
        }
    )*};
}

/// Accepts exactly one string.
struct ConstVisitor(&'static str);

impl<'de> Visitor<'de> for ConstVisitor {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the string {:?}", self.0)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        if v == self.0 {
            Ok(())
        } else {
            Err(E::invalid_value(de::Unexpected::Str(v), &self))
        }
    }
}

wire_tags! {
    /// `"type": "text"` ([`TextContent`](crate::content::TextContent)).
    Text = "text";
    /// `"type": "image"` ([`ImageContent`](crate::content::ImageContent)).
    Image = "image";
    /// `"type": "audio"` ([`AudioContent`](crate::content::AudioContent)).
    Audio = "audio";
    /// `"type": "resource_link"` ([`ResourceLink`](crate::content::ResourceLink)).
    ResourceLink = "resource_link";
    /// `"type": "resource"` ([`EmbeddedResource`](crate::content::EmbeddedResource)).
    Resource = "resource";
    /// `"type": "tool_use"` ([`ToolUseContent`](crate::sampling::ToolUseContent)).
    ToolUse = "tool_use";
    /// `"type": "tool_result"` ([`ToolResultContent`](crate::sampling::ToolResultContent)).
    ToolResult = "tool_result";
    /// `"type": "ref/prompt"` ([`PromptReference`](crate::completion::PromptReference)).
    PromptRef = "ref/prompt";
    /// `"type": "ref/resource"`
    /// ([`ResourceTemplateReference`](crate::completion::ResourceTemplateReference)).
    ResourceRef = "ref/resource";
    /// `"method": "elicitation/create"` ([`ElicitRequest`](crate::elicitation::ElicitRequest)).
    ElicitationCreate = "elicitation/create";
    /// `"method": "sampling/createMessage"`
    /// ([`CreateMessageRequest`](crate::sampling::CreateMessageRequest)).
    SamplingCreateMessage = "sampling/createMessage";
    /// `"method": "roots/list"` ([`ListRootsRequest`](crate::roots::ListRootsRequest)).
    RootsList = "roots/list";
    /// `"mode": "form"` ([`ElicitRequestFormParams`](crate::elicitation::ElicitRequestFormParams)).
    FormMode = "form";
    /// `"mode": "url"` ([`ElicitRequestUrlParams`](crate::elicitation::ElicitRequestUrlParams)).
    UrlMode = "url";
    /// `"type": "string"` in an elicitation schema.
    StringType = "string";
    /// `"type": "boolean"` in an elicitation schema.
    BooleanType = "boolean";
    /// `"type": "array"` in an elicitation schema.
    ArrayType = "array";
    /// `"type": "object"` in an elicitation schema.
    ObjectType = "object";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_accept_only_their_constant() {
        assert_eq!(serde_json::to_string(&Text).unwrap(), "\"text\"");
        assert_eq!(serde_json::from_str::<Text>("\"text\"").unwrap(), Text);
        assert!(serde_json::from_str::<Text>("\"image\"").is_err());
        assert!(serde_json::from_str::<Text>("1").is_err());
        assert_eq!(RootsList::VALUE, "roots/list");
        assert_eq!(format!("{UrlMode:?} {UrlMode}"), "\"url\" url");
    }
}
