//! Every limit, tried by code that means to break it; the host stays up and says which limit hit.

use codecell::{GuestKind, LimitKind, Limits, Outcome, Status};
use codecell_tests::{run, run_fueled, run_with};
use std::time::{Duration, Instant};

codecell_tests::for_each_guest! {
    fn limits() -> Limits {
        Limits::default()
    }

    /// `deadline`, with fuel for seconds of work: ample, but finite, so that without yields a
    /// busy run would end by fuel instead of hanging.
    fn fuel_to_spare(deadline: Duration) -> Limits {
        Limits {
            deadline,
            fuel: 50_000_000_000,
            ..limits()
        }
    }

    /// Asserts that a busy run was stopped by its deadline, not before it and soon after it.
    fn assert_stopped_at_deadline(outcome: &Outcome, took: Duration, deadline: Duration) {
        assert_eq!(outcome.limit(), Some(LimitKind::Deadline), "{outcome:#?}");
        assert!(took >= deadline, "took {took:?}");
        assert!(took < deadline + Duration::from_millis(300), "took {took:?}");
    }

    #[tokio::test]
    async fn busy_loop_ends_by_fuel_or_deadline_within_deadline_plus_one_second() {
        let l = Limits {
            deadline: Duration::from_millis(1500),
            ..limits()
        };
        let started = Instant::now();
        let outcome = run_with(GUEST, "while True:\n    pass", &l).await;
        let took = started.elapsed();
        assert_eq!(outcome.status(), Status::Limit, "{outcome:#?}");
        assert!(matches!(
            outcome.limit(),
            Some(LimitKind::Fuel | LimitKind::Deadline)
        ));
        assert!(took < l.deadline + Duration::from_secs(1), "took {took:?}");
    }

    /// With fuel to spare, a busy guest on a fuel-metered engine is stopped by the wall clock,
    /// checked each time it yields (every 10 million units of fuel), close to its deadline.
    #[tokio::test]
    async fn a_busy_guest_with_fuel_to_spare_is_stopped_at_its_deadline() {
        let l = fuel_to_spare(Duration::from_millis(400));
        let started = Instant::now();
        let outcome = run_fueled(GUEST, "x = 0\nwhile True:\n    x += 1", &l).await;
        assert_stopped_at_deadline(&outcome, started.elapsed(), l.deadline);
        assert!(outcome.fuel_used > 10_000_000, "it ran: {}", outcome.fuel_used);
    }

    /// The default engine meters by epoch: no fuel budget at all, and a busy guest is stopped
    /// at its deadline, close to it, with `fuel_used` reported as 0 (nothing was counted).
    #[tokio::test]
    async fn an_epoch_metered_busy_guest_is_stopped_at_its_deadline_whatever_its_fuel() {
        let l = Limits {
            deadline: Duration::from_millis(400),
            fuel: 1,
            ..limits()
        };
        let started = Instant::now();
        let outcome = run_with(GUEST, "x = 0\nwhile True:\n    x += 1", &l).await;
        assert_stopped_at_deadline(&outcome, started.elapsed(), l.deadline);
        assert_eq!(outcome.fuel_used, 0, "{outcome:#?}");
    }

    /// The default limits under fuel metering: the deadline, not the fuel, ends a busy run
    /// (fuel 3e11 is 20–40 s of compute here), so the documented deadline is what it meets.
    /// The deadline is shortened to keep the test fast; the fuel is the default.
    #[tokio::test]
    async fn the_default_fuel_outlasts_the_deadline() {
        let l = Limits {
            deadline: Duration::from_millis(600),
            ..limits()
        };
        let outcome = run_fueled(GUEST, "while True:\n    pass", &l).await;
        assert_eq!(outcome.limit(), Some(LimitKind::Deadline), "{outcome:#?}");
        assert!(outcome.fuel_used < Limits::default().fuel, "{outcome:#?}");
    }

    /// A busy guest yields to the async runtime: on a single-threaded runtime a timer set
    /// beside it still fires on time, long before the guest's deadline.
    #[tokio::test(flavor = "current_thread")]
    async fn a_busy_guest_does_not_starve_other_tasks() {
        let l = fuel_to_spare(Duration::from_millis(800));
        for engine in [codecell_tests::engine(GUEST), codecell_tests::fuel_engine(GUEST)] {
            let started = Instant::now();
            let timer = tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(50)).await;
                started.elapsed()
            });
            let outcome = engine
                .run_snippet("while True:\n    pass", None, &l)
                .await
                .expect("the host itself does not fail");
            let metering = engine.metering();
            assert_eq!(outcome.limit(), Some(LimitKind::Deadline), "{metering:?}: {outcome:#?}");
            let woke = timer.await.expect("timer task");
            assert!(woke < Duration::from_millis(400), "{metering:?}: the timer fired after {woke:?}");
        }
    }

    /// Guards the parked epoch ticker: an engine that sat idle (its ticker parked, a warm
    /// instance waiting) still stops the next busy run, on the warm instance, at its deadline.
    #[tokio::test]
    async fn a_busy_run_on_an_engine_that_sat_idle_is_stopped_at_its_deadline() {
        let engine = codecell::Engine::builder()
            .guest(GUEST)
            .warm_instance(true)
            .build()
            .expect("the guest is built");
        let first = engine.run_snippet("print(1)", None, &limits()).await.expect("runs");
        assert_eq!(first.status(), Status::Ok, "{first:#?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
        let l = Limits {
            deadline: Duration::from_millis(400),
            ..limits()
        };
        let started = Instant::now();
        let outcome = engine
            .run_snippet("x = 0\nwhile True:\n    x += 1", None, &l)
            .await
            .expect("the host itself does not fail");
        assert_stopped_at_deadline(&outcome, started.elapsed(), l.deadline);
    }

    #[tokio::test]
    async fn fuel_runs_out() {
        let l = Limits {
            fuel: 50_000_000,
            ..limits()
        };
        let outcome = run_fueled(GUEST, "x = 0\nwhile True:\n    x += 1", &l).await;
        assert_eq!(outcome.limit(), Some(LimitKind::Fuel), "{outcome:#?}");
        assert_eq!(outcome.error().cloned().unwrap().kind, "OutOfFuel");
        assert!(
            outcome.fuel_used >= 50_000_000 - 1_000,
            "fuel_used {}",
            outcome.fuel_used
        );
    }

    #[tokio::test]
    async fn sleep_is_cut_by_the_deadline() {
        let l = Limits {
            deadline: Duration::from_millis(1000),
            ..limits()
        };
        let started = Instant::now();
        let outcome = run_with(GUEST, "import time\ntime.sleep(3600)", &l).await;
        let took = started.elapsed();
        assert_eq!(outcome.status(), Status::Limit, "{outcome:#?}");
        assert_eq!(outcome.limit(), Some(LimitKind::Deadline));
        assert!(took < Duration::from_secs(2), "took {took:?}");
    }

    #[tokio::test]
    async fn slow_tool_is_cut_by_the_deadline() {
        // The text tools are commands with a 5 s timeout; the run's deadline is shorter.
        let l = Limits {
            deadline: Duration::from_millis(300),
            ..limits()
        };
        let code = "import time\nwhile True:\n    call_tool('text', 'stats', text='x')";
        let started = Instant::now();
        let outcome = run_with(GUEST, code, &l).await;
        assert_eq!(outcome.limit(), Some(LimitKind::Deadline), "{outcome:#?}");
        assert!(started.elapsed() < Duration::from_secs(2));
    }

    #[tokio::test]
    async fn one_large_allocation_hits_the_memory_cap() {
        let outcome = run(GUEST, "data = bytearray(2**30)\nprint(len(data))").await;
        assert_eq!(outcome.status(), Status::Limit, "{outcome:#?}");
        assert_eq!(outcome.limit(), Some(LimitKind::Memory));
        assert!(outcome.stdout.is_empty());
    }

    #[tokio::test]
    async fn gradual_growth_hits_the_memory_cap() {
        let l = Limits {
            memory_bytes: 96 << 20,
            ..limits()
        };
        let outcome = run_with(GUEST,
            "chunks = []\nwhile True:\n    chunks.append(bytearray(4 * 2**20))",
            &l,
        )
        .await;
        assert_eq!(outcome.limit(), Some(LimitKind::Memory), "{outcome:#?}");
    }

    #[tokio::test]
    async fn a_guest_that_catches_memory_error_may_carry_on() {
        let code = "try:\n    b = bytearray(2**30)\nexcept MemoryError:\n    print('recovered')";
        let outcome = run(GUEST, code).await;
        assert_eq!(outcome.status(), Status::Ok, "{outcome:#?}");
        assert_eq!(outcome.stdout.trim(), "recovered");
    }

    /// 100 MB of output, as one string where the guest can hold one under the memory cap
    /// (RustPython's 40 MB snapshot leaves too little: there it is 100 prints of 1 MB).
    #[tokio::test]
    async fn printing_100_mb_is_truncated_at_the_cap() {
        let l = Limits {
            max_output_bytes: 4096,
            ..limits()
        };
        let code = match GUEST {
            GuestKind::RustPython => "for _ in range(100):\n    print('x' * 1_000_000, end='')",
            _ => "print('x' * 100_000_000)",
        };
        let outcome = run_with(GUEST, code, &l).await;
        assert!(outcome.truncated, "{outcome:#?}");
        assert!(
            outcome.stdout.len() <= 4096,
            "stdout is {} bytes",
            outcome.stdout.len()
        );
        assert_eq!(outcome.limit(), Some(LimitKind::Output));
    }

    #[tokio::test]
    async fn output_before_the_cap_is_kept_in_order() {
        let l = Limits {
            max_output_bytes: 100,
            ..limits()
        };
        let outcome = run_with(GUEST, "for i in range(1000):\n    print(i)", &l).await;
        assert!(outcome.truncated);
        assert!(
            outcome.stdout.starts_with("0\n1\n2\n3\n"),
            "{}",
            outcome.stdout
        );
        assert!(outcome.stdout.len() <= 100);
    }

    #[tokio::test]
    async fn output_cap_holds_for_multibyte_text() {
        let l = Limits {
            max_output_bytes: 1001,
            ..limits()
        };
        let outcome = run_with(GUEST, "print('é' * 10_000)", &l).await;
        assert!(outcome.truncated);
        assert!(outcome.stdout.len() <= 1001);
        assert!(outcome.stdout.chars().all(|c| c == 'é'));
    }

    #[tokio::test]
    async fn output_under_the_cap_is_not_truncated() {
        let outcome = run(GUEST, "print('hello')").await;
        assert_eq!(outcome.stdout, "hello\n");
        assert!(!outcome.truncated);
        assert_eq!(outcome.status(), Status::Ok);
    }

    #[tokio::test]
    async fn a_million_tool_calls_hit_the_tool_call_limit() {
        let code = "for i in range(1_000_000):\n    try:\n        call_tool('units', 'nope')\n    except ToolError:\n        pass";
        let outcome = run(GUEST, code).await;
        assert_eq!(outcome.limit(), Some(LimitKind::ToolCalls), "{outcome:#?}");
        assert_eq!(outcome.tool_calls.len(), limits().max_tool_calls as usize);
    }

    #[tokio::test]
    async fn the_tool_call_limit_cannot_be_caught() {
        let l = Limits {
            max_tool_calls: 3,
            ..limits()
        };
        let code = "n = 0\nfor i in range(10):\n    try:\n        call_tool('units', 'nope')\n    except BaseException:\n        n += 1\nprint('survived', n)";
        let outcome = run_with(GUEST, code, &l).await;
        assert_eq!(outcome.limit(), Some(LimitKind::ToolCalls), "{outcome:#?}");
        assert!(!outcome.stdout.contains("survived"));
    }

    #[tokio::test]
    async fn oversized_tool_arguments_are_refused_before_the_handler() {
        let l = Limits {
            max_tool_args_bytes: 1000,
            ..limits()
        };
        let outcome = run_with(GUEST, "call_tool('text', 'stats', text='a' * 5000)", &l).await;
        assert_eq!(outcome.status(), Status::Error);
        let error = outcome.error().cloned().unwrap();
        assert_eq!(error.kind, "ToolError");
        assert!(
            error.message.contains("over the limit"),
            "{}",
            error.message
        );
    }

    #[tokio::test]
    async fn oversized_tool_results_are_refused() {
        let l = Limits {
            max_tool_result_bytes: 10,
            ..limits()
        };
        let outcome = run_with(GUEST, "print(call_tool('text', 'stats', text='a b c'))", &l).await;
        assert_eq!(outcome.error().cloned().unwrap().kind, "ToolError");
    }

    #[tokio::test]
    async fn deeply_nested_tool_arguments_are_refused() {
        let code = "v = []\nfor _ in range(10_000):\n    v = [v]\ncall_tool('text', 'stats', text=v)";
        let outcome = run(GUEST, code).await;
        assert_eq!(outcome.status(), Status::Error, "{outcome:#?}");
        assert!(outcome.error().is_some());
    }

    #[tokio::test]
    async fn the_recursion_limit_applies() {
        let l = Limits {
            recursion_limit: 100,
            ..limits()
        };
        let code = "import sys\nprint(sys.getrecursionlimit())\ndef f(n):\n    return f(n + 1)\nf(0)";
        let outcome = run_with(GUEST, code, &l).await;
        assert_eq!(outcome.stdout.trim(), "100");
        assert_eq!(outcome.error().cloned().unwrap().kind, "RecursionError");
    }

    /// A memory cap below the guest's start-up heap refuses the run the same way whether its
    /// instance was made ahead of time (the warm instance) or for it.
    #[tokio::test]
    async fn a_cap_below_the_start_heap_is_refused_with_or_without_a_warm_instance() {
        let tiny = Limits {
            memory_bytes: 1 << 20,
            ..limits()
        };
        // The first run leaves a warm instance behind for the second.
        let _ = run(GUEST, "pass").await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        for attempt in 0..2 {
            let result = codecell_tests::engine(GUEST)
                .run_snippet("print('ran')", None, &tiny)
                .await;
            // Regression (issue 10, class 9): this was a wasmtime message (exit 3 in the CLI).
            match result {
                Err(codecell::EngineError::MemoryCapTooSmall { cap, minimum }) => {
                    assert_eq!(cap, 1 << 20);
                    assert!(minimum > cap, "attempt {attempt}: minimum {minimum}");
                }
                other => panic!("attempt {attempt}: a 1 MiB cap must be refused as too small: {other:?}"),
            }
        }
        let outcome = run(GUEST, "print('ok')").await;
        assert_eq!(outcome.stdout, "ok\n", "{outcome:#?}");
    }

    /// Regression (issue 10, class 9): fuel too small for the guest to start was a host failure
    /// (a wasmtime message, exit 3), not the fuel limit.
    #[tokio::test]
    async fn fuel_too_small_to_start_is_the_fuel_limit() {
        for fuel in [0, 1, 1000] {
            let tiny = Limits { fuel, ..limits() };
            let outcome = codecell_tests::fuel_engine(GUEST)
                .run_snippet("print('ran')", None, &tiny)
                .await
                .expect("too little fuel is the run's ending, not a host failure");
            assert_eq!(outcome.limit(), Some(LimitKind::Fuel), "fuel {fuel}: {outcome:#?}");
            assert_eq!(outcome.stdout, "");
        }
    }
}
