//! The layers, one way: the table at the top of `src/lib.rs` against every
//! `crate::` path in `src/`.
//!
//! The table is the one place the order is written down; this test holds
//! the code to it. A module may use only modules on lower rows. A failure
//! names the file and line of each import that climbs, and a module that
//! is missing from the table (or a row naming one that does not exist).
//! Inside a module, its files use each other one way too: a circle between
//! them is named, file by file.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Top-level module → its row (1 is the top).
fn table(lib: &str) -> BTreeMap<String, usize> {
    let mut rows = BTreeMap::new();
    for line in lib.lines() {
        let Some(rest) = line.strip_prefix("//! | ") else {
            continue;
        };
        let mut cells = rest.split(" | ");
        let Some(Ok(row)) = cells.next().map(|c| c.trim().parse::<usize>()) else {
            continue;
        };
        let modules = cells.next().unwrap_or_default();
        for name in modules.split(',') {
            let name = name.trim().trim_matches('`');
            assert!(
                rows.insert(name.to_string(), row).is_none(),
                "`{name}` is in two rows of the layer table"
            );
        }
    }
    rows
}

/// The modules `src/` actually has: a directory or a file per module.
fn modules_on_disk(src: &Path) -> BTreeSet<String> {
    std::fs::read_dir(src)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter_map(|p| {
            let name = p.file_name()?.to_str()?.to_string();
            if p.is_dir() {
                Some(name)
            } else {
                name.strip_suffix(".rs").map(str::to_string)
            }
        })
        .filter(|m| m != "lib" && m != "main")
        .collect()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The line as code: without its `//` comment, and with what is inside
/// string literals blanked (a `crate::` in a message is not an import).
fn code_of(line: &str) -> String {
    let mut code = String::with_capacity(line.len());
    let (mut in_str, mut escaped) = (false, false);
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if in_str {
            let closes = c == '"' && !escaped;
            code.push(if closes { '"' } else { ' ' });
            in_str = !closes;
            escaped = c == '\\' && !escaped;
            continue;
        }
        match c {
            '"' => in_str = true,
            '/' if chars.peek() == Some(&'/') => break,
            _ => {}
        }
        code.push(c);
    }
    code
}

/// The first part of `rel` (a file's path below a folder): the module or
/// file it belongs to, without `.rs`.
fn first_part(rel: &Path) -> &str {
    let first = rel.components().next().unwrap().as_os_str();
    first.to_str().unwrap().trim_end_matches(".rs")
}

/// A file's lines as code (see [`code_of`]), up to its test module: a test
/// may use what the code may not.
fn code_outside_tests(text: &str) -> impl Iterator<Item = String> + '_ {
    text.lines()
        .take_while(|l| !l.trim_start().starts_with("#[cfg(test)]"))
        .map(code_of)
}

/// Every top-level module a file's code names through `crate::`, with the
/// line: `crate::a::b`, and each head of `crate::{a::b, c}` (even across lines).
fn crate_paths(text: &str) -> Vec<(usize, String)> {
    let code: Vec<String> = text.lines().map(code_of).collect();
    let joined = code.join("\n");
    let mut found = Vec::new();
    for (at, _) in joined.match_indices("crate::") {
        if joined[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_') {
            continue; // `$crate::` in a macro, or part of a longer name
        }
        let line = joined[..at].matches('\n').count() + 1;
        let rest = &joined[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let (mut depth, mut head_next) = (1, true);
            let mut word = String::new();
            for c in group.chars() {
                if c.is_alphanumeric() || c == '_' {
                    word.push(c);
                    continue;
                }
                if head_next && depth == 1 && !word.is_empty() {
                    found.push((line, word.clone()));
                }
                if !word.is_empty() || !c.is_whitespace() {
                    head_next = false;
                }
                word.clear();
                match c {
                    '{' => depth += 1,
                    '}' if depth == 1 => break,
                    '}' => depth -= 1,
                    ',' if depth == 1 => head_next = true,
                    _ => {}
                }
            }
        } else {
            let head: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            found.push((line, head));
        }
    }
    found
}

#[test]
fn no_module_imports_one_above_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let src = root.join("src");
    let rows = table(&std::fs::read_to_string(src.join("lib.rs")).unwrap());
    let on_disk = modules_on_disk(&src);

    let mut problems = Vec::new();
    for m in &on_disk {
        if !rows.contains_key(m) {
            problems.push(format!(
                "src/{m}: not in the layer table at the top of src/lib.rs; give it a row"
            ));
        }
    }
    for m in rows.keys() {
        if !on_disk.contains(m) {
            problems.push(format!(
                "src/lib.rs: the layer table names `{m}`, which src/ does not have"
            ));
        }
    }

    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    for file in files {
        let rel = file.strip_prefix(&src).unwrap();
        let module = first_part(rel);
        let Some(&own) = rows.get(module) else {
            continue;
        };
        let text = std::fs::read_to_string(&file).unwrap();
        for (line, used) in crate_paths(&text) {
            let Some(&theirs) = rows.get(&used) else {
                continue;
            };
            if used != module && theirs <= own {
                let place = if theirs == own {
                    "on its own row"
                } else {
                    "above it"
                };
                problems.push(format!(
                    "src/{}:{line}: `{module}` (row {own}) uses `{used}` (row {theirs}), {place}",
                    rel.display()
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "the layers climb:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_path_reader_sees_groups_and_skips_comments() {
    let text = "use crate::{\n    a::b,\n    c::{d, e},\n};\n// crate::f\nlet x = crate::g::h(\"// crate::i\");\n";
    let found: Vec<_> = crate_paths(text)
        .into_iter()
        .map(|(l, m)| format!("{l}:{m}"))
        .collect();
    assert_eq!(found, ["1:a", "1:c", "6:g"]);
}

/// Inside one module, the files use each other one way too: a circle
/// (a → b → a, or longer) means neither can be read, tested or replaced
/// without the other. Nodes are the module's files and folders (`mod.rs`,
/// the module's root, is left out: its children use what it declares);
/// edges are `super::x` from a file directly in the folder,
/// `super::super::x` from one a folder deeper, and `crate::module::x`
/// from anywhere in it. Test code is left out.
#[test]
fn no_circle_between_the_files_of_a_module() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut problems = Vec::new();
    for module in modules_on_disk(&src) {
        let dir = src.join(&module);
        if !dir.is_dir() {
            continue;
        }
        let graph = module_graph(&module, &dir);
        for circle in circles(&graph) {
            problems.push(format!("src/{module}: {}", circle.join(" → ")));
        }
    }
    assert!(
        problems.is_empty(),
        "files of a module use each other in a circle:\n{}",
        problems.join("\n")
    );
}

/// File (or folder) → the siblings it uses, inside `module`.
fn module_graph(module: &str, dir: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    rust_files(dir, &mut files);
    let node_of = |p: &Path| -> (String, usize) {
        let rel = p.strip_prefix(dir).unwrap();
        (first_part(rel).to_string(), rel.components().count())
    };
    let nodes: BTreeSet<String> = files
        .iter()
        .map(|p| node_of(p).0)
        .filter(|n| n != "mod")
        .collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        let (node, depth) = node_of(file);
        if node == "mod" {
            continue;
        }
        let text = std::fs::read_to_string(file).unwrap();
        let code: String = code_outside_tests(&text).map(|l| l + "\n").collect();
        let up = "super::".repeat(depth);
        let own = format!("crate::{module}::");
        for prefix in [up.as_str(), own.as_str()] {
            for (at, _) in code.match_indices(prefix) {
                if prefix == up && code[..at].ends_with("super::") {
                    continue; // a longer `super::super::` seen from too deep
                }
                let head: String = code[at + prefix.len()..]
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if head != node && nodes.contains(&head) {
                    graph.entry(node.clone()).or_default().insert(head);
                }
            }
        }
    }
    graph
}

/// Each circle once, as the path that closes it (`a → b → a`).
fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    fn walk(
        at: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        found: &mut BTreeSet<Vec<String>>,
    ) {
        for next in graph.get(at).into_iter().flatten() {
            if let Some(start) = path.iter().position(|p| p == next) {
                let mut circle = path[start..].to_vec();
                let least = (0..circle.len()).min_by_key(|&i| &circle[i]).unwrap();
                circle.rotate_left(least);
                circle.push(circle[0].clone());
                found.insert(circle);
            } else if path.len() < 8 {
                path.push(next.clone());
                walk(next, graph, path, found);
                path.pop();
            }
        }
    }
    let mut found = BTreeSet::new();
    for start in graph.keys() {
        walk(start, graph, &mut vec![start.clone()], &mut found);
    }
    found.into_iter().collect()
}

#[test]
fn the_module_reader_follows_super_paths_at_each_depth_and_skips_tests() {
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path();
    std::fs::create_dir(m.join("deep")).unwrap();
    std::fs::write(m.join("mod.rs"), "use self::a::X;").unwrap();
    std::fs::write(
        m.join("a.rs"),
        "use super::b::Y;\n#[cfg(test)]\nuse super::c::Z;",
    )
    .unwrap();
    std::fs::write(
        m.join("b.rs"),
        "// super::a\nfn f() { crate::m::deep::g() }",
    )
    .unwrap();
    std::fs::write(m.join("c.rs"), "").unwrap();
    std::fs::write(m.join("deep/x.rs"), "use super::super::a::X; use super::y;").unwrap();
    let graph = module_graph("m", m);
    let edges: Vec<String> = graph
        .iter()
        .flat_map(|(from, to)| to.iter().map(move |t| format!("{from}→{t}")))
        .collect();
    assert_eq!(edges, ["a→b", "b→deep", "deep→a"]);
    assert_eq!(circles(&graph), vec![vec!["a", "b", "deep", "a"]]);
}

#[test]
fn a_circle_inside_a_module_is_found_once_whichever_file_it_starts_from() {
    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("a", vec!["b"]),
        ("b", vec!["c"]),
        ("c", vec!["a"]),
        ("d", vec!["a"]),
    ]
    .into_iter()
    .map(|(k, v)| (k.into(), v.into_iter().map(String::from).collect()))
    .collect();
    assert_eq!(circles(&graph), vec![vec!["a", "b", "c", "a"]]);
}

/// The store's family handles (`src/store/handles.rs`).
const HANDLES: [&str; 14] = [
    "MessageStore",
    "MemoryStore",
    "JournalStore",
    "UsageStore",
    "InitiativeStore",
    "PeopleStore",
    "DiscoveryStore",
    "FeedStore",
    "ImpulseStore",
    "GardenStore",
    "OverrideStore",
    "GuildStore",
    "VoiceStore",
    "FileStore",
];

/// The modules that hold the whole store: the composition root and the
/// commands that open a data directory.
const ROOTS: [&str; 3] = ["app", "cli", "store"];

/// Module → the handles its line of `src/lib.rs`'s handle table allows.
fn handle_table(lib: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut rows = BTreeMap::new();
    for line in lib.lines() {
        let Some(rest) = line.strip_prefix("//! | `") else {
            continue;
        };
        let Some((module, handles)) = rest.split_once("` | ") else {
            continue;
        };
        let allowed = handles
            .trim_end_matches(" |")
            .split(',')
            .map(|h| h.trim().trim_matches('`').to_string())
            .collect();
        rows.insert(module.to_string(), allowed);
    }
    rows
}

/// Each store type a file's code names, with its line: a family handle,
/// or `Store` (the whole) and `App::store()` (the whole, through the app).
/// Test modules are left out: a test may open a store of its own.
fn store_names(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (n, line) in code_outside_tests(text).enumerate() {
        let mut rest = line.as_str();
        while let Some(at) = rest.find(|c: char| c.is_alphanumeric() || c == '_') {
            let word_len = rest[at..]
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(rest.len() - at);
            let word = &rest[at..at + word_len];
            let after = rest[at + word_len..].trim_start();
            // `Store(…)` and `Store { … }` are an error's variant, not the type.
            let variant = after.starts_with('(') || after.starts_with('{');
            let before = rest[..at].chars().last();
            let whole_word = !before.is_some_and(|c| c.is_alphanumeric() || c == '_');
            if whole_word && (HANDLES.contains(&word) || (word == "Store" && !variant)) {
                found.push((n + 1, word.to_string()));
            }
            rest = &rest[at + word_len..];
        }
        if line.contains("app.store()") {
            found.push((n + 1, "App::store()".to_string()));
        }
    }
    found
}

/// What is wrong with `module` naming `names`, given the handles it may use.
fn handle_problems(
    module: &str,
    allowed: Option<&BTreeSet<String>>,
    file: &str,
    names: &[(usize, String)],
) -> Vec<String> {
    let mut problems = Vec::new();
    for (line, name) in names {
        if name == "Store" || name == "App::store()" {
            problems.push(format!(
                "{file}:{line}: `{module}` takes the whole store (`{name}`); give it the handles it uses"
            ));
        } else if !allowed.is_some_and(|a| a.contains(name)) {
            problems.push(format!(
                "{file}:{line}: `{module}` uses `{name}`, which its line of the handle table in src/lib.rs does not allow"
            ));
        }
    }
    problems
}

#[test]
fn each_module_names_only_the_store_handles_its_line_allows() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let table = handle_table(&std::fs::read_to_string(src.join("lib.rs")).unwrap());
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut problems = Vec::new();
    let mut used: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in files {
        let rel = file.strip_prefix(&src).unwrap();
        let module = first_part(rel);
        if ROOTS.contains(&module) || module == "lib" || module == "main" {
            continue;
        }
        let names = store_names(&std::fs::read_to_string(&file).unwrap());
        let shown = format!("src/{}", rel.display());
        problems.extend(handle_problems(module, table.get(module), &shown, &names));
        let seen = used.entry(module.to_string()).or_default();
        seen.extend(names.into_iter().map(|(_, n)| n));
    }
    for (module, allowed) in &table {
        for h in allowed {
            if !used.get(module).is_some_and(|u| u.contains(h)) {
                problems.push(format!(
                    "src/lib.rs: the handle table gives `{module}` `{h}`, which it does not use; take it off"
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "store handles:\n{}",
        problems.join("\n")
    );
}

#[test]
fn a_module_using_another_familys_handle_or_the_whole_store_is_named() {
    let lib = "//! | `speech` | `MessageStore`, `PeopleStore` |\n";
    let table = handle_table(lib);
    let text = "use crate::store::{MessageStore, UsageStore};\n\
                fn f(s: &Store) -> Result<(), E> { Err(E::Store(x)) }\n\
                fn g(app: &App) { app.store().usage(); }\n\
                #[cfg(test)]\nmod tests { fn t(s: Store) {} }\n";
    let problems = handle_problems(
        "speech",
        table.get("speech"),
        "src/speech/mod.rs",
        &store_names(text),
    );
    assert_eq!(
        problems,
        [
            "src/speech/mod.rs:1: `speech` uses `UsageStore`, which its line of the handle table in src/lib.rs does not allow",
            "src/speech/mod.rs:2: `speech` takes the whole store (`Store`); give it the handles it uses",
            "src/speech/mod.rs:3: `speech` takes the whole store (`App::store()`); give it the handles it uses",
        ]
    );
}

/// Each `pub use` that gives an item defined outside the file's own module
/// a second public name (`pub use crate::…` or `pub use super::…`), with
/// its line. A module's facade over its own files (`pub use fetch::Fetcher`)
/// is not one: the item has no other home above it.
fn second_names(text: &str) -> Vec<(usize, String)> {
    text.lines()
        .map(code_of)
        .enumerate()
        .filter_map(|(i, code)| {
            let path = code.trim().strip_prefix("pub use ")?;
            (path.starts_with("crate::") || path.starts_with("super::"))
                .then(|| (i + 1, path.trim_end_matches(';').to_string()))
        })
        .collect()
}

#[test]
fn each_type_has_one_path_where_it_is_defined() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    files.sort();
    let mut problems = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let shown = file.strip_prefix(root).unwrap().display();
        for (line, path) in second_names(&text) {
            problems.push(format!(
                "{shown}:{line}: `pub use {path}` gives a second name to an item defined \
                 elsewhere; use it by the path where it is defined"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_second_name_reader_passes_a_modules_own_facade() {
    let text = "pub use fetch::{Fetcher, PostBody};\n\
                pub use crate::vocab::fact;\n\
                pub(crate) use outln;\n\
                // pub use crate::old::Name;\n\
                    pub use super::Asker;\n";
    assert_eq!(
        second_names(text),
        [
            (2, "crate::vocab::fact".to_string()),
            (5, "super::Asker".to_string()),
        ]
    );
}
