%% An HTTP server on the BEAM (http_front.erl: a process per connection) whose every request
%% builds a list of 20,000 tuples and reverses it: each connection's process grows a heap
%% large enough that the runtime collects it on its dirty CPU schedulers.
%%
%%   erl -noshell +JPperf true -eval 'heaps:start("SAMPLES-FILE")'
%%
%% With SAMPLES-FILE, the node also measures its own threads' states with msacc, a second
%% at a time, and writes for each second the wall-clock time (ns), the time its
%% threads spent in garbage collection, the time they were awake (every state
%% but sleep) and in `other` (scheduling, the busy-wait, and a dirty scheduler's wait for
%% its turn), summed over every thread (dirty schedulers included): the runtime's own
%% account of its collector's share.
-module(heaps).
-export([start/1]).

start(Samples) ->
    http_front:listen(fun() -> build(20000) end),
    case Samples of
        "" -> ok;
        _ -> spawn(fun() -> account(Samples) end)
    end,
    receive stop -> ok end.

build(N) ->
    L = [{X, integer_to_list(X)} || X <- lists:seq(1, N)],
    length(lists:reverse(L)).

%% Each second: msacc over it, then one line "TIME_NS GC AWAKE OTHER" (msacc's counter
%% units).
account(File) ->
    msacc:start(1000),
    Stats = msacc:stats(),
    {Gc, Awake, Other} = lists:foldl(
        fun(#{counters := C}, {G, A, O}) ->
                Sum = maps:fold(fun(sleep, _, X) -> X; (_, V, X) -> X + V end, 0, C),
                {G + maps:get(gc, C, 0), A + Sum, O + maps:get(other, C, 0)}
        end, {0, 0, 0}, Stats),
    ok = file:write_file(File, io_lib:format("~b ~b ~b ~b~n",
                                             [os:system_time(nanosecond), Gc, Awake, Other]),
                         [append]),
    account(File).
