//! Which attachments are read as text, and how their text is quoted.
//!
//! A file is *text* by its extension (plain text, markup, data and config
//! formats, source code: [`TEXT_EXTENSIONS`]) or by a textual MIME type; an
//! image by its extension or type; a known binary format (archives, media,
//! documents, executables) is only named. Anything else is *sniffed*: its
//! first `discord.attachments.maxTextFileBytes` are fetched and read as text
//! if they are UTF-8 with no NUL byte and almost no control characters.
//!
//! A file longer than the limit is read up to it and cut at a character
//! boundary, with the marker `… [cut: 250,000 bytes, showing the first
//! 100,000]` on a line of its own. Its text is quoted under its name in a fence longer than any
//! run of backticks inside it, so the file cannot close the quote and speak
//! as the prompt. The whole request stays within
//! `executive.promptLimits.totalChars` (`executive::bounds`), which cuts the
//! longest pieces — a huge file first — before anything else.

use crate::store::messages::Attachment;
use crate::words::thousands;

/// Extensions read as text.
pub(crate) const TEXT_EXTENSIONS: &[&str] = &[
    // Plain text, logs and markup.
    "txt",
    "text",
    "md",
    "markdown",
    "rst",
    "adoc",
    "org",
    "tex",
    "log",
    "out",
    "diff",
    "patch",
    "html",
    "htm",
    "xml",
    "css",
    "scss",
    "svelte",
    "vue",
    // Data and configuration.
    "json",
    "jsonl",
    "ndjson",
    "yaml",
    "yml",
    "toml",
    "csv",
    "tsv",
    "ini",
    "cfg",
    "conf",
    "env",
    "properties",
    "sql",
    "graphql",
    "gql",
    "proto",
    // Source code.
    "rs",
    "py",
    "pyi",
    "js",
    "mjs",
    "cjs",
    "ts",
    "tsx",
    "jsx",
    "go",
    "c",
    "h",
    "cc",
    "cpp",
    "cxx",
    "hpp",
    "hh",
    "cs",
    "java",
    "kt",
    "kts",
    "scala",
    "swift",
    "m",
    "mm",
    "rb",
    "php",
    "pl",
    "pm",
    "lua",
    "r",
    "jl",
    "dart",
    "ex",
    "exs",
    "erl",
    "hrl",
    "hs",
    "ml",
    "mli",
    "fs",
    "fsx",
    "clj",
    "cljs",
    "lisp",
    "el",
    "scm",
    "zig",
    "nim",
    "v",
    "sv",
    "vhd",
    "asm",
    "s",
    "sh",
    "bash",
    "zsh",
    "fish",
    "ps1",
    "bat",
    "cmd",
    "nix",
    "tf",
    "hcl",
    "gradle",
    "cmake",
    "mk",
    "dockerfile",
    "makefile",
    "lock",
    "gitignore",
];

/// Image extensions read as images (the bytes decide in the end).
const IMAGE_EXTENSIONS: &[&str] = &["png", "jpg", "jpeg", "webp", "gif"];

/// Images in formats the bot does not decode.
const OTHER_IMAGE_EXTENSIONS: &[&str] =
    &["heic", "heif", "avif", "bmp", "tif", "tiff", "svg", "ico"];

/// Extensions only named: archives, media, documents, programs, fonts, databases.
const BINARY_EXTENSIONS: &[&str] = &[
    "zip",
    "gz",
    "tgz",
    "bz2",
    "xz",
    "zst",
    "7z",
    "rar",
    "tar",
    "jar",
    "war",
    "apk",
    "ipa",
    "deb",
    "rpm",
    "dmg",
    "iso",
    "img",
    "exe",
    "dll",
    "so",
    "dylib",
    "bin",
    "o",
    "a",
    "class",
    "wasm",
    "pyc",
    "mp3",
    "wav",
    "ogg",
    "oga",
    "flac",
    "m4a",
    "aac",
    "opus",
    "mp4",
    "m4v",
    "mov",
    "mkv",
    "webm",
    "avi",
    "wmv",
    "pdf",
    "doc",
    "docx",
    "xls",
    "xlsx",
    "ppt",
    "pptx",
    "odt",
    "ods",
    "odp",
    "epub",
    "psd",
    "ai",
    "sketch",
    "blend",
    "fbx",
    "obj",
    "stl",
    "ttf",
    "otf",
    "woff",
    "woff2",
    "sqlite",
    "db",
    "parquet",
    "npy",
    "pt",
    "safetensors",
    "gguf",
];

/// What an attachment is, for the bot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// PNG, JPEG, WebP or GIF: shown to a model that sees.
    Image,
    /// An image in another format: named.
    OtherImage,
    Text,
    Binary,
    /// Neither name nor type tells: sniffed.
    Unknown,
}

pub(crate) fn kind(a: &Attachment) -> Kind {
    let name = a.name.to_lowercase();
    let ext = match name.rsplit_once('.') {
        Some((_, ext)) => ext,
        // `Dockerfile`, `Makefile`, `LICENSE`: the whole name.
        None => name.as_str(),
    };
    if IMAGE_EXTENSIONS.contains(&ext) {
        return Kind::Image;
    }
    if TEXT_EXTENSIONS.contains(&ext) {
        return Kind::Text;
    }
    if OTHER_IMAGE_EXTENSIONS.contains(&ext) {
        return Kind::OtherImage;
    }
    if BINARY_EXTENSIONS.contains(&ext) {
        return Kind::Binary;
    }
    let mime = a
        .content_type
        .as_deref()
        .unwrap_or("")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_lowercase();
    match mime.as_str() {
        "image/png" | "image/jpeg" | "image/webp" | "image/gif" => Kind::Image,
        m if m.starts_with("image/") => Kind::OtherImage,
        m if m.starts_with("text/") => Kind::Text,
        "application/json"
        | "application/xml"
        | "application/yaml"
        | "application/x-yaml"
        | "application/toml"
        | "application/javascript"
        | "application/x-sh"
        | "application/sql" => Kind::Text,
        m if m.starts_with("audio/") || m.starts_with("video/") || m.starts_with("font/") => {
            Kind::Binary
        }
        "application/pdf" | "application/zip" | "application/gzip" | "application/x-tar" => {
            Kind::Binary
        }
        _ => Kind::Unknown,
    }
}

/// The text in `bytes`, if they are text: UTF-8 (a character cut by
/// `truncated` reading is dropped), no NUL, under 1% other control characters.
pub(crate) fn as_text(bytes: &[u8], truncated: bool) -> Option<&str> {
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t,
        // Only the last character may be incomplete, and only when the file was cut.
        Err(e) if truncated && e.error_len().is_none() => {
            std::str::from_utf8(&bytes[..e.valid_up_to()]).ok()?
        }
        Err(_) => return None,
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let controls = text
        .chars()
        .filter(|c| c.is_control() && !matches!(c, '\n' | '\r' | '\t' | '\x0c' | '\x1b'))
        .count();
    (!text.contains('\0') && controls * 100 <= text.chars().count()).then_some(text)
}

/// The file quoted for the prompt: a heading with its name, the text in a
/// fence it cannot close, and a marker when only its start was read.
pub(crate) fn quoted(name: &str, whose: &str, text: &str, cut: Option<Cut>) -> String {
    let longest_run = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat((longest_run + 1).max(3));
    let marker = cut.map_or(String::new(), |c| format!("\n… {c}"));
    format!(
        "\n\nFile {name} from {whose}:\n{fence}\n{}{marker}\n{fence}",
        text.trim_end_matches('\n')
    )
}

/// How much of a file was read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Cut {
    /// The file's size, when the platform said.
    pub total_bytes: Option<u64>,
    pub shown_bytes: u64,
}

impl std::fmt::Display for Cut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let shown = thousands(self.shown_bytes);
        match self.total_bytes {
            Some(total) => write!(
                f,
                "[cut: {} bytes, showing the first {shown}]",
                thousands(total)
            ),
            None => write!(f, "[cut: showing the first {shown} bytes]"),
        }
    }
}

/// A name safe to show on one line: no control characters, at most 120 characters.
pub(crate) fn display_name(name: &str) -> String {
    let clean: String = name
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(120)
        .collect();
    if clean.trim().is_empty() {
        "unnamed".into()
    } else {
        clean
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, content_type: Option<&str>) -> Attachment {
        Attachment {
            name: name.into(),
            url: String::new(),
            content_type: content_type.map(String::from),
            ..Attachment::default()
        }
    }

    #[test]
    fn kinds_come_from_the_extension_then_the_type() {
        assert_eq!(kind(&file("notes.md", None)), Kind::Text);
        // Discord calls .rs files application/rls-services+xml: the extension wins.
        assert_eq!(
            kind(&file("main.rs", Some("application/rls-services+xml"))),
            Kind::Text
        );
        assert_eq!(kind(&file("Dockerfile", None)), Kind::Text);
        assert_eq!(kind(&file("photo.JPG", None)), Kind::Image);
        assert_eq!(kind(&file("photo", Some("image/webp"))), Kind::Image);
        assert_eq!(
            kind(&file("scan.heic", Some("image/heic"))),
            Kind::OtherImage
        );
        assert_eq!(kind(&file("song.mp3", None)), Kind::Binary);
        assert_eq!(kind(&file("clip", Some("video/mp4"))), Kind::Binary);
        assert_eq!(
            kind(&file("readme", Some("text/plain; charset=utf-8"))),
            Kind::Text
        );
        assert_eq!(
            kind(&file("data.weird", Some("application/octet-stream"))),
            Kind::Unknown
        );
        assert_eq!(kind(&file("LICENSE", None)), Kind::Unknown);
    }

    #[test]
    fn text_is_utf8_without_nul_and_a_cut_character_is_dropped() {
        assert_eq!(as_text(b"hello\n", false), Some("hello\n"));
        assert_eq!(as_text("\u{feff}bom".as_bytes(), false), Some("bom"));
        assert_eq!(as_text(b"PK\x03\x04\0\0binary", false), None);
        assert_eq!(as_text(b"\xff\xfeU\0T\0F\0-\x001\x006\0", false), None);
        let crab = "ok 🦀".as_bytes();
        assert_eq!(as_text(&crab[..crab.len() - 1], true), Some("ok "));
        assert_eq!(
            as_text(&crab[..crab.len() - 1], false),
            None,
            "only a cut may end mid-character"
        );
        assert_eq!(
            as_text(b"\x01\x02\x03\x04abc", false),
            None,
            "mostly control characters"
        );
    }

    #[test]
    fn a_quote_cannot_be_closed_by_the_file_and_says_where_it_was_cut() {
        let q = quoted(
            "a.md",
            "alice's message",
            "see ```rust\nfn x() {}\n```\n",
            None,
        );
        assert_eq!(
            q,
            "\n\nFile a.md from alice's message:\n````\nsee ```rust\nfn x() {}\n```\n````"
        );
        let cut = Cut {
            total_bytes: Some(250_000),
            shown_bytes: 100_000,
        };
        let q = quoted("big.log", "bob's message", "line", Some(cut));
        assert!(
            q.ends_with("line\n… [cut: 250,000 bytes, showing the first 100,000]\n```"),
            "{q}"
        );
        assert_eq!(display_name("a\nb.txt"), "a b.txt");
    }
}
