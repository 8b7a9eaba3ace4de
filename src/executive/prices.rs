//! What model calls cost, for estimates (`ambient replay`'s report): US$
//! per million input and output tokens per model name. The operator's
//! `executive.prices` come first; then the providers' public list prices
//! at the time of writing, built in here. A local endpoint (Ollama, a
//! server on the owner's own network) costs nothing; a model without a
//! price is "unknown", never guessed.

use std::collections::BTreeMap;

use crate::settings::Price;

const fn price(input_per_million: f64, output_per_million: f64) -> Price {
    Price {
        input_per_million,
        output_per_million,
    }
}

/// The public list prices of the models the bot picks by default and their
/// close relatives (Anthropic and OpenAI, standard tier, no caching).
pub(crate) fn default_prices() -> BTreeMap<String, Price> {
    [
        ("claude-opus-4-6", price(5.0, 25.0)),
        ("claude-opus-4-5", price(5.0, 25.0)),
        ("claude-sonnet-4-5", price(3.0, 15.0)),
        ("claude-haiku-4-5", price(1.0, 5.0)),
        ("gpt-5.2", price(1.75, 14.0)),
        ("gpt-5", price(1.25, 10.0)),
        ("gpt-5-mini", price(0.25, 2.0)),
        ("gpt-5-nano", price(0.05, 0.40)),
    ]
    .into_iter()
    .map(|(m, p)| (m.to_string(), p))
    .collect()
}

/// The price of `model` in `prices`: by its name, or for a routed name
/// like OpenRouter's `anthropic/claude-opus-4.6` by the part after the `/`
/// (with `.` read as `-` where that is how the provider spells it).
pub(crate) fn lookup(prices: &BTreeMap<String, Price>, model: &str) -> Option<Price> {
    if let Some(p) = prices.get(model) {
        return Some(*p);
    }
    let bare = model.rsplit_once('/').map_or(model, |(_, m)| m);
    prices
        .get(bare)
        .or_else(|| prices.get(&bare.replace('.', "-")))
        .copied()
}

/// US$ for one call's tokens: 0 on a local endpoint, else the operator's
/// price (`executive.prices`) or the built-in one; `None` when neither knows.
pub(crate) fn cost(
    configured: &BTreeMap<String, Price>,
    model: &str,
    local: bool,
    input: u64,
    output: u64,
) -> Option<f64> {
    if local {
        return Some(0.0);
    }
    let p = lookup(configured, model).or_else(|| lookup(&default_prices(), model))?;
    Some((input as f64 * p.input_per_million + output as f64 * p.output_per_million) / 1e6)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_known_model_costs_its_list_price() {
        let c = cost(
            &BTreeMap::new(),
            "claude-haiku-4-5",
            false,
            1_000_000,
            200_000,
        )
        .unwrap();
        assert!((c - 2.0).abs() < 1e-9, "{c}");
    }

    #[test]
    fn a_routed_name_finds_its_model() {
        let prices = default_prices();
        assert_eq!(
            lookup(&prices, "anthropic/claude-opus-4.6"),
            prices.get("claude-opus-4-6").copied()
        );
        assert_eq!(
            lookup(&prices, "openai/gpt-5-mini"),
            prices.get("gpt-5-mini").copied()
        );
    }

    #[test]
    fn local_is_free_and_unknown_is_unknown() {
        let prices = BTreeMap::new();
        assert_eq!(
            cost(&prices, "qwen2.5:14b", true, 10_000, 10_000),
            Some(0.0)
        );
        assert_eq!(cost(&prices, "qwen2.5:14b", false, 10_000, 10_000), None);
    }

    #[test]
    fn a_price_in_settings_wins() {
        let prices = BTreeMap::from([("gpt-5-mini".to_string(), price(1.0, 1.0))]);
        let c = cost(&prices, "gpt-5-mini", false, 500_000, 500_000).unwrap();
        assert!((c - 1.0).abs() < 1e-9, "{c}");
    }
}
