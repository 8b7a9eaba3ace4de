//! A replay as the tests run it: offline, the stand-in's first dice, the
//! export's own bot recognised by name, limits read at the wall clock. A
//! test changes what it is about with `..replaying::offline(…)`.

use std::path::{Path, PathBuf};

use ambient::replay::export::ExportLimits;
use ambient::replay::run::{Models, Options};
use ambient::settings::{Secrets, Settings};

/// `files` replayed offline with `settings`, the replay's store in `dir/data`.
pub fn offline(files: Vec<PathBuf>, settings: Settings, dir: &Path) -> Options {
    Options {
        files,
        settings,
        secrets: Secrets::default(),
        data_dir: dir.join("data"),
        seed: 1,
        models: Models::Offline { post_rate: 0.3 },
        eagerness: None,
        bot: None,
        limits: ExportLimits::at(chrono::Utc::now()),
    }
}
