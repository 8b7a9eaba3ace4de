//! The bounded tool loop: one "turn" of the executive.
//!
//! Each step is one model call. While steps and tool calls remain, the model
//! may call the turn's tools; every call's arguments are checked first, and a
//! bad call (unknown tool, invalid arguments, a tool error) goes back to the
//! model as an error result. On the last step, or once `max_calls` is spent,
//! the tools are withdrawn and the model must answer (forced to call the
//! final tool when the turn has one).
//!
//! A turn with a final tool ends only when that tool is called with valid
//! arguments. If the model stops without calling it, the continuation
//! message is sent once; a second stop ends the turn as incomplete, and that
//! is journaled.
//!
//! Each tool result is cut to `executive.promptLimits.toolResultChars`, and
//! every request to `totalChars` (see `bounds`), so no page, search result or
//! flood of steps makes a request unbounded.

use std::sync::Arc;

use serde_json::Value;

use super::bounds::{bound_request, cap_owned};
use super::stream::TextSink;
use super::tools::{FinalTool, Tool};
use super::wire::{
    ChatRequest, ChatResponse, Message, Part, Speaker, StopReason, TokenUsage, ToolChoice,
};
use super::{CallContext, ExecError, Executive};
use crate::ids::{ChannelId, GuildId, MessageId};
use crate::vocab::journal::{Entry, Kind};

pub struct Turn {
    pub ctx: CallContext,
    pub channel: Option<ChannelId>,
    /// What this turn is for, in a few words ("reply to message 123").
    pub label: String,
    pub system: String,
    pub messages: Vec<Message>,
    pub tools: Vec<Arc<dyn Tool>>,
    pub final_tool: Option<FinalTool>,
    pub max_steps: u32,
    pub max_calls: u32,
    /// Sent once if the model stops without calling the final tool; `None`
    /// uses a generic message naming the tool.
    pub continuation: Option<String>,
    /// Streams each step's text here as it is written (see `stream`): a
    /// step that ends in tool calls is followed by the next step's text.
    pub sink: Option<Arc<dyn TextSink>>,
    /// Offer tools on a step only while the role's budget covers that call
    /// and the one after it: a turn whose budget runs short answers without
    /// tools rather than being refused halfway (a reply: someone waits).
    pub tools_within_budget: bool,
    /// The message this turn answers, if any: the budget's journal line
    /// hangs on it, so `/ambient why` shows it.
    pub message: Option<MessageId>,
}

impl Turn {
    pub fn new(
        role: crate::settings::Role,
        guild: Option<GuildId>,
        label: impl Into<String>,
    ) -> Self {
        Self {
            ctx: CallContext::new(role, guild),
            channel: None,
            label: label.into(),
            system: String::new(),
            messages: Vec::new(),
            tools: Vec::new(),
            final_tool: None,
            max_steps: 6,
            max_calls: 8,
            continuation: None,
            sink: None,
            tools_within_budget: false,
            message: None,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum TurnOutcome {
    /// A free-text answer (turns without a final tool).
    Answer(String),
    /// The final tool's arguments, already checked against its type.
    Final(Value),
    /// The turn ended without an answer; the reason says why.
    Incomplete(String),
}

#[derive(Clone, Debug)]
pub struct TurnResult {
    pub outcome: Result<TurnOutcome, ExecError>,
    pub steps: u32,
    pub tool_calls: u32,
    pub tokens: TokenUsage,
    /// The usage record of the last model call (journal entries link to it).
    pub last_call: Option<i64>,
    /// How the last model call ended, as the provider reported it: an answer
    /// that ran into `max_tokens` says `MaxTokens`, a complete one `EndTurn`.
    /// `None` when no call answered.
    pub stop: Option<StopReason>,
    /// The whole conversation, for transcripts.
    pub messages: Vec<Message>,
}

/// The step cap ended the turn: what was missing, for the journal.
fn step_cap_reached(turn: &Turn) -> TurnOutcome {
    TurnOutcome::Incomplete(format!(
        "the step cap ({}) was reached without {}",
        turn.max_steps,
        turn.final_tool
            .as_ref()
            .map_or("an answer".to_string(), |f| format!(
                "a call to {}",
                f.name()
            ))
    ))
}

/// What a step without tool calls means for the turn.
enum Stopped {
    Done(TurnOutcome),
    /// Ask once more for the final tool, with this text.
    Nudge(String),
}

/// A model that stops without calling tools has answered (no final tool), or
/// is nudged once toward the final tool; stopping twice ends the turn.
fn stopped_without_tools(turn: &Turn, response: &ChatResponse, continued: &mut bool) -> Stopped {
    let Some(final_tool) = &turn.final_tool else {
        let text = response.text();
        return Stopped::Done(if text.trim().is_empty() {
            TurnOutcome::Incomplete("the model answered with nothing".into())
        } else {
            TurnOutcome::Answer(text)
        });
    };
    if *continued {
        return Stopped::Done(TurnOutcome::Incomplete(format!(
            "the model stopped twice without calling {}",
            final_tool.name()
        )));
    }
    *continued = true;
    Stopped::Nudge(turn.continuation.clone().unwrap_or_else(|| {
        format!(
            "You stopped without calling {0}. If you are done, call {0} now with your answer. \
             If you are not done, continue what you were doing.",
            final_tool.name()
        )
    }))
}

impl Executive {
    pub async fn run_turn(&self, turn: Turn) -> TurnResult {
        let role_settings = self.settings.global();
        let max_tokens = turn.ctx.role.settings(&role_settings).max_output_tokens;
        let mut messages = turn.messages.clone();
        let mut result = TurnResult {
            outcome: Ok(TurnOutcome::Incomplete(String::new())),
            steps: 0,
            tool_calls: 0,
            tokens: TokenUsage::default(),
            last_call: None,
            stop: None,
            messages: Vec::new(),
        };
        let mut continued = false;

        let outcome = loop {
            if result.steps >= turn.max_steps {
                break Ok(step_cap_reached(&turn));
            }
            result.steps += 1;
            let mut tools_allowed =
                result.steps < turn.max_steps && result.tool_calls < turn.max_calls;
            let mut request = self.step_request(&turn, &messages, tools_allowed, max_tokens);
            if tools_allowed
                && !turn.tools.is_empty()
                && turn.tools_within_budget
                && let Some(why) = self.tool_round_over_budget(&turn, &request)
            {
                self.journal_no_tools(&turn, result.steps, &why);
                tools_allowed = false;
                request = self.step_request(&turn, &messages, tools_allowed, max_tokens);
            }
            let completion = match self
                .complete_via(&turn.ctx, &request, turn.sink.as_deref())
                .await
            {
                Ok(c) => c,
                Err(e) => break Err(e),
            };
            result.last_call = Some(completion.usage_id);
            result.stop = Some(completion.response.stop);
            result.tokens.input += completion.response.usage.input;
            result.tokens.output += completion.response.usage.output;
            let response = completion.response;
            messages.push(Message::assistant(response.parts.clone()));

            let uses = response.tool_uses();
            if uses.is_empty() {
                match stopped_without_tools(&turn, &response, &mut continued) {
                    Stopped::Done(outcome) => break Ok(outcome),
                    Stopped::Nudge(text) => {
                        messages.push(Message::user(text));
                        continue;
                    }
                }
            }
            let (results, final_value) = self.run_tools(&turn, uses, &mut result.tool_calls).await;
            messages.push(Message {
                speaker: Speaker::User,
                parts: results,
            });
            if let Some(v) = final_value {
                break Ok(TurnOutcome::Final(v));
            }
        };

        if let Ok(TurnOutcome::Incomplete(reason)) = &outcome {
            self.journal_incomplete(&turn, &result, reason);
        }
        result.outcome = outcome;
        result.messages = messages;
        result
    }

    /// One step's tool calls, in order: their results for the model, and the
    /// final tool's value if it was called with valid arguments.
    async fn run_tools(
        &self,
        turn: &Turn,
        uses: Vec<(String, String, Value)>,
        calls: &mut u32,
    ) -> (Vec<Part>, Option<Value>) {
        let mut results = Vec::new();
        let mut final_value = None;
        for (id, name, input) in uses {
            let (content, is_error) = self
                .run_tool(turn, &name, &input, calls, &mut final_value)
                .await;
            results.push(Part::ToolResult {
                id,
                content,
                is_error,
            });
        }
        (results, final_value)
    }

    /// Why the role's budget cannot cover a tool round from here — this call
    /// and the one that reads its tool results, each estimated at `request`'s
    /// size plus the most it may answer — or `None` if it can.
    fn tool_round_over_budget(&self, turn: &Turn, request: &ChatRequest) -> Option<String> {
        let call = request.estimate_text_tokens() + u64::from(request.max_tokens);
        self.over_budget(&turn.ctx, 2 * call)
    }

    /// The budget left no room for tools on this step: the model answers without them.
    fn journal_no_tools(&self, turn: &Turn, step: u32, why: &str) {
        let summary = if step == 1 {
            format!(
                "{}: no tools offered, the budget is nearly spent",
                turn.label
            )
        } else {
            format!(
                "{}: tools withdrawn at step {step}, the budget is nearly spent",
                turn.label
            )
        };
        let mut e = Entry::new(Kind::Outcome, summary)
            .place(turn.ctx.guild, turn.channel)
            .reason(why.to_string())
            .data(serde_json::json!({"role": turn.ctx.role.as_str(), "step": step}));
        if let Some(id) = turn.message {
            e = e.message(id);
        }
        self.journal.record(e);
    }

    /// A turn that ended without its answer is journaled with why, so the
    /// operator sees the cost of a turn that gave nothing.
    fn journal_incomplete(&self, turn: &Turn, result: &TurnResult, reason: &str) {
        let mut e = Entry::new(Kind::Outcome, format!("{}: turn incomplete", turn.label))
            .place(turn.ctx.guild, turn.channel)
            .reason(reason.to_string())
            .data(serde_json::json!({"role": turn.ctx.role.as_str(), "steps": result.steps, "tool_calls": result.tool_calls}));
        if let Some(id) = result.last_call {
            e = e.model_call(id);
        }
        self.journal.record(e);
    }

    fn step_request(
        &self,
        turn: &Turn,
        messages: &[Message],
        tools_allowed: bool,
        max_tokens: u32,
    ) -> ChatRequest {
        let mut tools: Vec<_> = if tools_allowed {
            turn.tools.iter().map(|t| t.spec()).collect()
        } else {
            Vec::new()
        };
        let mut system = turn.system.clone();
        let mut tool_choice = ToolChoice::Auto;
        if let Some(f) = &turn.final_tool {
            tools.push(f.spec.clone());
            if !tools_allowed {
                tool_choice = ToolChoice::Force(f.name().to_string());
            }
        }
        if !tools_allowed && !turn.tools.is_empty() {
            system.push_str(
                "\n\nYour tool budget for this turn is used up: answer now, without tools.",
            );
        }
        let mut messages = messages.to_vec();
        let total = self.settings.global().executive.prompt_limits.total_chars;
        bound_request(&mut system, &mut messages, total as usize);
        ChatRequest {
            system,
            messages,
            tools,
            tool_choice,
            max_tokens,
        }
    }

    /// Runs one requested tool call; returns the result text and whether it is an error.
    async fn run_tool(
        &self,
        turn: &Turn,
        name: &str,
        input: &Value,
        calls: &mut u32,
        final_value: &mut Option<Value>,
    ) -> (String, bool) {
        if let Some(f) = turn.final_tool.as_ref().filter(|f| f.name() == name) {
            return match f.check(input) {
                Ok(()) => {
                    *final_value = Some(input.clone());
                    ("recorded".into(), false)
                }
                Err(e) => (e.to_string(), true),
            };
        }
        if *calls >= turn.max_calls {
            return (
                "the tool budget for this turn is used up; answer without more tools".into(),
                true,
            );
        }
        *calls += 1;
        let Some(tool) = turn.tools.iter().find(|t| t.spec().name == name) else {
            let known: Vec<String> = turn
                .tools
                .iter()
                .map(|t| t.spec().name)
                .chain(turn.final_tool.iter().map(|f| f.name().to_string()))
                .collect();
            return (
                format!(
                    "there is no tool named {name:?}; the tools are: {}",
                    known.join(", ")
                ),
                true,
            );
        };
        let (text, is_error) = match tool.call(input).await {
            Ok(text) => (text, false),
            Err(e) => {
                tracing::debug!(tool = name, error = %e, "tool call returned an error to the model");
                (e.0, true)
            }
        };
        let limit = self
            .settings
            .global()
            .executive
            .prompt_limits
            .tool_result_chars;
        (cap_owned(text, limit as usize), is_error)
    }
}
