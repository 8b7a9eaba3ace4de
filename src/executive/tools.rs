//! Tools the model may call inside the executive's tool loop.
//!
//! A tool's arguments are a Rust type: its JSON schema (sent to the model) is
//! derived with `schemars`, and the model's arguments are checked by
//! deserializing into that type *before* the tool runs. A bad call becomes an
//! error message for the model, naming the argument and what was expected —
//! never a crash. Structured final answers (the initiative decision, the end
//! of a garden cycle) are [`FinalTool`]s: calling one with valid arguments
//! ends the turn with a typed value, so nothing is ever parsed out of prose.

use std::any::TypeId;
use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, PoisonError};

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::wire::ToolSpec;

#[async_trait]
pub trait Tool: Send + Sync {
    fn spec(&self) -> ToolSpec;

    /// Runs the tool. `Ok` is the result text for the model; `Err` is what
    /// the model is told instead (bad arguments, a failed lookup).
    async fn call(&self, args: &Value) -> Result<String, ToolError>;
}

/// What a tool tells the model when it cannot do what was asked: bad
/// arguments, a failed lookup, a refusal. The model reads it back (sent with
/// `is_error`) and may try again; nothing in the crate branches on it, so it
/// is the text alone, made from the typed error that caused it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ToolError(pub String);

impl From<String> for ToolError {
    fn from(text: String) -> Self {
        ToolError(text)
    }
}

impl From<&str> for ToolError {
    fn from(text: &str) -> Self {
        ToolError(text.to_string())
    }
}

impl From<ArgsError> for ToolError {
    fn from(e: ArgsError) -> Self {
        ToolError(e.to_string())
    }
}

/// Arguments the model sent that a tool cannot take; the text goes back to the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArgsError {
    /// A string where an object belongs; `raw` is its (cut, described) start.
    #[error(
        "the arguments were not valid JSON ({raw}); send a JSON object matching the tool's schema"
    )]
    NotJson { raw: String },
    /// The whole object is wrong (a missing or unknown field).
    #[error("invalid arguments: {reason}")]
    Invalid { reason: String },
    /// One argument is wrong; `path` names it.
    #[error("invalid argument `{path}`: {reason}")]
    InvalidAt { path: String, reason: String },
    /// They parse, but the final tool's own check refused them; the text is that check's.
    #[error("{0}")]
    Refused(String),
}

/// A tool with typed arguments; wrap it in [`Typed`] to use it as a [`Tool`].
#[async_trait]
pub trait TypedTool: Send + Sync + 'static {
    type Args: DeserializeOwned + JsonSchema + Send;

    fn name(&self) -> &'static str;
    fn description(&self) -> String;
    /// `Err` is text for the model, as for [`Tool::call`].
    async fn run(&self, args: Self::Args) -> Result<String, ToolError>;
}

pub(crate) struct Typed<T>(pub T);

#[async_trait]
impl<T: TypedTool> Tool for Typed<T> {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.0.name().to_string(),
            description: self.0.description(),
            schema: schema_of::<T::Args>(),
        }
    }

    async fn call(&self, args: &Value) -> Result<String, ToolError> {
        let args = parse_args::<T::Args>(args)?;
        self.0.run(args).await
    }
}

pub fn typed<T: TypedTool>(tool: T) -> Arc<dyn Tool> {
    Arc::new(Typed(tool))
}

/// The JSON schema of `A`, as providers expect it (an object schema, no meta
/// keys). Made once per type: tools are built anew for every turn (they hold
/// its server), and walking each type with schemars was 6 % of an answer's
/// instructions.
pub(crate) fn schema_of<A: JsonSchema + 'static>() -> Value {
    static MADE: LazyLock<Mutex<HashMap<TypeId, Value>>> = LazyLock::new(Default::default);
    let mut made = MADE.lock().unwrap_or_else(PoisonError::into_inner);
    made.entry(TypeId::of::<A>())
        .or_insert_with(make_schema::<A>)
        .clone()
}

fn make_schema<A: JsonSchema>() -> Value {
    let mut schema = serde_json::to_value(schemars::schema_for!(A)).unwrap_or_default();
    if let Some(map) = schema.as_object_mut() {
        map.remove("$schema");
        map.remove("title");
        map.entry("type")
            .or_insert_with(|| Value::String("object".into()));
        map.entry("properties")
            .or_insert_with(|| Value::Object(Default::default()));
    }
    schema
}

/// Checks the model's arguments against `A`, explaining what is wrong.
pub fn parse_args<A: DeserializeOwned>(args: &Value) -> Result<A, ArgsError> {
    if let Value::String(raw) = args {
        return Err(ArgsError::NotJson {
            raw: crate::settings::validate::describe(&Value::String(
                raw.chars().take(60).collect(),
            )),
        });
    }
    serde_path_to_error::deserialize::<_, A>(args).map_err(|e| {
        let path = e.path().to_string();
        let reason = e.inner().to_string();
        if path == "." {
            ArgsError::Invalid { reason }
        } else {
            ArgsError::InvalidAt { path, reason }
        }
    })
}

type Validator = Arc<dyn Fn(&Value) -> Result<(), ArgsError> + Send + Sync>;

/// A tool that ends the turn with a structured answer.
#[derive(Clone)]
pub struct FinalTool {
    pub spec: ToolSpec,
    validate: Validator,
}

impl FinalTool {
    /// A final tool whose arguments must deserialize into `A`.
    pub fn of<A: DeserializeOwned + JsonSchema + 'static>(name: &str, description: &str) -> Self {
        Self {
            spec: ToolSpec {
                name: name.into(),
                description: description.into(),
                schema: schema_of::<A>(),
            },
            validate: Arc::new(|v| parse_args::<A>(v).map(|_| ())),
        }
    }

    /// A final tool whose arguments must deserialize into `A` and pass `extra`
    /// (e.g. "the channel is in the pool"); either failure goes back to the model.
    /// `extra`'s refusal reaches the model as its text ([`ArgsError::Refused`]).
    pub(crate) fn checked<A: DeserializeOwned + JsonSchema + 'static, E: std::fmt::Display>(
        name: &str,
        description: &str,
        extra: impl Fn(&A) -> Result<(), E> + Send + Sync + 'static,
    ) -> Self {
        Self {
            spec: ToolSpec {
                name: name.into(),
                description: description.into(),
                schema: schema_of::<A>(),
            },
            validate: Arc::new(move |v| {
                extra(&parse_args::<A>(v)?).map_err(|e| ArgsError::Refused(e.to_string()))
            }),
        }
    }

    pub(crate) fn name(&self) -> &str {
        &self.spec.name
    }

    pub(crate) fn check(&self, args: &Value) -> Result<(), ArgsError> {
        (self.validate)(args)
    }
}

impl std::fmt::Debug for FinalTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FinalTool")
            .field("name", &self.spec.name)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Args {
        /// A city.
        city: String,
        days: Option<u8>,
    }

    #[test]
    fn schemas_are_object_schemas_and_bad_arguments_are_explained() {
        let schema = schema_of::<Args>();
        assert_eq!(schema["type"], "object");
        assert!(schema["properties"]["city"].is_object());
        assert!(schema.get("$schema").is_none());

        assert!(parse_args::<Args>(&json!({"city": "Oslo"})).is_ok());
        let e = parse_args::<Args>(&json!({"city": 5}))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("`city`"), "{e}");
        let e = parse_args::<Args>(&json!({"days": 2}))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("missing field `city`"), "{e}");
        let e = parse_args::<Args>(&json!({"city": "x", "extra": 1}))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("unknown field `extra`"), "{e}");
        let e = parse_args::<Args>(&json!("{oops"))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("not valid JSON"), "{e}");
    }
}
