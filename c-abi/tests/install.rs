//! `install.sh` run as a user runs it, into a temporary prefix; then, against that prefix
//! alone, the consumers of `tests/consumers/`: a C program built with `pkg-config` and a
//! C++ program built with CMake's `find_package(savechain)`, each linked with the shared
//! and with the static library, built and run. Nothing they run finds the source tree: the
//! shared library they load is the prefix's (`ldd` says so).
//!
//! install.sh builds in release into `target/install-sh/`, a target folder of its own so
//! that its build never waits for the lock of the build running the tests (the first run
//! builds everything once; later runs find it built).
//!
//! Needs bash, `cc`, `c++`, `cmake`, `pkg-config` and binutils (Debian: build-essential
//! cmake pkg-config).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

fn repo() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

/// The target folder install.sh builds in: `install-sh/` in the target folder this test
/// was built in (the test binary is `<target>/<profile>/deps/install-<hash>`).
fn install_target() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let target = exe.ancestors().nth(3).unwrap();
    target.join("install-sh")
}

/// The soname, and the file names install.sh gives the shared library.
fn soname() -> String {
    format!("libsavechain.so.{}", savechain_c::SAVECHAIN_ABI_VERSION)
}

fn real_name() -> String {
    format!(
        "libsavechain.so.{}.{}",
        savechain_c::SAVECHAIN_ABI_VERSION,
        env!("CARGO_PKG_VERSION")
    )
}

fn install_sh() -> Command {
    let mut command = Command::new("bash");
    command
        .arg(repo().join("install.sh"))
        .env("CARGO_TARGET_DIR", install_target())
        .env_remove("DESTDIR")
        .current_dir(repo());
    command
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn succeeded(what: &str, output: Output) -> Output {
    assert!(
        output.status.success(),
        "{what} failed ({}):\n{}",
        output.status,
        text(&output)
    );
    output
}

fn run(what: &str, command: &mut Command) -> Output {
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("{what} does not run ({e}): is it installed?"));
    succeeded(what, output)
}

/// The prefix install.sh installed into, once for all the tests of this file.
struct Installed {
    dir: tempfile::TempDir,
    prefix: PathBuf,
}

fn installed() -> &'static Installed {
    static INSTALLED: OnceLock<Installed> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let prefix = dir.path().join("prefix");
        run(
            "install.sh --prefix",
            install_sh().arg("--prefix").arg(&prefix),
        );
        Installed { dir, prefix }
    })
}

/// A folder of its own for one consumer, in the temporary folder, with a copy of
/// `tests/consumers/<name>`: the build reads nothing of the source tree but its sources.
fn consumer(name: &str) -> PathBuf {
    let into = installed().dir.path().join(format!("{name}-{}", unique()));
    std::fs::create_dir(&into).unwrap();
    let from = repo()
        .join("c-abi/tests/consumers")
        .join(name.split('-').next().unwrap());
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), into.join(entry.file_name())).unwrap();
    }
    into
}

fn unique() -> usize {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// A consumer program run as a user runs it: in a folder of its own, with no library path
/// but `library_path` (none for a program that knows where its libraries are), and
/// nothing of cargo's environment. It writes its Lua step into that folder.
fn run_consumer(program: &Path, library_path: Option<&Path>) -> String {
    let steps = tempfile::tempdir().unwrap();
    let mut command = Command::new(program);
    command
        .arg(steps.path())
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .current_dir(steps.path());
    if let Some(path) = library_path {
        command.env("LD_LIBRARY_PATH", path);
    }
    let output = run(&program.display().to_string(), &mut command);
    let out = String::from_utf8(output.stdout).unwrap();
    assert!(
        out.starts_with(&format!("header {}", env!("CARGO_PKG_VERSION"))),
        "{out}"
    );
    assert!(out.contains("\"gold\": 42"), "{out}");
    out
}

/// The libraries `program` needs (`NEEDED` of its dynamic section).
fn needed(program: &Path) -> Vec<String> {
    let output = run("readelf -d", Command::new("readelf").arg("-d").arg(program));
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .filter_map(|line| line.split("Shared library: [").nth(1))
        .map(|rest| rest.trim_end_matches(']').to_string())
        .collect()
}

/// Asserts that `program` loads savechain from the prefix, through its soname, and from
/// nowhere else (ldd, with the same environment as [`run_consumer`]).
fn loads_the_prefix_s_library(program: &Path, library_path: Option<&Path>) {
    assert!(
        needed(program).contains(&soname()),
        "{} needs {:?}, not {}",
        program.display(),
        needed(program),
        soname()
    );
    let mut command = Command::new("ldd");
    command
        .arg(program)
        .env_clear()
        .env("PATH", "/usr/bin:/bin");
    if let Some(path) = library_path {
        command.env("LD_LIBRARY_PATH", path);
    }
    let ldd = String::from_utf8(run("ldd", &mut command).stdout).unwrap();
    let lib = installed().prefix.join("lib");
    let expected = format!("{} => {}/{}", soname(), lib.display(), soname());
    assert!(
        ldd.lines().any(|line| line.trim().starts_with(&expected)),
        "{} does not load {}:\n{ldd}",
        program.display(),
        lib.join(soname()).display()
    );
}

/// Asserts that `program` has savechain inside it: no savechain library among those it
/// loads.
fn links_savechain_statically(program: &Path) {
    let needed = needed(program);
    assert!(
        needed.iter().all(|library| !library.contains("savechain")),
        "{} loads {needed:?}",
        program.display()
    );
}

fn pkg_config(args: &[&str]) -> Vec<String> {
    let output = run(
        "pkg-config",
        Command::new("pkg-config")
            .args(args)
            .arg("savechain")
            .env("PKG_CONFIG_PATH", installed().prefix.join("lib/pkgconfig")),
    );
    String::from_utf8(output.stdout)
        .unwrap()
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

#[test]
fn install_sh_lays_out_the_prefix() {
    let prefix = &installed().prefix;
    for file in [
        "bin/save-upgrade",
        "include/savechain.h",
        "lib/libsavechain.a",
        "lib/pkgconfig/savechain.pc",
        "lib/cmake/savechain/savechainConfig.cmake",
        "lib/cmake/savechain/savechainConfigVersion.cmake",
        "lib/cmake/savechain/savechainTargets.cmake",
        &format!("lib/{}", real_name()),
    ] {
        assert!(prefix.join(file).is_file(), "no {file} in the prefix");
    }
    let lib = prefix.join("lib");
    assert_eq!(
        std::fs::read_link(lib.join(soname())).unwrap(),
        Path::new(&real_name())
    );
    assert_eq!(
        std::fs::read_link(lib.join("libsavechain.so")).unwrap(),
        Path::new(&soname())
    );
    assert_eq!(
        std::fs::read(prefix.join("include/savechain.h")).unwrap(),
        std::fs::read(repo().join("c-abi/include/savechain.h")).unwrap()
    );

    // The shared library names its ABI and exports the calls, nothing of Lua's.
    let shared = lib.join(real_name());
    let dynamic =
        String::from_utf8(run("readelf -d", Command::new("readelf").arg("-d").arg(&shared)).stdout)
            .unwrap();
    assert!(
        dynamic.contains(&format!("Library soname: [{}]", soname())),
        "{dynamic}"
    );
    let symbols = String::from_utf8(
        run(
            "nm -D",
            Command::new("nm")
                .args(["-D", "--defined-only"])
                .arg(&shared),
        )
        .stdout,
    )
    .unwrap();
    assert!(symbols.contains(" savechain_version"), "{symbols}");
    assert!(!symbols.contains(" lua_"), "{symbols}");

    // Stripped: no debug information left, and the shared library under the 5 MB.
    for library in [
        &shared,
        &lib.join("libsavechain.a"),
        &prefix.join("bin/save-upgrade"),
    ] {
        let sections = String::from_utf8(
            run(
                "readelf -S",
                Command::new("readelf").args(["-S", "-W"]).arg(library),
            )
            .stdout,
        )
        .unwrap();
        assert!(
            !sections.contains(".debug_info"),
            "{} keeps debug information",
            library.display()
        );
    }
    let size = std::fs::metadata(&shared).unwrap().len();
    assert!(size < 5_000_000, "the shared library is {size} bytes");

    let pc = std::fs::read_to_string(lib.join("pkgconfig/savechain.pc")).unwrap();
    assert!(
        pc.contains(&format!("prefix={}\n", prefix.display())),
        "{pc}"
    );
    assert!(
        pc.contains(&format!("Version: {}\n", env!("CARGO_PKG_VERSION"))),
        "{pc}"
    );
}

#[test]
fn the_installed_command_runs_from_the_prefix() {
    let output = run(
        "save-upgrade --version",
        Command::new(installed().prefix.join("bin/save-upgrade"))
            .arg("--version")
            .env_clear(),
    );
    assert!(
        text(&output).contains(env!("CARGO_PKG_VERSION")),
        "{}",
        text(&output)
    );
}

#[test]
fn the_completions_and_the_man_page_are_where_shells_and_man_look() {
    let prefix = &installed().prefix;
    for (kind, file) in [
        (
            "complete-bash",
            "share/bash-completion/completions/save-upgrade",
        ),
        ("complete-zsh", "share/zsh/site-functions/_save-upgrade"),
        (
            "complete-fish",
            "share/fish/vendor_completions.d/save-upgrade.fish",
        ),
        ("man", "share/man/man1/save-upgrade.1"),
    ] {
        let installed = std::fs::read(prefix.join(file))
            .unwrap_or_else(|e| panic!("no {file} in the prefix ({e})"));
        let printed = run(
            "save-upgrade --generate",
            Command::new(prefix.join("bin/save-upgrade"))
                .args(["--generate", kind])
                .env_clear(),
        )
        .stdout;
        assert!(
            String::from_utf8_lossy(&installed).contains("save-upgrade"),
            "{file} does not name the command"
        );
        assert!(
            installed == printed,
            "{file} is not what save-upgrade --generate {kind} prints"
        );
    }
}

#[test]
fn a_c_program_built_with_pkg_config_runs_against_the_shared_library() {
    let dir = consumer("c-shared");
    let program = dir.join("consumer");
    let mut args = vec!["-std=c11".to_string(), "-Wall".into(), "-Werror".into()];
    args.push(dir.join("consumer.c").display().to_string());
    args.extend(pkg_config(&["--cflags", "--libs"]));
    run(
        "cc with pkg-config",
        Command::new("cc").args(&args).arg("-o").arg(&program),
    );
    let lib = installed().prefix.join("lib");
    loads_the_prefix_s_library(&program, Some(&lib));
    run_consumer(&program, Some(&lib));
    // The README's advice holds for the installed library: under Valgrind with the
    // suppressions of c-abi/valgrind.supp (which name functions: the install keeps the
    // symbol table), nothing leaks and nothing is misused.
    let steps = tempfile::tempdir().unwrap();
    run(
        "valgrind of the installed library",
        Command::new("valgrind")
            .args([
                "--error-exitcode=9",
                "--leak-check=full",
                "--show-leak-kinds=definite,indirect,possible",
                "--errors-for-leak-kinds=definite,indirect,possible",
            ])
            .arg(format!(
                "--suppressions={}",
                repo().join("c-abi/valgrind.supp").display()
            ))
            .arg(&program)
            .arg(steps.path())
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("LD_LIBRARY_PATH", &lib)
            .current_dir(steps.path()),
    );
}

#[test]
fn a_c_program_built_with_pkg_config_static_runs_alone() {
    let dir = consumer("c-static");
    let program = dir.join("consumer");
    let libs = pkg_config(&["--static", "--libs"]);
    assert!(
        libs.iter().any(|arg| arg == "-lpthread") && libs.iter().any(|arg| arg == "-ldl"),
        "{libs:?}"
    );
    // pkg-config's --static is for a program linked whole (-static): savechain's archive
    // and the system's libraries it needs (Libs.private), nothing loaded at run time.
    // glibc warns that dlopen and getaddrinfo, which the archive holds, would need its
    // shared libraries at run time; a program that calls neither runs alone.
    let mut args = vec!["-std=c11".to_string(), "-Wall".into(), "-Werror".into()];
    args.push(dir.join("consumer.c").display().to_string());
    args.extend(pkg_config(&["--static", "--cflags", "--libs"]));
    args.push("-static".into());
    run(
        "cc -static with pkg-config --static",
        Command::new("cc").args(&args).arg("-o").arg(&program),
    );
    assert_eq!(needed(&program), Vec::<String>::new());
    run_consumer(&program, None);
}

fn cmake_consumer(name: &str, options: &[&str]) -> PathBuf {
    let dir = consumer(name);
    let build = dir.join("build");
    run(
        "cmake (configure)",
        Command::new("cmake")
            .arg("-S")
            .arg(&dir)
            .arg("-B")
            .arg(&build)
            .arg(format!(
                "-DCMAKE_PREFIX_PATH={}",
                installed().prefix.display()
            ))
            .args(options),
    );
    run(
        "cmake --build",
        Command::new("cmake").arg("--build").arg(&build),
    );
    build.join("consumer")
}

#[test]
fn a_cpp_program_built_with_cmake_runs_against_the_shared_library() {
    let program = cmake_consumer("cpp-shared", &[]);
    // CMake gives the program the prefix's lib/ as its run path: no library path needed.
    loads_the_prefix_s_library(&program, None);
    run_consumer(&program, None);
}

#[test]
fn a_cpp_program_built_with_cmake_runs_with_the_static_library() {
    let program = cmake_consumer("cpp-static", &["-DSAVECHAIN_STATIC=ON"]);
    links_savechain_statically(&program);
    run_consumer(&program, None);
}

/// Whether CMake's `find_package(savechain <requested> REQUIRED)` accepts the installed
/// package (its savechainConfigVersion.cmake decides).
fn cmake_accepts(requested: &str) -> bool {
    let dir = consumer("cpp-version");
    let lists = dir.join("CMakeLists.txt");
    let original = std::fs::read_to_string(&lists).unwrap();
    let asking = format!("find_package(savechain {requested} REQUIRED)");
    std::fs::write(
        &lists,
        original.replace("find_package(savechain REQUIRED)", &asking),
    )
    .unwrap();
    let output = Command::new("cmake")
        .arg("-S")
        .arg(&dir)
        .arg("-B")
        .arg(dir.join("build"))
        .arg(format!(
            "-DCMAKE_PREFIX_PATH={}",
            installed().prefix.display()
        ))
        .output()
        .expect("cmake runs");
    if !output.status.success() {
        // Refused for its version, not for anything else.
        assert!(
            text(&output).contains(&format!("version: {}", env!("CARGO_PKG_VERSION"))),
            "{}",
            text(&output)
        );
    }
    output.status.success()
}

#[test]
fn cmake_accepts_the_versions_cargo_s_caret_accepts() {
    let (major, minor, patch) = (
        savechain_c::SAVECHAIN_VERSION_MAJOR,
        savechain_c::SAVECHAIN_VERSION_MINOR,
        savechain_c::SAVECHAIN_VERSION_PATCH,
    );
    assert!(cmake_accepts(&format!("{major}.{minor}")));
    assert!(cmake_accepts(&format!("{major}.{minor}.{patch}")));
    assert!(!cmake_accepts(&format!("{major}.{}", minor + 1)));
    assert!(!cmake_accepts(&format!("{}.0", major + 1)));
    if minor > 0 {
        // An older minor version: another API while 0.x, the same one from 1.0 on.
        assert_eq!(cmake_accepts(&format!("{major}.{}", minor - 1)), major > 0);
    }
}

#[test]
fn cmake_finds_the_package_before_any_language_is_enabled() {
    // `project(x NONE)`: CMAKE_SIZEOF_VOID_P is unset, and the version file's check of the
    // pointer size must not take that for another size.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("CMakeLists.txt"),
        format!(
            "cmake_minimum_required(VERSION 3.16)\nproject(no_language NONE)\n\
             find_package(savechain {}.{} REQUIRED)\n",
            savechain_c::SAVECHAIN_VERSION_MAJOR,
            savechain_c::SAVECHAIN_VERSION_MINOR
        ),
    )
    .unwrap();
    run(
        "cmake (configure, no language)",
        Command::new("cmake")
            .arg("-S")
            .arg(dir.path())
            .arg("-B")
            .arg(dir.path().join("build"))
            .arg(format!(
                "-DCMAKE_PREFIX_PATH={}",
                installed().prefix.display()
            )),
    );
}

#[test]
fn destdir_is_put_before_every_installed_path() {
    let dir = tempfile::tempdir().unwrap();
    let stage = dir.path().join("stage");
    // The build is the one `installed()` made: this run finds it done.
    installed();
    run(
        "DESTDIR=... install.sh --prefix /opt/savechain-test",
        install_sh()
            .env("DESTDIR", &stage)
            .args(["--prefix", "/opt/savechain-test"]),
    );
    let root = stage.join("opt/savechain-test");
    assert!(root.join("lib/libsavechain.a").is_file());
    assert!(root.join("bin/save-upgrade").is_file());
    assert!(root.join("share/man/man1/save-upgrade.1").is_file());
    // The files name the prefix the package will be installed in, not the stage.
    let pc = std::fs::read_to_string(root.join("lib/pkgconfig/savechain.pc")).unwrap();
    assert!(pc.contains("prefix=/opt/savechain-test\n"), "{pc}");
    assert!(!Path::new("/opt/savechain-test").exists());
}

#[test]
fn help_and_unknown_options() {
    let help = run("install.sh --help", install_sh().arg("--help"));
    assert!(text(&help).contains("--prefix DIR"), "{}", text(&help));

    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().join("prefix");
    let refused = install_sh().arg("--prefx").arg(&prefix).output().unwrap();
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused));
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("unknown option '--prefx'"),
        "{}",
        text(&refused)
    );
    assert!(!prefix.exists());
}

#[test]
fn a_failed_build_installs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    // A cargo that fails as a broken build does, first on the PATH.
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let cargo = bin.join("cargo");
    std::fs::write(
        &cargo,
        "#!/bin/sh\necho 'error: could not compile `savechain-c`' >&2\nexit 101\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&cargo, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = std::env::join_paths(std::iter::once(bin.clone()).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .unwrap();

    let prefix = dir.path().join("prefix");
    let output = install_sh()
        .env("PATH", path)
        .arg("--prefix")
        .arg(&prefix)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    assert!(
        text(&output).contains("nothing installed"),
        "{}",
        text(&output)
    );
    assert!(
        text(&output).contains("could not compile"),
        "{}",
        text(&output)
    );
    assert!(!prefix.exists(), "a failed build installed into the prefix");
}

#[test]
fn a_copy_that_fails_leaves_no_link_to_a_missing_library() {
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().join("prefix");
    // Where the real file goes stands a folder the rename cannot replace: its copy fails.
    std::fs::create_dir_all(prefix.join("lib").join(real_name()).join("in-the-way")).unwrap();
    installed();
    let output = install_sh()
        .args(["--prefix"])
        .arg(&prefix)
        .output()
        .unwrap();
    assert!(!output.status.success(), "{}", text(&output));
    // Files go in place before the links: the soname's link, which would point at the
    // library that failed, was never made.
    for link in [soname(), "libsavechain.so".to_string()] {
        assert!(
            std::fs::symlink_metadata(prefix.join("lib").join(&link)).is_err(),
            "lib/{link} was installed though its library was not"
        );
    }
}

/// The files under `dir` whose names end in `.installing`: copies not yet renamed.
fn copies_in_flight(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(copies_in_flight(&path));
        } else if path.to_string_lossy().ends_with(".installing") {
            found.push(path);
        }
    }
    found
}

#[test]
fn a_stop_while_installing_leaves_no_temporary_file() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let dir = tempfile::tempdir().unwrap();
    // A cp that hangs once it has begun a copy into the prefix, as a slow disk would, so
    // that the stop comes mid-install; any other copy is the real one.
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let cp = bin.join("cp");
    std::fs::write(
        &cp,
        "#!/bin/sh\nfor last; do :; done\ncase $last in\n  *.installing) : > \"$last\"; exec sleep 60 ;;\nesac\nexec /bin/cp \"$@\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&cp, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = std::env::join_paths(std::iter::once(bin.clone()).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .unwrap();
    let scratch = dir.path().join("tmp");
    std::fs::create_dir(&scratch).unwrap();
    let prefix = dir.path().join("prefix");
    installed();

    let mut child = install_sh()
        .env("PATH", path)
        .env("TMPDIR", &scratch)
        .arg("--prefix")
        .arg(&prefix)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while copies_in_flight(&prefix).is_empty() {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(120),
            "install.sh never began copying into the prefix"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // A scheduler's stop reaches the whole job: the script and its cp.
    // SAFETY: kill(2) on the process group the child leads.
    assert_eq!(
        unsafe { libc::kill(-(child.id() as i32), libc::SIGTERM) },
        0
    );
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(143), "{status:?}");
    assert_eq!(copies_in_flight(&prefix), Vec::<PathBuf>::new());
    // The scratch folder the files were laid out in went too.
    assert_eq!(std::fs::read_dir(&scratch).unwrap().count(), 0);
}
