%% A busy Erlang process: loop/1 calls outer/1, which calls the hot function
%% hot:spin/2 many times. Run with `erl +JPperf true` so the JIT writes
%% /tmp/perf-<pid>.map and keeps frame pointers.
-module(hot).
-export([start/1]).

start(Seconds) ->
    Deadline = erlang:monotonic_time(millisecond) + Seconds * 1000,
    loop(Deadline).

loop(Deadline) ->
    case erlang:monotonic_time(millisecond) >= Deadline of
        true -> ok;
        false -> outer(2000), loop(Deadline)
    end.

outer(0) -> ok;
outer(N) -> _ = spin(300, 0), outer(N - 1).

spin(0, Acc) -> Acc;
spin(N, Acc) -> spin(N - 1, (Acc * 31 + N) band 16#ffffff).
