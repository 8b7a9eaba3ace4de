#[macro_use]
pub mod macros;

pub mod prelude;

pub mod tokio;
