//! The interactive side of a question: a terminal form built from `requestedSchema`, and the
//! consent screen of a URL question. Blocking (run it off the async runtime); draws on
//! stderr so that stdout keeps only results.

use std::io::Write;

use arctern::types::elicitation::{
    ElicitContent, ElicitRequestFormParams, ElicitRequestUrlParams, ElicitValue,
    PrimitiveSchemaDefinition,
};
use inquire::error::CustomUserError;
use inquire::list_option::ListOption;
use inquire::validator::Validation;
use inquire::{Confirm, InquireError, MultiSelect, Select, Text};

use crate::fields::{self, Choice, Kind};

/// What the user did with a question.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// Answered the form (or consented to the URL: no content).
    Accept(Option<ElicitContent>),
    /// Declined.
    Decline,
    /// Dismissed the question (Esc, or the Cancel choice).
    Cancel,
    /// Pressed Ctrl-C: the whole command stops.
    Interrupted,
}

/// Who asks, for the header of a question.
#[derive(Debug, Clone)]
pub struct Asker {
    /// The server's name (or title).
    pub server: String,
    /// The request the question belongs to: `tool provision`, `prompt briefing`...
    pub request: String,
    /// The question's key.
    pub key: String,
    /// Whether the question was asked before in this command (its answer was not accepted).
    pub again: bool,
}

/// Bold, when stderr takes styles (a terminal, and no `NO_COLOR`).
pub fn bold(s: &str) -> String {
    if crate::output::stderr_styled() {
        format!("\x1b[1m{s}\x1b[0m")
    } else {
        s.to_owned()
    }
}

fn header(asker: &Asker, message: &str) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err);
    let _ = writeln!(
        err,
        "{} asks{} ({}, question {:?}):",
        bold(&asker.server),
        if asker.again { " again" } else { "" },
        asker.request,
        asker.key
    );
    for line in message.lines() {
        let _ = writeln!(err, "  {}", bold(line));
    }
}

/// How an inquire error ends the question.
fn ended(e: InquireError) -> Result<Reply, String> {
    match e {
        InquireError::OperationCanceled => Ok(Reply::Cancel),
        InquireError::OperationInterrupted => Ok(Reply::Interrupted),
        other => Err(other.to_string()),
    }
}

/// The first choice of every question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Respond {
    Answer,
    Decline,
    Cancel,
}

impl std::fmt::Display for Respond {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Respond::Answer => "Answer",
            Respond::Decline => "Decline",
            Respond::Cancel => "Cancel",
        })
    }
}

/// Asks a form question: answer (then each field, in the server's order), decline or
/// cancel. Esc in any field cancels the question; Ctrl-C interrupts the command.
pub fn ask_form(asker: &Asker, params: &ElicitRequestFormParams) -> Result<Reply, String> {
    header(asker, &params.message);
    let choice = Select::new(
        "Your response:",
        vec![Respond::Answer, Respond::Decline, Respond::Cancel],
    )
    .with_help_message("↑↓ to move, enter to choose; esc cancels the question")
    .without_filtering()
    .prompt();
    match choice {
        Ok(Respond::Answer) => {}
        Ok(Respond::Decline) => return Ok(Reply::Decline),
        Ok(Respond::Cancel) => return Ok(Reply::Cancel),
        Err(e) => return ended(e),
    }
    let schema = &params.requested_schema;
    let mut content = ElicitContent::new();
    for (name, field) in schema.properties.iter() {
        match ask_field(name, field, schema.is_required(name)) {
            Ok(Some(value)) => {
                content.insert(name.to_owned(), value);
            }
            Ok(None) => {}
            Err(e) => return ended(e),
        }
    }
    Ok(Reply::Accept(Some(content)))
}

type Checked = Result<Validation, CustomUserError>;

fn invalid(message: String) -> Checked {
    Ok(Validation::Invalid(message.into()))
}

/// Asks one field; `None` leaves an optional field out.
fn ask_field(
    name: &str,
    field: &PrimitiveSchemaDefinition,
    required: bool,
) -> Result<Option<ElicitValue>, InquireError> {
    let (title, description) = fields::labels(field);
    let kind = fields::kind(field);
    // A field with a default is filled in either way, so it is not marked optional.
    let optional = !required && fields::default_value(&kind).is_none();
    let label = format!(
        "{}{}:",
        title.unwrap_or(name),
        if optional { " (optional)" } else { "" }
    );
    let help = [description.map(str::to_owned), hint(&kind)]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" · ");
    match &kind {
        Kind::Text(s) => {
            let default = s.default.clone();
            let s = (*s).clone();
            let validator = move |input: &str| -> Checked {
                if input.is_empty() {
                    return if required {
                        invalid("A value is required.".into())
                    } else {
                        Ok(Validation::Valid)
                    };
                }
                match fields::check_text(&s, input) {
                    Ok(()) => Ok(Validation::Valid),
                    Err(e) => invalid(e),
                }
            };
            let mut prompt = Text::new(&label).with_validator(validator);
            if !help.is_empty() {
                prompt = prompt.with_help_message(&help);
            }
            if let Some(d) = &default {
                prompt = prompt.with_default(d);
            }
            let text = prompt.prompt()?;
            Ok((!text.is_empty()).then_some(ElicitValue::String(text)))
        }
        Kind::Number(n) => {
            let n = (*n).clone();
            let check = n.clone();
            let validator = move |input: &str| -> Checked {
                if input.trim().is_empty() {
                    return if required {
                        invalid("A value is required.".into())
                    } else {
                        Ok(Validation::Valid)
                    };
                }
                match fields::parse_number(&check, input) {
                    Ok(_) => Ok(Validation::Valid),
                    Err(e) => invalid(e),
                }
            };
            let default = n.default.map(|d| {
                fields::default_value(&Kind::Number(&n)).map_or(d.to_string(), |v| v.to_string())
            });
            let mut prompt = Text::new(&label).with_validator(validator);
            if !help.is_empty() {
                prompt = prompt.with_help_message(&help);
            }
            if let Some(d) = &default {
                prompt = prompt.with_default(d);
            }
            let text = prompt.prompt()?;
            if text.trim().is_empty() {
                return Ok(None);
            }
            // Validated above.
            Ok(fields::parse_number(&n, &text)
                .ok()
                .map(ElicitValue::Number))
        }
        Kind::Boolean(b) => {
            if required || b.default.is_some() {
                let mut prompt = Confirm::new(&label);
                // Without a default, Enter alone is refused: a yes/no the server needs is
                // typed, never assumed.
                if let Some(d) = b.default {
                    prompt = prompt.with_default(d);
                }
                if !help.is_empty() {
                    prompt = prompt.with_help_message(&help);
                }
                let value = prompt.prompt()?;
                return Ok(Some(ElicitValue::Boolean(value)));
            }
            let options = vec!["Yes", "No", "(leave empty)"];
            let help = with_keys(&help, "↑↓ to move, enter to choose");
            let picked = Select::new(&label, options)
                .with_help_message(&help)
                .without_filtering()
                .prompt()?;
            Ok(match picked {
                "Yes" => Some(ElicitValue::Boolean(true)),
                "No" => Some(ElicitValue::Boolean(false)),
                _ => None,
            })
        }
        Kind::Single { options, default } => {
            let mut list = options.clone();
            if !required {
                list.push(Choice {
                    value: String::new(),
                    title: "(leave empty)".into(),
                });
            }
            let start = default
                .and_then(|d| list.iter().position(|c| c.value == d))
                .unwrap_or(0);
            let help = with_keys(&help, "↑↓ to move, type to filter, enter to choose");
            let picked = Select::new(&label, list)
                .with_help_message(&help)
                .with_starting_cursor(start)
                .raw_prompt()?;
            if picked.index == options.len() {
                return Ok(None);
            }
            Ok(Some(ElicitValue::String(picked.value.value)))
        }
        Kind::Multi {
            options,
            default,
            min,
            max,
        } => {
            let (min, max) = (*min, *max);
            let preselected: Vec<usize> = default
                .map(|d| {
                    options
                        .iter()
                        .enumerate()
                        .filter(|(_, c)| d.contains(&c.value))
                        .map(|(i, _)| i)
                        .collect()
                })
                .unwrap_or_default();
            let validator = move |picked: &[ListOption<&Choice>]| -> Checked {
                match fields::check_count(picked.len(), min, max) {
                    Ok(()) => Ok(Validation::Valid),
                    Err(e) => invalid(e),
                }
            };
            let help = with_keys(&help, "↑↓ to move, space to select, enter to submit");
            let picked = MultiSelect::new(&label, options.clone())
                .with_help_message(&help)
                .with_default(&preselected)
                .with_validator(validator)
                .prompt()?;
            if picked.is_empty() && !required {
                return Ok(None);
            }
            Ok(Some(ElicitValue::StringArray(
                picked.into_iter().map(|c| c.value).collect(),
            )))
        }
    }
}

/// A help line: the field's own help, then the keys.
fn with_keys(help: &str, keys: &str) -> String {
    if help.is_empty() {
        keys.to_owned()
    } else {
        format!("{help} · {keys}")
    }
}

/// What the prompt itself does not show about a field: formats, bounds, counts.
fn hint(kind: &Kind<'_>) -> Option<String> {
    match kind {
        Kind::Text(s) if s.format.is_none() && s.min_length.is_none() && s.max_length.is_none() => {
            None
        }
        Kind::Text(_) | Kind::Number(_) => Some(fields::describe(kind)),
        Kind::Boolean(_) | Kind::Single { .. } => None,
        Kind::Multi { min, max, .. } => match (min, max) {
            (None, None) => None,
            (Some(a), Some(b)) => Some(format!("choose {a} to {b}")),
            (Some(a), None) => Some(format!("choose at least {a}")),
            (None, Some(b)) => Some(format!("choose at most {b}")),
        },
    }
}

/// The parts of a URL a person should check before opening it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlParts {
    /// `https`, `http`, ...
    pub scheme: String,
    /// The host (the domain), without user info or port.
    pub host: Option<String>,
    /// Whether the URL carries user info (`user@host`), a common disguise.
    pub has_userinfo: bool,
}

/// Splits a URL into what the consent screen shows. `None` when it is not a URI.
pub fn url_parts(url: &str) -> Option<UrlParts> {
    let uri = iri_string::types::UriStr::new(url).ok()?;
    let authority = uri.authority_components();
    Some(UrlParts {
        scheme: uri.scheme_str().to_ascii_lowercase(),
        host: authority.as_ref().map(|a| a.host().to_ascii_lowercase()),
        has_userinfo: authority.as_ref().and_then(|a| a.userinfo()).is_some(),
    })
}

/// The consent choices of a URL question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Consent {
    Open,
    Show,
    Decline,
    Cancel,
}

impl std::fmt::Display for Consent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Consent::Open => "Open it in the browser",
            Consent::Show => "I will open it myself (just print it)",
            Consent::Decline => "Decline",
            Consent::Cancel => "Cancel",
        })
    }
}

/// Whether some label of `host` is Punycode (an internationalized name in ASCII form).
fn is_punycode(host: &str) -> bool {
    host.split('.').any(|label| {
        label
            .get(..4)
            .is_some_and(|p| p.eq_ignore_ascii_case("xn--"))
    })
}

/// Asks consent to open a URL. Nothing is fetched or opened before the user agrees; only
/// `http` and `https` URLs are offered to the browser.
pub fn ask_url(asker: &Asker, params: &ElicitRequestUrlParams) -> Result<Reply, String> {
    header(asker, &params.message);
    let (lines, web) = url_lines(&params.url, true);
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "  The server wants you to open this page:");
    for l in &lines {
        let _ = writeln!(err, "    {l}");
    }
    drop(err);
    let mut choices = Vec::new();
    if web {
        choices.push(Consent::Open);
    }
    choices.extend([Consent::Show, Consent::Decline, Consent::Cancel]);
    let picked = Select::new("Open the page?", choices)
        .with_help_message("nothing is opened unless you choose to")
        .without_filtering()
        .prompt();
    match picked {
        Ok(Consent::Open) => {
            if let Err(why) = open_in_browser(&params.url) {
                eprintln!(
                    "Could not open a browser ({why}); open the URL yourself: {}",
                    params.url
                );
            }
            Ok(Reply::Accept(None))
        }
        Ok(Consent::Show) => {
            eprintln!("Open this URL to continue: {}", params.url);
            Ok(Reply::Accept(None))
        }
        Ok(Consent::Decline) => Ok(Reply::Decline),
        Ok(Consent::Cancel) => Ok(Reply::Cancel),
        Err(e) => ended(e),
    }
}

/// What a person should see of a URL before opening it: the URL, its domain, and a warning
/// for each disguise (a user name before the domain, a Punycode domain, plain http, not a
/// URL at all); and whether it is a web page a browser may be given (`http` or `https`).
/// The URL is shown on one line, control characters made visible; `styled` puts the domain
/// in bold where stderr takes styles.
pub fn url_lines(url: &str, styled: bool) -> (Vec<String>, bool) {
    let mut lines = vec![format!("URL:    {}", crate::sanitize::line(url))];
    let parts = crate::sanitize::is_clean_line(url)
        .then(|| url_parts(url))
        .flatten();
    let Some(p) = parts else {
        lines.push("Careful: this is not a valid URL.".to_owned());
        return (lines, false);
    };
    let host = p.host.as_deref().unwrap_or("(none)");
    lines.push(format!(
        "Domain: {}",
        if styled { bold(host) } else { host.to_owned() }
    ));
    if p.has_userinfo {
        lines.push(
            "Careful: the URL has a user name before the domain; the page is on the domain \
             above."
                .to_owned(),
        );
    }
    if p.host.as_deref().is_some_and(is_punycode) {
        lines.push(
            "Careful: the domain is written in Punycode (xn--): it may look like another \
             domain once shown in its own letters."
                .to_owned(),
        );
    }
    if p.scheme == "http" {
        lines.push(
            "Careful: plain http: anyone on the network can read or change the page.".to_owned(),
        );
    }
    (lines, p.scheme == "https" || p.scheme == "http")
}

/// Asks consent to open a web page the server needs the user to visit (a `-32042` error's
/// elicitation); opens it only on yes. `Err` when the terminal failed; Ctrl-C or Esc is a no.
pub fn ask_open(url: &str) -> Result<bool, String> {
    let picked = Select::new("Open the page?", vec![Consent::Open, Consent::Show])
        .with_help_message("nothing is opened unless you choose to")
        .without_filtering()
        .prompt();
    match picked {
        Ok(Consent::Open) => {
            if let Err(why) = open_in_browser(url) {
                eprintln!("Could not open a browser ({why}); open the URL yourself: {url}");
            }
            Ok(true)
        }
        Ok(_) | Err(InquireError::OperationCanceled | InquireError::OperationInterrupted) => {
            Ok(false)
        }
        Err(e) => Err(e.to_string()),
    }
}

/// Hands the URL to the program named by `$BROWSER` (run with the URL as its argument),
/// else to the platform's opener.
pub fn open_in_browser(url: &str) -> Result<(), String> {
    let browser = std::env::var_os("BROWSER").filter(|b| !b.is_empty());
    let mut command = if let Some(browser) = browser {
        std::process::Command::new(browser)
    } else if cfg!(target_os = "macos") {
        std::process::Command::new("open")
    } else if cfg!(windows) {
        let mut c = std::process::Command::new("rundll32");
        c.arg("url.dll,FileProtocolHandler");
        c
    } else {
        std::process::Command::new("xdg-open")
    };
    command
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    // Its own process group: the browser outlives this command, and neither Ctrl-C here nor
    // the terminal's hangup when this command exits (right after, for a -32042 page) reaches
    // it.
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    // Not waited for here: a browser may come back to this process (a loopback redirect)
    // before it exits. A thread reaps it.
    let mut child = command.spawn().map_err(|e| e.to_string())?;
    std::thread::spawn(move || {
        if let Ok(status) = child.wait()
            && !status.success()
        {
            tracing::debug!(%status, "the browser opener failed");
        }
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn punycode_domains_are_spotted() {
        assert!(is_punycode("xn--ggle-55da.com"));
        assert!(is_punycode("login.XN--80ak6aa92e.com"));
        assert!(!is_punycode("accounts.google.com"));
        assert!(!is_punycode("xn-.com"));
    }

    #[test]
    fn url_parts_show_the_real_domain() {
        let p = url_parts("https://accounts.example.com:8443/login?x=1").unwrap();
        assert_eq!(p.scheme, "https");
        assert_eq!(p.host.as_deref(), Some("accounts.example.com"));
        assert!(!p.has_userinfo);
        let p = url_parts("https://trusted.example@evil.example/pay").unwrap();
        assert_eq!(p.host.as_deref(), Some("evil.example"));
        assert!(p.has_userinfo);
        assert_eq!(url_parts("mailto:a@example.com").unwrap().host, None);
        assert!(url_parts("not a url").is_none());
    }
}
