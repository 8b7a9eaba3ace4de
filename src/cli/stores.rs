//! The handles of the front ends above the composition root (`commands`,
//! the console, the dashboard, Discord, health, the replay), cut from the
//! one store. Here because `cli` is the one module above them all; the
//! services below are cut in `app`'s own `stores`. A front end asks for
//! its handles with `App::stores`.

use crate::store::cut;

cut!(Store => crate::commands::Stores { messages, memory, journal, usage, initiative, people, impulses, garden, guilds });

cut!(Store => crate::replay::Stores { messages, initiative, impulses });

cut!(Store => crate::health::Stores { usage, file });

cut!(Store => crate::dashboard::Stores { messages, memory, journal, usage, initiative, people, discovery, feeds, impulses, garden, overrides, guilds });

cut!(Store => crate::discord::Stores { messages, file });
