//! The demo's notes: a `note {name, text}` tool that stores a note and announces
//! `resources/updated` for `notes://{name}`, and that resource template. With `--redis` the
//! notes live in Redis and the announcement reaches every instance of the fleet; without it,
//! this process's memory and its own listeners.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arctern::ErrorObject;
use arctern::server::extract::Args;
use arctern::server::{Change, ChangeBus, McpServer, ResourceTemplateSpec, resource_not_found};
use arctern_redis::redis::AsyncCommands as _;
use arctern_redis::{RedisConfig, bounded};
use schemars::JsonSchema;
use serde::Deserialize;

/// The longest note name, in bytes.
const MAX_NAME_LEN: usize = 64;
/// The largest note, in bytes.
const MAX_TEXT_LEN: usize = 64 * 1024;
/// The most notes kept in memory (without Redis).
const MAX_NOTES_IN_MEMORY: usize = 10_000;
/// Where notes live in Redis: `arctern:notes:{name}`.
const REDIS_PREFIX: &str = "arctern:notes:";

/// Where the notes are kept, and the bus their updates are announced on.
#[derive(Clone)]
pub struct Notes {
    store: Store,
    bus: Arc<dyn ChangeBus>,
    instance: Arc<str>,
}

#[derive(Clone)]
enum Store {
    Memory(Arc<Mutex<HashMap<String, String>>>),
    Redis {
        connection: arctern_redis::redis::aio::ConnectionManager,
        timeout: Duration,
    },
}

impl Notes {
    /// Notes in this process's memory.
    pub fn in_memory(bus: Arc<dyn ChangeBus>, instance: &str) -> Self {
        Notes {
            store: Store::Memory(Arc::default()),
            bus,
            instance: instance.into(),
        }
    }

    /// Notes in Redis (the connection is made now: an unreachable Redis fails the start).
    pub async fn in_redis(
        config: &RedisConfig,
        bus: Arc<dyn ChangeBus>,
        instance: &str,
    ) -> Result<Self, arctern_redis::Error> {
        Ok(Notes {
            store: Store::Redis {
                connection: arctern_redis::connect(config).await?,
                timeout: config.call_timeout(),
            },
            bus,
            instance: instance.into(),
        })
    }

    async fn save(&self, name: &str, text: &str) -> Result<(), String> {
        match &self.store {
            Store::Memory(notes) => {
                let mut notes = notes.lock().unwrap_or_else(|e| e.into_inner());
                if notes.len() >= MAX_NOTES_IN_MEMORY && !notes.contains_key(name) {
                    return Err(format!(
                        "the demo keeps at most {MAX_NOTES_IN_MEMORY} notes in memory"
                    ));
                }
                notes.insert(name.to_owned(), text.to_owned());
                Ok(())
            }
            Store::Redis {
                connection,
                timeout,
            } => {
                let mut connection = connection.clone();
                bounded(*timeout, async {
                    connection
                        .set::<_, _, ()>(format!("{REDIS_PREFIX}{name}"), text)
                        .await
                        .map_err(arctern_redis::Error::Redis)
                })
                .await
                .map_err(|e| format!("the notes store is unavailable: {e}"))
            }
        }
    }

    async fn load(&self, name: &str) -> Result<Option<String>, String> {
        match &self.store {
            Store::Memory(notes) => Ok(notes
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(name)
                .cloned()),
            Store::Redis {
                connection,
                timeout,
            } => {
                let mut connection = connection.clone();
                bounded(*timeout, async {
                    connection
                        .get::<_, Option<String>>(format!("{REDIS_PREFIX}{name}"))
                        .await
                        .map_err(arctern_redis::Error::Redis)
                })
                .await
                .map_err(|e| format!("the notes store is unavailable: {e}"))
            }
        }
    }
}

/// Arguments of `note`.
#[derive(Deserialize, JsonSchema)]
pub struct NoteArgs {
    /// The note's name (1 to 64 characters from A-Z a-z 0-9 . _ -); it is read as notes://{name}.
    pub name: String,
    /// What the note says (at most 64 KiB).
    pub text: String,
}

/// Variables of the `notes://{name}` template.
#[derive(Deserialize, JsonSchema)]
pub struct NoteVars {
    /// The note's name.
    pub name: String,
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// Adds the `note` tool and the `notes://{name}` template to the demo.
pub fn install(server: McpServer, notes: Notes) -> McpServer {
    let writer = notes.clone();
    server
        .tool(
            "note",
            "Stores a note and announces resources/updated for notes://{name} (to every \
             instance of the fleet when the demo runs with --redis).",
            move |Args(a): Args<NoteArgs>| {
                let notes = writer.clone();
                async move {
                    if !valid_name(&a.name) {
                        return Err(format!(
                            "a note name is 1 to {MAX_NAME_LEN} characters from A-Z a-z 0-9 . _ -"
                        ));
                    }
                    if a.text.len() > MAX_TEXT_LEN {
                        return Err(format!("a note is at most {MAX_TEXT_LEN} bytes"));
                    }
                    notes.save(&a.name, &a.text).await?;
                    let uri = format!("notes://{}", a.name);
                    notes
                        .bus
                        .publish(Change::ResourceUpdated(uri.as_str().into()));
                    Ok(format!("Saved {uri} on instance {}.", notes.instance))
                }
            },
        )
        .resource_template(
            ResourceTemplateSpec::new("notes://{name}", "note")
                .description("A note written with the note tool.")
                .mime_type("text/plain"),
            move |Args(v): Args<NoteVars>| {
                let notes = notes.clone();
                async move {
                    let uri = format!("notes://{}", v.name);
                    if !valid_name(&v.name) {
                        return Err(resource_not_found(&uri));
                    }
                    match notes.load(&v.name).await {
                        Ok(Some(text)) => Ok(text),
                        Ok(None) => Err(resource_not_found(&uri)),
                        Err(e) => Err(ErrorObject::internal_error(e)),
                    }
                }
            },
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(valid_name("shopping-list_2.txt"));
        assert!(!valid_name(""));
        assert!(!valid_name("a/b"));
        assert!(!valid_name(&"x".repeat(65)));
    }
}
