//! Which models see images, by name: `executive.roles.<role>.vision: "auto"`
//! (the default) asks this list when an endpoint is resolved.
//!
//! An unknown model is taken to be blind: sending an image to a text-only
//! model is refused by some servers and silently dropped by others, and
//! either way the answer would pretend to have looked. What a blind model
//! is sent instead is `vision`'s business.

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
pub(crate) fn sees_images(model: &str) -> bool {
    let name = model.rsplit('/').next().unwrap_or(model).to_lowercase();
    SEEING.iter().any(|p| name.starts_with(p))
        && !BLIND.iter().any(|p| name.starts_with(p))
        && !BLIND_PARTS.iter().any(|p| name.contains(p))
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
}
