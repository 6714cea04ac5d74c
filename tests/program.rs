//! The drift-correction program as a user runs it: its exit status and, off a terminal, its
//! plain log lines and summary table. `cargo test` builds the examples before it runs the
//! tests; the program is found beside this test's own binary.

use std::path::PathBuf;
use std::process::Command;

fn program() -> PathBuf {
    let exe = std::env::current_exe().expect("the test's own path");
    // target/<profile>/deps/program-HASH -> target/<profile>/examples/phase_correlation
    let dir = exe
        .parent()
        .and_then(|d| d.parent())
        .expect("target/<profile>");
    let path = dir.join("examples").join("phase_correlation");
    assert!(
        path.is_file(),
        "{} is missing: run the tests with `cargo test` (which builds the examples) or \
         build it with `cargo build --example phase_correlation` in the same profile",
        path.display()
    );
    path
}

fn fixture(name: &str) -> String {
    format!("{}/tests/fixtures/movie/{name}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn the_exit_status_says_whether_every_movie_was_aligned() {
    let out = std::env::temp_dir().join(format!("ufunc-program-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let run = |movies: &[&str], options: &[&str]| {
        let output = Command::new(program())
            .args(movies.iter().map(|m| fixture(m)))
            .args(options)
            .args(["--upsample", "1", "--out"])
            .arg(&out)
            .output()
            .expect("the program runs");
        let text = |b: Vec<u8>| String::from_utf8(b).expect("UTF-8 output");
        (
            output.status.code(),
            text(output.stdout),
            text(output.stderr),
        )
    };
    let (code, stdout, stderr) = run(&["movie_u16.npy"], &[]);
    assert_eq!(code, Some(0), "{stderr}");
    // Off a terminal: one plain line per movie (no progress bar), then the summary table.
    assert!(
        stderr.contains("[1/1] ") && stderr.contains("movie_u16.npy: done in "),
        "{stderr}"
    );
    assert!(
        !stderr.contains('\r'),
        "a progress bar was drawn: {stderr:?}"
    );
    assert!(stdout.contains("movie_u16.npy"), "{stdout}");
    // One bad movie among good ones: the others still run, the status is a failure.
    let (code, stdout, stderr) = run(&["bad_mode.mrc", "movie_u8_lzw.tif"], &[]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("bad_mode.mrc") && stderr.contains("unknown MRC mode 7"),
        "{stderr}"
    );
    assert!(stderr.contains("movie_u8_lzw.tif: done in "), "{stderr}");
    assert!(
        stdout.contains("bad_mode.mrc") && stdout.contains("movie_u8_lzw.tif"),
        "{stdout}"
    );
    // An option the program refuses: clap's usage error, status 2, nothing run.
    let (code, _, stderr) = run(&["movie_u16.npy"], &["--force", "--iterations", "0"]);
    assert_eq!(code, Some(2), "{stderr}");
    std::fs::remove_dir_all(&out).unwrap();
}
