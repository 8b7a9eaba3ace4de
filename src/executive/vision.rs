//! What an image costs, and what a model that cannot see is told instead.
//!
//! Which models see is `seeing`'s list; a role sees images when
//! `executive.roles.<role>.vision` is `true`, or `"auto"` (the default) and
//! its model is on that list.
//!
//! The decision is made per endpoint ([`super::Endpoint::vision`]): when a
//! role fails over from a seeing model to a blind one, the request's images
//! are replaced by the placeholder `[image: name, not visible to you]`
//! before it is sent ([`as_seen_by`]), and budgets count them as what each
//! endpoint would be charged ([`estimate_on`]).
//!
//! Token estimates follow each provider's documented formula:
//! - Anthropic: `width × height / 750`, after its own downscaling to a long
//!   side of at most 1568 px and about 1,600 tokens;
//! - OpenAI (high detail): the image is fitted into 2048 × 2048, then its
//!   short side scaled to at most 768 px; every 512 px tile costs 170
//!   tokens, plus 85. Other OpenAI-compatible servers count differently;
//!   the OpenAI figure stands in for them.

use std::borrow::Cow;

use super::endpoints::{Endpoint, Wire};
use super::wire::{ChatRequest, Part};

/// What a model that cannot see is told about an image.
pub(crate) fn unseen(name: &str) -> String {
    format!("[image: {name}, not visible to you]")
}

/// Anthropic's most tokens for one image: beyond it the API downscales.
const ANTHROPIC_MAX_IMAGE_TOKENS: u64 = 1_600;
const ANTHROPIC_MAX_SIDE: u64 = 1_568;

/// Input tokens one `width × height` image costs on `wire`.
pub(crate) fn image_tokens(wire: Wire, width: u32, height: u32) -> u64 {
    let (w, h) = (u64::from(width.max(1)), u64::from(height.max(1)));
    match wire {
        Wire::Anthropic => {
            let (w, h) = fit(w, h, ANTHROPIC_MAX_SIDE);
            (w * h).div_ceil(750).min(ANTHROPIC_MAX_IMAGE_TOKENS)
        }
        Wire::OpenAi => {
            let (w, h) = fit(w, h, 2_048);
            let short = w.min(h);
            let (w, h) = if short > 768 {
                (w * 768 / short, h * 768 / short)
            } else {
                (w, h)
            };
            85 + 170 * w.div_ceil(512) * h.div_ceil(512)
        }
    }
}

/// `(w, h)` scaled down, keeping its shape, so that neither side passes `side`.
fn fit(w: u64, h: u64, side: u64) -> (u64, u64) {
    let long = w.max(h);
    if long <= side {
        return (w, h);
    }
    ((w * side / long).max(1), (h * side / long).max(1))
}

impl ChatRequest {
    /// A rough token estimate of the prompt (4 characters a token, images by
    /// the dearer provider's formula), for budget checks before an endpoint
    /// is chosen. It lives here, beside the formulas, so that the request
    /// types in `wire` need nothing from this file.
    pub(crate) fn estimate_input_tokens(&self) -> u64 {
        let images: u64 = self
            .messages
            .iter()
            .flat_map(|m| &m.parts)
            .map(|p| match p {
                Part::Image { width, height, .. } => image_tokens_anywhere(*width, *height),
                _ => 0,
            })
            .sum();
        self.estimate_text_tokens() + images
    }
}

/// An image's cost when the provider is not known yet: the dearer formula.
pub(crate) fn image_tokens_anywhere(width: u32, height: u32) -> u64 {
    image_tokens(Wire::Anthropic, width, height).max(image_tokens(Wire::OpenAi, width, height))
}

/// The request as `ep` gets it: unchanged for a model that sees, with each
/// image replaced by its placeholder for one that does not.
pub(crate) fn as_seen_by<'a>(req: &'a ChatRequest, ep: &Endpoint) -> Cow<'a, ChatRequest> {
    let has_images = req
        .messages
        .iter()
        .flat_map(|m| &m.parts)
        .any(|p| matches!(p, Part::Image { .. }));
    if ep.vision || !has_images {
        return Cow::Borrowed(req);
    }
    let mut blind = req.clone();
    for part in blind.messages.iter_mut().flat_map(|m| &mut m.parts) {
        if let Part::Image { name, .. } = part {
            *part = Part::Text {
                text: format!("\n{}", unseen(name)),
            };
        }
    }
    Cow::Owned(blind)
}

/// The input tokens a request may cost on `ep`: its text, and its images
/// by `ep`'s provider's formula (or their placeholders, for a blind model).
pub(crate) fn estimate_on(req: &ChatRequest, ep: &Endpoint) -> u64 {
    let seen = as_seen_by(req, ep);
    let images: u64 = seen
        .messages
        .iter()
        .flat_map(|m| &m.parts)
        .map(|p| match p {
            Part::Image { width, height, .. } => image_tokens(ep.wire, *width, *height),
            _ => 0,
        })
        .sum();
    seen.estimate_text_tokens() + images
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoint(wire: Wire, vision: bool) -> Endpoint {
        Endpoint {
            provider: crate::settings::ProviderKind::Openai,
            wire,
            base_url: "http://127.0.0.1:9".into(),
            key: None,
            model: "m".into(),
            pay_per_token: false,
            vision,
        }
    }

    #[test]
    fn a_blind_endpoint_gets_placeholders_and_pays_only_for_their_text() {
        let req = ChatRequest {
            system: String::new(),
            messages: vec![super::super::wire::Message {
                speaker: super::super::wire::Speaker::User,
                parts: vec![
                    Part::Text {
                        text: "look".into(),
                    },
                    Part::Image {
                        name: "cat.png".into(),
                        media_type: "image/png".into(),
                        data: "AAAA".into(),
                        width: 1024,
                        height: 1024,
                    },
                ],
            }],
            tools: vec![],
            tool_choice: super::super::wire::ToolChoice::Auto,
            max_tokens: 10,
        };
        let blind = as_seen_by(&req, &endpoint(Wire::OpenAi, false));
        assert_eq!(
            blind.messages[0].text(),
            "look\n[image: cat.png, not visible to you]"
        );
        assert!(matches!(
            as_seen_by(&req, &endpoint(Wire::OpenAi, true)),
            Cow::Borrowed(_)
        ));
        assert_eq!(estimate_on(&req, &endpoint(Wire::OpenAi, true)), 1 + 765);
        assert_eq!(
            estimate_on(&req, &endpoint(Wire::Anthropic, true)),
            1 + 1_399
        );
        assert_eq!(estimate_on(&req, &endpoint(Wire::Anthropic, false)), 10);
        assert_eq!(req.estimate_input_tokens(), 1 + 1_399);
    }

    #[test]
    fn token_estimates_follow_the_providers_formulas() {
        // Anthropic's table: 200×200 ≈ 54, 1000×1000 ≈ 1334 → capped near 1,600.
        assert_eq!(image_tokens(Wire::Anthropic, 200, 200), 54);
        assert_eq!(image_tokens(Wire::Anthropic, 1092, 1092), 1_590);
        assert_eq!(image_tokens(Wire::Anthropic, 1568, 784), 1_600);
        assert_eq!(image_tokens(Wire::Anthropic, 4000, 3000), 1_600);
        // OpenAI's examples: 1024×1024 → 768×768, 4 tiles → 765; 2048×4096 → 768×1536, 6 tiles → 1105.
        assert_eq!(image_tokens(Wire::OpenAi, 1024, 1024), 765);
        assert_eq!(image_tokens(Wire::OpenAi, 2048, 4096), 1_105);
        assert_eq!(image_tokens(Wire::OpenAi, 100, 100), 255);
        assert_eq!(image_tokens_anywhere(1024, 1024), 1_399);
    }
}
