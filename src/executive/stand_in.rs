//! A stand-in for the model providers: answers each call in the process,
//! so everything around the call (endpoints, budgets, retries' bookkeeping,
//! usage records, the tool loop) runs exactly as it does with a provider.
//! Replay's offline mode is what uses it; the executive knows only this
//! trait, never what stands in.

use super::wire::{ChatRequest, ChatResponse};
use super::{CallContext, Endpoint};

pub trait StandIn: Send + Sync {
    /// Whether a local Ollama counts as offered: nothing is probed with a
    /// stand-in, so it says what the set-up it stands in for has.
    fn ollama_reachable(&self) -> bool;

    /// The answer to `req`, as `ep` would have given it for `ctx.role`.
    /// Its usage should be estimated the way budgets estimate, so a
    /// stand-in's tokens are comparable with a provider's.
    fn answer(&self, ctx: &CallContext, ep: &Endpoint, req: &ChatRequest) -> ChatResponse;
}
