//! A command tool that does what its arguments say, for the command-handler tests: one Rust
//! program instead of `python3 -c` scripts, so the tests run wherever the tests are built
//! (a Windows test binary under Wine cannot start a Linux `python3`). `cargo test` builds it
//! next to the test binaries.
//!
//! ```text
//! command_tool double            read {"x": N, ...} on stdin, print {"echo": <input>, "n": 2N}
//! command_tool print TEXT        print TEXT and a newline, leaving stdin unread
//! command_tool write TEXT        write TEXT with no newline
//! command_tool quoted N          print a JSON string of N 'x's
//! command_tool argv ARGS...      print ARGS as a JSON array
//! command_tool env               print the environment as a JSON object
//! command_tool exit CODE [TEXT]  write TEXT to stderr, exit with CODE
//! command_tool abort             die by a signal (SIGABRT on Unix)
//! command_tool sleep MS          sleep MS milliseconds, print nothing
//! command_tool pidfile FILE MS   write this process's id to FILE, then sleep MS milliseconds
//! command_tool close-and-sleep MS  close stdout and stderr, then sleep
//! command_tool flood STREAM      write to stdout or stderr forever
//! command_tool cat FILE          print FILE's text as a JSON string
//! ```

use std::io::{Read, Write};
use std::time::Duration;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize| args.get(i).map(String::as_str).unwrap_or("");
    match arg(0) {
        "double" => {
            let mut input = String::new();
            std::io::stdin().read_to_string(&mut input).expect("stdin");
            let input: serde_json::Value = serde_json::from_str(&input).expect("JSON on stdin");
            let n = input["x"].as_i64().expect("an integer x") * 2;
            println!("{}", serde_json::json!({"echo": input, "n": n}));
        }
        "print" => println!("{}", arg(1)),
        "write" => print!("{}", arg(1)),
        "quoted" => println!("\"{}\"", "x".repeat(arg(1).parse().expect("a count"))),
        "argv" => println!("{}", serde_json::json!(args[1..])),
        "env" => {
            let vars: serde_json::Map<String, serde_json::Value> = std::env::vars()
                .map(|(k, v)| (k, serde_json::Value::String(v)))
                .collect();
            println!("{}", serde_json::Value::Object(vars));
        }
        "exit" => {
            eprint!("{}", arg(2));
            std::process::exit(arg(1).parse().expect("an exit code"));
        }
        "abort" => std::process::abort(),
        "sleep" => sleep(arg(1)),
        "pidfile" => {
            std::fs::write(arg(1), std::process::id().to_string()).expect("a writable file");
            sleep(arg(2));
        }
        "close-and-sleep" => {
            close_stdout_and_stderr();
            sleep(arg(1));
        }
        "flood" => {
            let chunk = vec![b'y'; 65536];
            loop {
                let written = if arg(1) == "stderr" {
                    std::io::stderr().write_all(&chunk)
                } else {
                    std::io::stdout().write_all(&chunk)
                };
                if written.is_err() {
                    return;
                }
            }
        }
        "cat" => {
            let text = std::fs::read_to_string(arg(1)).expect("a readable file");
            println!("{}", serde_json::Value::String(text));
        }
        other => {
            eprintln!("command_tool: unknown command {other:?}");
            std::process::exit(2);
        }
    }
}

fn sleep(ms: &str) {
    std::thread::sleep(Duration::from_millis(ms.parse().expect("milliseconds")));
}

#[cfg(unix)]
fn close_stdout_and_stderr() {
    // SAFETY: nothing in this process uses the two descriptors afterwards.
    unsafe {
        libc::close(1);
        libc::close(2);
    }
}

#[cfg(windows)]
fn close_stdout_and_stderr() {
    use windows_sys::Win32::Foundation::CloseHandle;
    use windows_sys::Win32::System::Console::{GetStdHandle, STD_ERROR_HANDLE, STD_OUTPUT_HANDLE};
    // SAFETY: nothing in this process uses the two handles afterwards.
    unsafe {
        CloseHandle(GetStdHandle(STD_OUTPUT_HANDLE));
        CloseHandle(GetStdHandle(STD_ERROR_HANDLE));
    }
}
