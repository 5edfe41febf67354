//! asyncio in the guest: concurrent tool calls (`call_tool_async`, the stubs' `_async` twins),
//! top-level `await`, and the limits that cover calls in flight. The language-level behaviour
//! (tasks, cancellation, timeouts, TaskGroup) is in the differential corpus, checked against
//! native python3 (`fixtures/differential/6*_asyncio_*.py`).

use codecell::{
    CodeMode, HandlerError, LimitKind, Limits, Status, ToolCallRecord, ToolDefinition, ToolSpec,
    async_handler_fn, code_mode_from_tools, handler_fn,
};
use codecell_tests::engine;
use serde_json::json;
use std::time::Duration;

/// `slow/wait` sleeps `ms` milliseconds and returns them; `slow/echo` returns its arguments;
/// `slow/ordered` returns an object whose keys are not in sorted order.
fn mode(guest: codecell::GuestKind, limits: Limits) -> CodeMode {
    let wait = ToolDefinition {
        category: "slow".into(),
        spec: ToolSpec::new(
            "wait",
            "Sleeps ms milliseconds.",
            json!({"type": "object", "properties": {"ms": {"type": "integer"}}, "required": ["ms"]}),
        ),
        handler: async_handler_fn(|args| async move {
            let ms = args["ms"].as_u64().unwrap_or(0).min(60_000);
            tokio::time::sleep(Duration::from_millis(ms)).await;
            Ok::<_, HandlerError>(json!({"slept": ms}))
        }),
    };
    let echo = ToolDefinition {
        category: "slow".into(),
        spec: ToolSpec::new("echo", "Echo.", json!({"type": "object"})),
        handler: handler_fn(Ok),
    };
    let ordered = ToolDefinition {
        category: "slow".into(),
        spec: ToolSpec::new("ordered", "Unsorted keys.", json!({"type": "object"})),
        handler: handler_fn(|_| Ok(json!({"zeta": 1, "alpha": 2, "mid": {"y": 1, "b": 2}}))),
    };
    code_mode_from_tools(engine(guest), vec![wait, echo, ordered], |_| {
        "Slow tools.".into()
    })
    .unwrap()
    .with_limits(limits)
}

/// Whether every two calls of `calls` ran at the same time for a while.
fn all_overlap(calls: &[ToolCallRecord]) -> bool {
    let latest_start = calls.iter().map(|c| c.start_us).max().unwrap_or(0);
    let earliest_end = calls.iter().map(|c| c.end_us).min().unwrap_or(0);
    latest_start < earliest_end
}

const GATHER: &str = "import asyncio\n\
async def main():\n    \
    return await asyncio.gather(*(call_tool_async('slow', 'wait', ms=200) for _ in range(10)))\n\
print(asyncio.run(main()))\n";

codecell_tests::for_each_guest! {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn gathered_calls_run_on_the_host_at_the_same_time() {
        let outcome = mode(GUEST, Limits::default()).execute_code(GATHER).await.unwrap();
        assert_eq!(outcome.status(), Status::Ok, "{outcome:#?}");
        assert_eq!(outcome.stdout.trim(), format!("[{}]", ["{'slept': 200}"; 10].join(", ")));
        assert_eq!(outcome.tool_calls.len(), 10);
        assert!(outcome.tool_calls.iter().all(|c| c.ok && c.duration_us >= 200_000), "{outcome:#?}");
        assert!(all_overlap(&outcome.tool_calls), "{:#?}", outcome.tool_calls);
    }

    #[tokio::test]
    async fn synchronous_calls_do_not_overlap() {
        let code = "for _ in range(2):\n    call_tool('slow', 'wait', ms=20)\n";
        let outcome = mode(GUEST, Limits::default()).execute_code(code).await.unwrap();
        assert_eq!(outcome.status(), Status::Ok, "{outcome:#?}");
        assert!(outcome.tool_calls[0].end_us <= outcome.tool_calls[1].start_us, "{outcome:#?}");
    }

    #[tokio::test]
    async fn a_snippet_may_await_at_top_level() {
        let code = "import asyncio\n\
            r = await call_tool_async('slow', 'echo', k=1)\n\
            await asyncio.sleep(0.01)\n\
            from tools.slow import echo_async, wait_async\n\
            print(r, await echo_async(), await asyncio.gather(echo_async(), wait_async(ms=1)))\n";
        let outcome = mode(GUEST, Limits::default()).execute_code(code).await.unwrap();
        assert_eq!(outcome.status(), Status::Ok, "{outcome:#?}");
        assert_eq!(outcome.stdout.trim(), "{'k': 1} {} [{}, {'slept': 1}]");
        assert_eq!(outcome.tool_calls.len(), 4);
    }

    #[tokio::test]
    async fn an_async_tool_error_is_a_catchable_tool_error() {
        let code = "import asyncio\n\
            async def main():\n    \
                try:\n        await call_tool_async('slow', 'nope')\n    \
                except ToolError as e:\n        print('ToolError', 'nope' in str(e))\n    \
                try:\n        await call_tool_async('slow', 'wait', ms='x')\n    \
                except ToolError as e:\n        print('refused')\n    \
                try:\n        await call_tool_async('slow', 'echo', f=object())\n    \
                except ToolError as e:\n        print('not JSON')\n\
            asyncio.run(main())\n";
        let outcome = mode(GUEST, Limits::default()).execute_code(code).await.unwrap();
        assert_eq!(outcome.stdout, "ToolError True\nrefused\nnot JSON\n", "{outcome:#?}");
    }

    #[tokio::test]
    async fn a_call_the_guest_stops_awaiting_is_cancelled_on_the_host() {
        let code = "import asyncio\n\
            try:\n    await asyncio.wait_for(call_tool_async('slow', 'wait', ms=30000), 0.05)\n\
            except TimeoutError:\n    print('timed out')\n";
        let outcome = mode(GUEST, Limits::default()).execute_code(code).await.unwrap();
        assert_eq!(outcome.stdout, "timed out\n", "{outcome:#?}");
        let call = &outcome.tool_calls[0];
        assert!(!call.ok);
        assert!(call.duration_us < 10_000_000, "{call:#?}");
    }

    #[tokio::test]
    async fn calls_in_flight_when_the_run_ends_are_cancelled_and_recorded() {
        let limits = Limits { max_tool_calls: 3, ..Limits::default() };
        let code = "import asyncio\n\
            await asyncio.gather(*(call_tool_async('slow', 'wait', ms=30000) for _ in range(5)))\n";
        let outcome = mode(GUEST, limits).execute_code(code).await.unwrap();
        assert_eq!(outcome.limit(), Some(LimitKind::ToolCalls), "{outcome:#?}");
        assert_eq!(outcome.tool_calls.len(), 3);
        assert!(outcome.tool_calls.iter().all(|c| !c.ok && c.duration_us < 10_000_000));
    }

    #[tokio::test]
    async fn the_deadline_covers_calls_in_flight() {
        let limits = Limits { deadline: Duration::from_millis(300), ..Limits::default() };
        let code = "import asyncio\n\
            await asyncio.gather(*(call_tool_async('slow', 'wait', ms=30000) for _ in range(3)))\n";
        let outcome = mode(GUEST, limits).execute_code(code).await.unwrap();
        assert_eq!(outcome.limit(), Some(LimitKind::Deadline), "{outcome:#?}");
        assert_eq!(outcome.tool_calls.len(), 3);
        assert!(outcome.tool_calls.iter().all(|c| !c.ok));
    }

    #[tokio::test]
    async fn a_loop_with_nothing_to_wait_for_says_so_instead_of_hanging() {
        let code = "import asyncio\nawait asyncio.Event().wait()\n";
        let outcome = mode(GUEST, Limits::default()).execute_code(code).await.unwrap();
        let error = outcome.error().cloned().expect("an error");
        assert_eq!(error.kind, "RuntimeError", "{outcome:#?}");
        assert!(error.message.contains("nothing to wait for"), "{error:#?}");
    }

    /// Guards: in a seeded run (virtual clocks, one tick per read) `asyncio.sleep` woke, found
    /// its timer not due and slept again, so a 5 s sleep ran into the deadline.
    #[tokio::test]
    async fn a_seeded_asyncio_sleep_jumps_the_virtual_clock_instead_of_waiting() {
        let limits = Limits {
            deadline: Duration::from_secs(2),
            seed: Some(3),
            ..Limits::default()
        };
        let code = "import asyncio, time\n\
            t0, w0 = time.monotonic(), time.time()\n\
            async def nap(s, tag):\n    await asyncio.sleep(s)\n    return tag\n\
            print(await asyncio.gather(nap(5, 'b'), nap(3, 'a')))\n\
            print(round(time.monotonic() - t0), round(time.time() - w0))\n\
            print(await asyncio.wait_for(call_tool_async('slow', 'wait', ms=20), 30))\n";
        let first = mode(GUEST, limits.clone()).execute_code(code).await.unwrap();
        assert_eq!(first.stdout, "['b', 'a']\n5 5\n{'slept': 20}\n", "{first:#?}");
        let second = mode(GUEST, limits).execute_code(code).await.unwrap();
        assert_eq!(second.stdout, first.stdout);
    }

    #[tokio::test]
    async fn call_tool_async_outside_an_event_loop_is_a_clear_error() {
        let code = "c = call_tool_async('slow', 'echo')\ntry:\n    c.send(None)\nexcept RuntimeError as e:\n    print(e)\n";
        let outcome = mode(GUEST, Limits::default()).execute_code(code).await.unwrap();
        assert!(outcome.stdout.contains("needs codecell's event loop"), "{outcome:#?}");
    }

    #[tokio::test]
    async fn tool_results_and_arguments_keep_their_key_order() {
        let code = "r = call_tool('slow', 'ordered')\nprint(list(r), list(r['mid']))\n\
            print(list(call_tool('slow', 'echo', z=1, a=2, m=3)))\n\
            print(list(await call_tool_async('slow', 'echo', z=1, a=2)))\n";
        let outcome = mode(GUEST, Limits::default()).execute_code(code).await.unwrap();
        assert_eq!(
            outcome.stdout,
            "['zeta', 'alpha', 'mid'] ['y', 'b']\n['z', 'a', 'm']\n['z', 'a']\n",
            "{outcome:#?}"
        );
    }
}

/// Sessions with asyncio: in a module of their own (the guest modules above are taken).
mod in_sessions {
    use super::*;

    codecell_tests::for_each_guest! {
        /// A session's cells may await at top level; concurrent calls are journaled in start order
        /// and answered from the journal on restore; a call a cell leaves running ends with it.
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn a_session_awaits_at_top_level_and_restores_its_concurrent_calls() {
            let mode = mode(GUEST, Limits::default());
            let mut session = mode.session(codecell::SessionLimits::default()).await.unwrap();
            let gather = "import asyncio\nr = await asyncio.gather(call_tool_async('slow', 'echo', n=1), call_tool_async('slow', 'wait', ms=5))\nprint(r)";
            let first = session.execute(gather).await.unwrap();
            assert_eq!(first.outcome.stdout, "[{'n': 1}, {'slept': 5}]\n", "{:#?}", first.outcome);
            let left = session
                .execute("t = asyncio.ensure_future(call_tool_async('slow', 'wait', ms=60000))\nawait asyncio.sleep(0)\nprint('left')")
                .await
                .unwrap();
            assert_eq!(left.outcome.stdout, "left\n", "{:#?}", left.outcome);
            assert!(left.outcome.tool_calls.iter().all(|c| !c.ok), "the call left running was cancelled");
            let journal = session.save().unwrap();
            let mut restored = codecell::Session::restore(&engine(GUEST), None, Limits::default(), codecell::SessionLimits::default(), journal)
                .await
                .expect("no tools: the journal answers every call");
            assert_eq!(restored.execute("print(r[0]['n'])").await.unwrap().outcome.stdout, "1\n");
        }
    }
}
