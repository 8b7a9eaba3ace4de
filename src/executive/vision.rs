//! Which models see images, what an image costs, and what a model that
//! cannot see is told instead.
//!
//! A role sees images when `executive.roles.<role>.vision` is `true`, or
//! when it is `"auto"` (the default) and the model's name is on the known
//! list below. An unknown model is taken to be blind: sending an image to a
//! text-only model is refused by some servers and silently dropped by
//! others, and either way the answer would pretend to have looked.
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

/// Model names (after any `provider/` prefix, lower case) that take images,
/// by prefix. Kept to families whose every size sees; exceptions below.
const SEEING: &[&str] = &[
    // Anthropic: every Claude since the 3 family.
    "claude-3",
    "claude-4",
    "claude-sonnet-4",
    "claude-opus-4",
    "claude-haiku-4",
    // OpenAI.
    "gpt-4o",
    "chatgpt-4o",
    "gpt-4-turbo",
    "gpt-4.1",
    "gpt-4.5",
    "gpt-5",
    "o1",
    "o3",
    "o4-mini",
    // Google, through OpenRouter or a compatible server.
    "gemini-",
    "gemma3",
    "gemma-3",
    // Local vision models (Ollama, llama.cpp, vLLM names).
    "llava",
    "bakllava",
    "llama3.2-vision",
    "llama-3.2-11b-vision",
    "llama-3.2-90b-vision",
    "llama4",
    "llama-4",
    "qwen2-vl",
    "qwen2.5-vl",
    "qwen2.5vl",
    "qwen3-vl",
    "minicpm-v",
    "moondream",
    "pixtral",
    "mistral-small3.1",
    "mistral-small3.2",
    "granite3.2-vision",
];

/// Names that match a prefix above but take no images: reasoning models
/// without vision, the smallest Gemma 3 sizes, and OpenAI's audio and
/// search variants.
const BLIND: &[&str] = &[
    "o1-mini",
    "o1-preview",
    "o3-mini",
    "gemma3:1b",
    "gemma3:270m",
    "gemma-3-1b",
    "gemma-3-270m",
];
const BLIND_PARTS: &[&str] = &["audio", "realtime", "transcribe", "tts", "search"];

/// Whether a model of this name is known to take images (`vision: "auto"`).
pub fn sees_images(model: &str) -> bool {
    let name = model.rsplit('/').next().unwrap_or(model).to_lowercase();
    SEEING.iter().any(|p| name.starts_with(p))
        && !BLIND.iter().any(|p| name.starts_with(p))
        && !BLIND_PARTS.iter().any(|p| name.contains(p))
}

/// What a model that cannot see is told about an image.
pub fn unseen(name: &str) -> String {
    format!("[image: {name}, not visible to you]")
}

/// Anthropic's most tokens for one image: beyond it the API downscales.
const ANTHROPIC_MAX_IMAGE_TOKENS: u64 = 1_600;
const ANTHROPIC_MAX_SIDE: u64 = 1_568;

/// Input tokens one `width × height` image costs on `wire`.
pub fn image_tokens(wire: Wire, width: u32, height: u32) -> u64 {
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

/// An image's cost when the provider is not known yet: the dearer formula.
pub fn image_tokens_anywhere(width: u32, height: u32) -> u64 {
    image_tokens(Wire::Anthropic, width, height).max(image_tokens(Wire::OpenAi, width, height))
}

/// The request as `ep` gets it: unchanged for a model that sees, with each
/// image replaced by its placeholder for one that does not.
pub fn as_seen_by<'a>(req: &'a ChatRequest, ep: &Endpoint) -> Cow<'a, ChatRequest> {
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
pub fn estimate_on(req: &ChatRequest, ep: &Endpoint) -> u64 {
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

    #[test]
    fn known_vision_models_see_and_unknown_or_text_only_ones_do_not() {
        for model in [
            "claude-opus-4-6",
            "claude-3-5-sonnet-20241022",
            "claude-haiku-4-5",
            "anthropic/claude-sonnet-4.5",
            "gpt-4o",
            "gpt-4o-mini",
            "gpt-4.1-nano",
            "gpt-5.2",
            "gpt-5-mini",
            "openai/gpt-5-mini",
            "o1",
            "o3",
            "o4-mini",
            "llava:13b",
            "qwen2.5vl:7b",
            "Qwen/Qwen2.5-VL-7B-Instruct",
            "llama3.2-vision:11b",
            "gemma3:27b",
            "google/gemini-2.5-pro",
        ] {
            assert!(sees_images(model), "{model} should see");
        }
        for model in [
            "qwen2.5:14b",
            "llama3.1:8b",
            "claude-2.1",
            "claude-instant-1.2",
            "gpt-3.5-turbo",
            "gpt-4",
            "o1-mini",
            "o3-mini",
            "gemma3:1b",
            "gpt-4o-audio-preview",
            "gpt-4o-mini-search-preview",
            "mistral:7b",
            "",
        ] {
            assert!(!sees_images(model), "{model} should not see");
        }
    }

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
