//! The Debian package (README, "Run it as a service"): built by
//! `scripts/build-deb.sh` from the debug binary as the README's first step,
//! read back with `dpkg-deb`, extracted into a scratch root where its
//! maintainer script runs, its settings and reflexes checked and its first
//! start tried by the binary it ships, its unit verified and rated by
//! `systemd-analyze`, and installed twice with `dpkg --root` (an upgrade
//! keeps the operator's edits). No systemd runs here: `systemctl` is not.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use crate::support::readme;

const REPO: &str = env!("CARGO_MANIFEST_DIR");

fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Runs a command that must succeed; its stdout.
fn ok(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?}: {}\n{}",
        out.status,
        text(&out.stderr)
    );
    text(&out.stdout)
}

fn shell(line: &str) -> Output {
    Command::new("bash")
        .arg("-c")
        .arg(line)
        .current_dir(REPO)
        .output()
        .unwrap()
}

/// The README's service steps, one command a line.
fn steps() -> Vec<String> {
    readme::block("From a fresh Debian VPS", "sh")
        .lines()
        .map(str::to_string)
        .collect()
}

/// `Key=value` lines of a unit file (a repeated key keeps its last value).
fn unit_keys(unit: &str) -> BTreeMap<String, String> {
    unit.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

/// The paths in the first column of the README's "What the package installs" table.
fn readme_paths() -> Vec<String> {
    let readme = readme::text();
    let start = readme.find("What the package installs:").unwrap();
    readme[start..]
        .lines()
        .skip_while(|l| !l.starts_with("| `"))
        .take_while(|l| l.starts_with('|'))
        .map(|l| l.split('`').nth(1).unwrap().to_string())
        .collect()
}

/// `dpkg-deb -c`: each path (without the leading `.`) with its mode string.
fn contents(deb: &Path) -> BTreeMap<String, String> {
    ok(Command::new("dpkg-deb").arg("-c").arg(deb))
        .lines()
        .map(|l| {
            let mut fields = l.split_whitespace();
            let mode = fields.next().unwrap().to_string();
            let path = fields.nth(4).unwrap().trim_start_matches('.').to_string();
            (path, mode)
        })
        .collect()
}

#[test]
fn the_package_builds_installs_its_files_where_the_readme_says_and_its_unit_verifies() {
    for tool in ["dpkg-deb", "jq"] {
        if !have(tool) {
            eprintln!("SKIPPED: {tool} is not installed (Debian: apt-get install {tool})");
            return;
        }
    }
    let scratch = tempfile::tempdir().unwrap();
    let deb = build_as_the_readme_says(&scratch.path().join("out"));
    control_fields(&deb);
    let files = contents(&deb);
    for path in readme_paths() {
        if path.starts_with("/var/") {
            continue; // made by systemd at the first start, not shipped
        }
        assert!(files.contains_key(&path), "{path} is not in the package");
    }
    assert!(
        files.contains_key("/usr/share/doc/ambient/copyright"),
        "Debian policy 12.5"
    );
    assert_eq!(files["/usr/bin/ambient"], "-rwxr-xr-x");
    assert_eq!(files["/etc/ambient/env"], "-rw-------", "the secrets file");

    let root = scratch.path().join("root");
    ok(Command::new("dpkg-deb").arg("-x").arg(&deb).arg(&root));
    ok(Command::new("dpkg-deb")
        .arg("-e")
        .arg(&deb)
        .arg(root.join("DEBIAN")));
    let unit =
        std::fs::read_to_string(root.join("usr/lib/systemd/system/ambient.service")).unwrap();
    let keys = unit_keys(&unit);
    let settings = unit_and_settings_agree(&root, &keys);
    postinst_makes_the_user(&root, &keys);
    packaged_settings_and_defaults_check(&root, &settings);
    first_start_and_status(&root, &keys, &settings);
    verify_unit(&root, &unit, scratch.path());
    install_and_upgrade(&deb, &scratch.path().join("installed"));
}

/// Runs the README's build step with the debug binary (CI builds no
/// release) into `out`; the package's path. The copy and the install steps
/// must name the file it made.
fn build_as_the_readme_says(out: &Path) -> PathBuf {
    let steps = steps();
    let build = &steps[0];
    assert_eq!(build, "scripts/build-deb.sh");
    let line = format!(
        "{build} --fast --output {} {}",
        out.display(),
        env!("CARGO_BIN_EXE_ambient")
    );
    let made = shell(&line);
    assert!(made.status.success(), "{line}: {}", text(&made.stderr));
    let deb = PathBuf::from(text(&made.stdout).trim());
    let name = deb.file_name().unwrap().to_str().unwrap();
    let arch = ok(Command::new("dpkg").arg("--print-architecture"));
    let version = env!("CARGO_PKG_VERSION");
    assert_eq!(name, format!("ambient_{version}-1_{}.deb", arch.trim()));
    assert_eq!(steps[1], format!("scp target/debian/{name} root@your-vps:"));
    assert_eq!(steps[2], format!("apt install ./{name}"));
    deb
}

/// `dpkg-deb -I`: the name, Cargo.toml's version and description, and dependencies that
/// cover what the binary links.
fn control_fields(deb: &Path) {
    let info = ok(Command::new("dpkg-deb").arg("-I").arg(deb));
    assert!(info.contains(" Package: ambient\n"), "{info}");
    let version = format!(" Version: {}-1\n", env!("CARGO_PKG_VERSION"));
    assert!(info.contains(&version), "{info}");
    let depends = info
        .lines()
        .find_map(|l| l.trim().strip_prefix("Depends: "))
        .unwrap_or_else(|| panic!("no Depends: {info}"));
    assert!(depends.contains("libopus0"), "{depends}");
    // Debian's synopsis is one line under 80 characters; cargo-deb cuts a
    // longer Cargo.toml description mid-word, and apt lists show the cut.
    let synopsis = info
        .lines()
        .find_map(|l| l.trim().strip_prefix("Description: "))
        .unwrap_or_else(|| panic!("no Description: {info}"));
    assert!(
        synopsis.chars().count() < 80,
        "synopsis too long: {synopsis}"
    );
    assert_eq!(synopsis, env!("CARGO_PKG_DESCRIPTION"), "{info}");
    every_linked_library_is_a_dependency(depends);
    glibc_is_new_enough(depends);
}

/// The unit reads the files the package ships (settings and secrets kept
/// across upgrades as conffiles, no secret shipped), keeps its data where
/// the settings say, and is hardened; the packaged settings.
fn unit_and_settings_agree(root: &Path, keys: &BTreeMap<String, String>) -> Value {
    let read = |p: &str| std::fs::read_to_string(root.join(p.trim_start_matches('/'))).unwrap();
    assert_eq!(
        keys["ExecStart"],
        "/usr/bin/ambient run --settings /etc/ambient/settings.json"
    );
    assert_eq!(keys["EnvironmentFile"], "/etc/ambient/env");
    let conffiles = read("/DEBIAN/conffiles");
    for conf in ["/etc/ambient/settings.json", "/etc/ambient/env"] {
        assert!(conffiles.lines().any(|l| l == conf), "{conf}: {conffiles}");
    }
    assert!(
        read("/etc/ambient/env")
            .lines()
            .all(|l| l.is_empty() || l.starts_with('#')),
        "the package ships no secret"
    );
    let settings: Value = serde_json::from_str(&read("/etc/ambient/settings.json")).unwrap();
    let data_dir = format!("/var/lib/{}", keys["StateDirectory"]);
    assert_eq!(settings["storage"]["dataDir"], data_dir.as_str());
    assert_eq!(keys["WorkingDirectory"], data_dir);
    for (key, value) in [
        ("Restart", "on-failure"),
        ("ProtectSystem", "strict"),
        ("ProtectHome", "yes"),
        ("PrivateTmp", "yes"),
        ("NoNewPrivileges", "yes"),
        ("RestrictAddressFamilies", "AF_UNIX AF_INET AF_INET6"),
    ] {
        assert_eq!(keys.get(key).map(String::as_str), Some(value), "{key}");
    }
    settings
}

/// The maintainer script, run into the scratch root, creates the unit's
/// user, at home in the data directory.
fn postinst_makes_the_user(root: &Path, keys: &BTreeMap<String, String>) {
    if !have("systemd-sysusers") {
        eprintln!(
            "SKIPPED: systemd-sysusers is not installed (Debian: the systemd package): postinst not run"
        );
        return;
    }
    ok(Command::new("sh")
        .arg(root.join("DEBIAN/postinst"))
        .arg("configure")
        .env("DPKG_ROOT", root));
    let passwd = std::fs::read_to_string(root.join("etc/passwd")).unwrap();
    let user = passwd
        .lines()
        .find(|l| l.starts_with(&format!("{}:", keys["User"])))
        .unwrap_or_else(|| panic!("no user {} in {passwd}", keys["User"]));
    let home = format!("/var/lib/{}", keys["StateDirectory"]);
    assert_eq!(user.split(':').nth(5), Some(home.as_str()), "{user}");
}

/// The packaged binary accepts the packaged settings, and the folders they
/// name hold every shipped prompt and reflex, which the binary accepts too.
fn packaged_settings_and_defaults_check(root: &Path, settings: &Value) {
    let bin = root.join("usr/bin/ambient");
    let check = ok(Command::new(&bin)
        .args(["settings", "check"])
        .arg(root.join("etc/ambient/settings.json")));
    assert!(check.contains(": OK"), "{check}");
    let folder = |v: &Value| root.join(v.as_str().unwrap().trim_start_matches('/'));
    let prompts = folder(&settings["executive"]["promptsDir"]);
    let reflexes = folder(&settings["reflexes"]["dir"]);
    let mut shipped = 0;
    for (dir, repo_dir) in [(&prompts, "prompts"), (&reflexes, "reflexes")] {
        for entry in std::fs::read_dir(Path::new(REPO).join(repo_dir)).unwrap() {
            let file = entry.unwrap().file_name();
            assert!(dir.join(&file).is_file(), "{file:?} is not in {dir:?}");
            shipped += usize::from(repo_dir == "reflexes");
        }
    }
    let said = ok(Command::new(&bin)
        .args(["reflexes", "check"])
        .arg(&reflexes));
    assert!(
        said.contains(&format!("{shipped} reflex(es) ok, 0 problem(s)")),
        "{said}"
    );
}

/// `dpkg -i` into a scratch root (its maintainer script run there through
/// `DPKG_ROOT`): the user is made, and installing over it again — an upgrade —
/// keeps the operator's settings and secrets, as the README says.
fn install_and_upgrade(deb: &Path, root: &Path) {
    if !have("systemd-sysusers") {
        eprintln!(
            "SKIPPED: systemd-sysusers is not installed, which postinst runs: no scratch-root install"
        );
        return;
    }
    if ok(Command::new("id").arg("-u")).trim() != "0" {
        eprintln!("SKIPPED: dpkg installs only as root: the scratch-root install was not tried");
        return;
    }
    std::fs::create_dir_all(root.join("var/lib/dpkg/updates")).unwrap();
    std::fs::create_dir_all(root.join("var/lib/dpkg/info")).unwrap();
    std::fs::create_dir_all(root.join("etc")).unwrap();
    std::fs::write(root.join("var/lib/dpkg/status"), "").unwrap();
    let install = || {
        // The scratch root has none of the dependencies; the host is not touched.
        ok(Command::new("dpkg")
            .arg(format!("--root={}", root.display()))
            .args([
                "--force-script-chrootless",
                "--force-depends",
                "--log=/dev/null",
                "-i",
            ])
            .arg(deb))
    };
    install();
    let passwd = std::fs::read_to_string(root.join("etc/passwd")).unwrap();
    assert!(passwd.starts_with("ambient:"), "{passwd}");

    let settings = root.join("etc/ambient/settings.json");
    let env = root.join("etc/ambient/env");
    let edited = r#"{"storage": {"dataDir": "/var/lib/ambient"}, "bot": {"name": "flint"}}"#;
    std::fs::write(&settings, edited).unwrap();
    std::fs::write(&env, "DISCORD_TOKEN=kept-across-upgrades\n").unwrap();
    let again = install();
    assert!(
        again.contains(&format!("over ({}", env!("CARGO_PKG_VERSION"))),
        "an upgrade: {again}"
    );
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), edited);
    assert_eq!(
        std::fs::read_to_string(&env).unwrap(),
        "DISCORD_TOKEN=kept-across-upgrades\n"
    );
}

/// What the operator meets first, in the scratch root (the packaged settings'
/// absolute paths moved into it): the unit's ExecStart with the environment
/// file as shipped stops saying which secret to set, and the README's last
/// step, `ambient status` on the packaged settings, reads the data directory.
fn first_start_and_status(root: &Path, keys: &BTreeMap<String, String>, settings: &Value) {
    let rebase = |p: &str| root.join(p.trim_start_matches('/'));
    let mut moved = settings.clone();
    for section in moved.as_object_mut().unwrap().values_mut() {
        for value in section.as_object_mut().unwrap().values_mut() {
            if let Some(path) = value.as_str().filter(|p| p.starts_with('/')) {
                *value = Value::from(rebase(path).to_str().unwrap());
            }
        }
    }
    let settings_file = root.join("moved-settings.json");
    std::fs::write(&settings_file, moved.to_string()).unwrap();
    let data_dir = rebase(keys["WorkingDirectory"].as_str());
    std::fs::create_dir_all(&data_dir).unwrap(); // systemd's StateDirectory=

    let mut argv = keys["ExecStart"].split_whitespace().map(|a| match a {
        "/usr/bin/ambient" => rebase(a).into_os_string(),
        "/etc/ambient/settings.json" => settings_file.clone().into_os_string(),
        _ => a.into(),
    });
    let mut start = Command::new(argv.next().unwrap());
    start.args(argv).current_dir(&data_dir).env_clear();
    let env = std::fs::read_to_string(rebase(&keys["EnvironmentFile"])).unwrap();
    for (name, value) in env
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once('='))
    {
        start.env(name, value);
    }
    let out = start.output().unwrap();
    assert!(!out.status.success());
    let said = text(&out.stderr);
    assert!(said.contains("DISCORD_TOKEN is not set"), "{said}");

    let status = readme::block("From a fresh Debian VPS", "sh")
        .lines()
        .find_map(|l| l.strip_prefix("runuser -u ambient -- ambient "))
        .unwrap()
        .replace(
            "/etc/ambient/settings.json",
            settings_file.to_str().unwrap(),
        );
    let shown = ok(Command::new(rebase("/usr/bin/ambient"))
        .args(status.split_whitespace())
        .current_dir(&data_dir));
    let data = format!(
        "data in {}",
        rebase(settings["storage"]["dataDir"].as_str().unwrap()).display()
    );
    assert!(shown.contains(&data), "{shown}");
}

/// `systemd-analyze verify` on the unit, its ExecStart pointed at the
/// extracted binary (verify checks that it exists and is executable; the CI
/// host has no /usr/bin/ambient), and its rating by `systemd-analyze security`.
fn verify_unit(root: &Path, unit: &str, scratch: &Path) {
    if !have("systemd-analyze") {
        eprintln!("SKIPPED: systemd-analyze is not installed: the unit was not verified");
        return;
    }
    let dir = scratch.join("unit");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("ambient.service");
    let bin = root.join("usr/bin/ambient");
    std::fs::write(
        &file,
        unit.replace("/usr/bin/ambient", bin.to_str().unwrap()),
    )
    .unwrap();
    let out = Command::new("systemd-analyze")
        .arg("verify")
        .arg(&file)
        .output()
        .unwrap();
    let said = text(&out.stderr);
    assert!(out.status.success(), "systemd-analyze verify: {said}");
    // Verify warns (and still succeeds) about unknown keys and bad values.
    let about_ours: Vec<&str> = said.lines().filter(|l| l.contains("ambient")).collect();
    assert!(about_ours.is_empty(), "systemd-analyze verify: {said}");

    let out = Command::new("systemd-analyze")
        .args(["security", "--offline=yes"])
        .arg(&file)
        .output()
        .unwrap();
    if !out.status.success() {
        eprintln!(
            "SKIPPED: systemd-analyze security --offline is not supported here (systemd 250 or newer): {}",
            text(&out.stderr).trim()
        );
        return;
    }
    let report = text(&out.stdout) + &text(&out.stderr);
    let rated = report
        .lines()
        .find_map(|l| l.split_once("Overall exposure level for ambient.service: "))
        .map(|(_, r)| r.split_whitespace().next().unwrap().to_string())
        .unwrap_or_else(|| panic!("no rating: {report}"));
    let readme = readme::text();
    let said = format!("`systemd-analyze security ambient` rates it {rated} (\"OK\")");
    assert!(readme.contains(&said), "the README should say: {said}");
}

/// Every shared library the binary needs comes from a package the package depends on.
fn every_linked_library_is_a_dependency(depends: &str) {
    let needed = ok(Command::new("readelf").args(["-d", env!("CARGO_BIN_EXE_ambient")]));
    let wanted: Vec<&str> = depends
        .split(',')
        .map(|d| d.split_whitespace().next().unwrap())
        .collect();
    for lib in needed
        .lines()
        .filter(|l| l.contains("(NEEDED)"))
        .filter_map(|l| l.split('[').nth(1)?.split(']').next())
    {
        // A whole-path pattern: `libc.so.6` alone also matches libc6-dev's gdb script.
        let out = Command::new("dpkg")
            .args(["-S", &format!("*/{lib}")])
            .output()
            .unwrap();
        if !out.status.success() {
            eprintln!(
                "SKIPPED: dpkg does not know which package has {lib}: dependencies not checked"
            );
            return;
        }
        let owners = text(&out.stdout);
        assert!(
            owners
                .lines()
                .any(|l| wanted.contains(&l.split(':').next().unwrap())),
            "{lib} comes from {owners}, which Depends ({depends}) does not name"
        );
    }
}

/// The libc6 version Depends asks for is at least the newest glibc symbol
/// version the binary uses (a binary built on a newer Debian needs more).
fn glibc_is_new_enough(depends: &str) {
    let symbols = ok(Command::new("objdump").args(["-T", env!("CARGO_BIN_EXE_ambient")]));
    let version = |v: &str| -> Vec<u32> { v.split('.').map(|n| n.parse().unwrap()).collect() };
    let needed = symbols
        .split("GLIBC_")
        .skip(1)
        .filter_map(|rest| {
            let v: String = rest
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.')
                .collect();
            (!v.is_empty()).then(|| version(v.trim_end_matches('.')))
        })
        .max()
        .unwrap_or_else(|| panic!("no glibc symbol versions in objdump -T"));
    let asked = depends
        .split(',')
        .find_map(|d| d.trim().strip_prefix("libc6 (>= ")?.strip_suffix(')'))
        .unwrap_or_else(|| panic!("Depends names no libc6 (>= …): {depends}"));
    assert!(
        version(asked) >= needed,
        "the binary needs glibc {needed:?}, Depends asks for libc6 (>= {asked})"
    );
}
