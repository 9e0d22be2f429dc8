//! Where credentials live between runs: a pluggable store, in memory or in a file only the
//! owner can read.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

use crate::{Error, ErrorKind, Result};

/// What the client keeps for one MCP server (its canonical resource URI): the
/// authorization server it used, the client identity registered there, and the tokens.
///
/// Everything is tied to `issuer`: when the server's metadata names another authorization
/// server, the client registers anew and never sends these to it.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Credentials {
    /// The authorization server's issuer identifier.
    pub issuer: String,
    /// The client identifier at that server.
    pub client_id: String,
    /// The client secret, for confidential clients.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// How the client authenticates at the token endpoint (`client_secret_basic`,
    /// `client_secret_post`, `none`, `private_key_jwt`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint_auth_method: Option<String>,
    /// How the client identity came about: `dynamic` (registered by this client, may be
    /// registered again), `metadata-document` or `pre-registered`.
    #[serde(default)]
    pub registration: String,
    /// The redirect URI registered with a dynamic registration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redirect_uri: Option<String>,
    /// The token endpoint, to refresh without discovering again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint: Option<String>,
    /// The access token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_token: Option<String>,
    /// `Bearer` or `DPoP`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_type: Option<String>,
    /// The refresh token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// When the access token expires, in seconds since the Unix epoch (absolute, so that a
    /// token read back from a store still refreshes in time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// The scope the tokens were granted for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// The private JWK of the DPoP key the tokens are bound to (RFC 9449): a DPoP-bound
    /// token is only usable with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dpop_key: Option<serde_json::Value>,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let secret = |s: &Option<String>| s.as_ref().map(|_| "<redacted>");
        f.debug_struct("Credentials")
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .field("client_secret", &secret(&self.client_secret))
            .field(
                "token_endpoint_auth_method",
                &self.token_endpoint_auth_method,
            )
            .field("registration", &self.registration)
            .field("access_token", &secret(&self.access_token))
            .field("token_type", &self.token_type)
            .field("refresh_token", &secret(&self.refresh_token))
            .field("expires_at", &self.expires_at)
            .field("scope", &self.scope)
            .field("dpop_key", &self.dpop_key.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

/// Keeps [`Credentials`] per MCP server, under the server's canonical resource URI.
pub trait CredentialStore: Send + Sync + 'static {
    /// The credentials kept for `resource`.
    fn load<'a>(&'a self, resource: &'a str) -> BoxFuture<'a, Result<Option<Credentials>>>;
    /// Keeps `credentials` for `resource`, replacing what was there.
    fn save<'a>(
        &'a self,
        resource: &'a str,
        credentials: &'a Credentials,
    ) -> BoxFuture<'a, Result<()>>;
    /// Forgets what is kept for `resource`.
    fn remove<'a>(&'a self, resource: &'a str) -> BoxFuture<'a, Result<()>>;
}

/// Credentials in memory, for the life of the process (the default).
#[derive(Debug, Default)]
pub struct MemoryStore {
    entries: Mutex<HashMap<String, Credentials>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        MemoryStore::default()
    }
}

impl CredentialStore for MemoryStore {
    fn load<'a>(&'a self, resource: &'a str) -> BoxFuture<'a, Result<Option<Credentials>>> {
        let found = self
            .entries
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(resource)
            .cloned();
        Box::pin(std::future::ready(Ok(found)))
    }

    fn save<'a>(
        &'a self,
        resource: &'a str,
        credentials: &'a Credentials,
    ) -> BoxFuture<'a, Result<()>> {
        self.entries
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(resource.to_owned(), credentials.clone());
        Box::pin(std::future::ready(Ok(())))
    }

    fn remove<'a>(&'a self, resource: &'a str) -> BoxFuture<'a, Result<()>> {
        self.entries
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(resource);
        Box::pin(std::future::ready(Ok(())))
    }
}

/// The largest credentials file read (a larger one is an error, not a hang).
pub const MAX_STORE_FILE_SIZE: u64 = 4 * 1024 * 1024;

/// Credentials in one JSON file, readable and writable by its owner only (mode `0600` on
/// Unix), replaced atomically on every change. Several processes may share it; the last
/// write wins.
#[derive(Debug)]
pub struct FileStore {
    path: PathBuf,
    lock: tokio::sync::Mutex<()>,
}

#[derive(Default, Serialize, Deserialize)]
struct FileContents {
    #[serde(default)]
    servers: BTreeMap<String, Credentials>,
}

fn store_error(
    path: &Path,
    what: &str,
    e: impl Into<Box<dyn std::error::Error + Send + Sync>>,
) -> Error {
    Error::new(
        ErrorKind::Io,
        format!("{what} the credentials file {}", path.display()),
    )
    .with_source(e)
}

impl FileStore {
    /// A store in the file at `path` (created on the first save, with its directory).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        FileStore {
            path: path.into(),
            lock: tokio::sync::Mutex::new(()),
        }
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every resource with credentials in the file.
    pub async fn resources(&self) -> Result<Vec<String>> {
        let _guard = self.lock.lock().await;
        Ok(self.read()?.servers.into_keys().collect())
    }

    fn read(&self) -> Result<FileContents> {
        use std::io::Read as _;
        let file = match std::fs::File::open(&self.path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(FileContents::default());
            }
            Err(e) => return Err(store_error(&self.path, "cannot open", e)),
        };
        let mut text = Vec::new();
        file.take(MAX_STORE_FILE_SIZE + 1)
            .read_to_end(&mut text)
            .map_err(|e| store_error(&self.path, "cannot read", e))?;
        if text.len() as u64 > MAX_STORE_FILE_SIZE {
            return Err(Error::new(
                ErrorKind::Io,
                format!(
                    "the credentials file {} is larger than {MAX_STORE_FILE_SIZE} bytes",
                    self.path.display()
                ),
            ));
        }
        if text.iter().all(u8::is_ascii_whitespace) {
            return Ok(FileContents::default());
        }
        serde_json::from_slice(&text).map_err(|e| store_error(&self.path, "cannot parse", e))
    }

    fn write(&self, contents: &FileContents) -> Result<()> {
        use std::io::Write as _;
        let text = serde_json::to_vec_pretty(contents)
            .map_err(|e| store_error(&self.path, "cannot encode", e))?;
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| store_error(&self.path, "cannot create the directory of", e))?;
        }
        let name = self
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "credentials".to_owned());
        let temp = self
            .path
            .with_file_name(format!(".{name}.{}.tmp", std::process::id()));
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt as _;
            options.mode(0o600);
        }
        let mut file = options
            .open(&temp)
            .map_err(|e| store_error(&self.path, "cannot write", e))?;
        #[cfg(unix)]
        {
            // The mode above only applies to a new file.
            use std::os::unix::fs::PermissionsExt as _;
            file.set_permissions(std::fs::Permissions::from_mode(0o600))
                .map_err(|e| store_error(&self.path, "cannot protect", e))?;
        }
        file.write_all(&text)
            .and_then(|()| file.sync_all())
            .map_err(|e| store_error(&self.path, "cannot write", e))?;
        std::fs::rename(&temp, &self.path).map_err(|e| store_error(&self.path, "cannot replace", e))
    }
}

impl CredentialStore for FileStore {
    fn load<'a>(&'a self, resource: &'a str) -> BoxFuture<'a, Result<Option<Credentials>>> {
        Box::pin(async move {
            let _guard = self.lock.lock().await;
            Ok(self.read()?.servers.remove(resource))
        })
    }

    fn save<'a>(
        &'a self,
        resource: &'a str,
        credentials: &'a Credentials,
    ) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            let _guard = self.lock.lock().await;
            let mut contents = self.read()?;
            contents
                .servers
                .insert(resource.to_owned(), credentials.clone());
            self.write(&contents)
        })
    }

    fn remove<'a>(&'a self, resource: &'a str) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            let _guard = self.lock.lock().await;
            let mut contents = self.read()?;
            if contents.servers.remove(resource).is_some() {
                self.write(&contents)?;
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Credentials {
        Credentials {
            issuer: "https://as.example.com".into(),
            client_id: "c".into(),
            access_token: Some("secret-token".into()),
            expires_at: Some(2_000_000_000),
            ..Credentials::default()
        }
    }

    #[tokio::test]
    async fn the_file_store_keeps_credentials_private_and_round_trips_them() {
        let dir = std::env::temp_dir().join(format!("arctern-store-{}", std::process::id()));
        let path = dir.join("nested").join("credentials.json");
        let store = FileStore::new(&path);
        assert!(
            store
                .load("https://mcp.example.com/mcp")
                .await
                .unwrap()
                .is_none()
        );
        store
            .save("https://mcp.example.com/mcp", &sample())
            .await
            .unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let back = FileStore::new(&path)
            .load("https://mcp.example.com/mcp")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(back, sample());
        assert!(!format!("{back:?}").contains("secret-token"));
        store.remove("https://mcp.example.com/mcp").await.unwrap();
        assert!(store.resources().await.unwrap().is_empty());
        std::fs::write(&path, "{ not json").unwrap();
        assert!(store.load("x").await.is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
