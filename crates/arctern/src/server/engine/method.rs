//! The one method table: every method the server answers, and the eras it belongs to.

use arctern_types::capabilities::ServerCapabilities;
use arctern_types::methods;

use crate::Era;

/// A method the server answers, resolved once per request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Method {
    // The 2026-07-28 wire only.
    Discover,
    Listen,
    // Legacy sessions only.
    Initialize,
    Ping,
    SetLevel,
    Subscribe,
    Unsubscribe,
    // Both eras: the handler's methods.
    ToolsList,
    ToolsCall,
    PromptsList,
    PromptsGet,
    ResourcesList,
    ResourceTemplatesList,
    ResourcesRead,
    Complete,
    // The 2026-07-28 wire, with the tasks extension.
    TasksGet,
    TasksUpdate,
    TasksCancel,
}

const MODERN: u8 = 1;
const LEGACY: u8 = 2;
const BOTH: u8 = MODERN | LEGACY;

/// Every method: its name, the eras it belongs to.
const TABLE: [(Method, &str, u8); 18] = [
    (Method::Discover, methods::SERVER_DISCOVER, MODERN),
    (Method::Listen, methods::SUBSCRIPTIONS_LISTEN, MODERN),
    (Method::Initialize, methods::legacy::INITIALIZE, LEGACY),
    (Method::Ping, methods::legacy::PING, LEGACY),
    (Method::SetLevel, methods::legacy::LOGGING_SET_LEVEL, LEGACY),
    (
        Method::Subscribe,
        methods::legacy::RESOURCES_SUBSCRIBE,
        LEGACY,
    ),
    (
        Method::Unsubscribe,
        methods::legacy::RESOURCES_UNSUBSCRIBE,
        LEGACY,
    ),
    (Method::ToolsList, methods::TOOLS_LIST, BOTH),
    (Method::ToolsCall, methods::TOOLS_CALL, BOTH),
    (Method::PromptsList, methods::PROMPTS_LIST, BOTH),
    (Method::PromptsGet, methods::PROMPTS_GET, BOTH),
    (Method::ResourcesList, methods::RESOURCES_LIST, BOTH),
    (
        Method::ResourceTemplatesList,
        methods::RESOURCES_TEMPLATES_LIST,
        BOTH,
    ),
    (Method::ResourcesRead, methods::RESOURCES_READ, BOTH),
    (Method::Complete, methods::COMPLETION_COMPLETE, BOTH),
    (Method::TasksGet, methods::TASKS_GET, MODERN),
    (Method::TasksUpdate, methods::TASKS_UPDATE, MODERN),
    (Method::TasksCancel, methods::TASKS_CANCEL, MODERN),
];

impl Method {
    /// The method called `name` on `era`, if that era has it.
    pub(crate) fn parse(name: &str, era: Era) -> Option<Method> {
        let mask = match era {
            Era::Modern => MODERN,
            Era::Legacy => LEGACY,
        };
        TABLE
            .iter()
            .find(|(_, n, eras)| *n == name && eras & mask != 0)
            .map(|(m, _, _)| *m)
    }

    pub(crate) fn name(self) -> &'static str {
        TABLE[self as usize].1
    }

    /// Whether the server's declared capabilities offer this method.
    pub(crate) fn allowed(self, caps: &ServerCapabilities) -> bool {
        match self {
            Method::Discover | Method::Initialize | Method::Ping => true,
            Method::Listen => super::super::subscriptions::listen_supported(caps),
            Method::SetLevel => caps.logging.is_some(),
            Method::ToolsList | Method::ToolsCall => caps.tools.is_some(),
            Method::PromptsList | Method::PromptsGet => caps.prompts.is_some(),
            Method::ResourcesList | Method::ResourceTemplatesList | Method::ResourcesRead => {
                caps.resources.is_some()
            }
            // Legacy subscriptions need the capability that announces them.
            Method::Subscribe | Method::Unsubscribe => {
                caps.resources.as_ref().and_then(|r| r.subscribe) == Some(true)
            }
            Method::Complete => caps.completions.is_some(),
            Method::TasksGet | Method::TasksUpdate | Method::TasksCancel => caps
                .extensions
                .as_ref()
                .is_some_and(|e| e.contains_key(arctern_types::tasks::EXTENSION_ID)),
        }
    }

    /// Whether the request may produce request-scoped notifications (or, on a legacy
    /// session, the server's own requests).
    pub(crate) fn may_notify(self) -> bool {
        matches!(
            self,
            Method::ToolsCall | Method::PromptsGet | Method::ResourcesRead | Method::Complete
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_in_declaration_order() {
        for (i, (method, name, _)) in TABLE.iter().enumerate() {
            assert_eq!(*method as usize, i, "{name}");
            assert_eq!(method.name(), *name);
        }
    }

    #[test]
    fn each_era_has_its_own_methods() {
        assert_eq!(
            Method::parse("server/discover", Era::Modern),
            Some(Method::Discover)
        );
        assert_eq!(Method::parse("server/discover", Era::Legacy), None);
        assert_eq!(Method::parse("initialize", Era::Modern), None);
        assert_eq!(
            Method::parse("initialize", Era::Legacy),
            Some(Method::Initialize)
        );
        assert_eq!(
            Method::parse("tools/call", Era::Legacy),
            Some(Method::ToolsCall)
        );
        assert_eq!(
            Method::parse("tools/call", Era::Modern),
            Some(Method::ToolsCall)
        );
        assert_eq!(Method::parse("nope", Era::Modern), None);
    }
}
