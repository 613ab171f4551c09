%% An HTTP server on the BEAM (http_front.erl: a process per connection) whose every request
%% posts to one ledger: a gen_server registered as `ledger` whose handle_call computes for
%% about a millisecond. Every connection's process waits in gen_server:call for the one
%% ledger process, which runs on one scheduler thread at a time, whichever it is given.
%%
%%   erl -noshell +JPperf true -eval 'ledger:start("SAMPLES-FILE")'
%%
%% With SAMPLES-FILE, the node also samples the ledger process's own state every 10 ms
%% (erlang:process_info: status and message_queue_len) and writes, once a second, the
%% wall-clock time and the counts since its start: the runtime's own account of how busy
%% the ledger was and how many callers queued for it.
-module(ledger).
-behaviour(gen_server).
-export([start/1, init/1, handle_call/3, handle_cast/2]).

start(Samples) ->
    {ok, _} = gen_server:start({local, ledger}, ?MODULE, 17, []),
    http_front:listen(fun() ->
                              gen_server:call(ledger, {post, erlang:unique_integer([positive])}, infinity)
                      end),
    case Samples of
        "" -> ok;
        _ -> spawn(fun() -> sample(Samples, 0, 0, 0, 0, next_second()) end)
    end,
    receive stop -> ok end.

init(Balance) -> {ok, Balance}.

handle_call({post, Amount}, _From, Balance) ->
    V = spin((Balance bxor Amount) band 16#7FFFFFFF, 20000),
    {reply, V, V}.

handle_cast(_, State) -> {noreply, State}.

spin(X, 0) -> X;
spin(X, N) -> spin((X * 1103515245 + 12345) band 16#7FFFFFFF, N - 1).

next_second() -> erlang:monotonic_time(millisecond) + 1000.

%% Busy (running or runnable) and idle samples of the ledger process, and the sum of its
%% message queue's length over the samples.
sample(File, Busy, Idle, Queued, N, Next) ->
    timer:sleep(10),
    [{status, St}, {message_queue_len, Q}] =
        erlang:process_info(whereis(ledger), [status, message_queue_len]),
    {B, I} = case St of
                 waiting -> {Busy, Idle + 1};
                 _ -> {Busy + 1, Idle}
             end,
    Now = erlang:monotonic_time(millisecond),
    case Now >= Next of
        true ->
            ok = file:write_file(File, io_lib:format("~b ~b ~b ~b ~b~n",
                                                     [os:system_time(nanosecond), B, I, Queued + Q, N + 1]),
                                 [append]),
            sample(File, B, I, Queued + Q, N + 1, Next + 1000);
        false -> sample(File, B, I, Queued + Q, N + 1, Next)
    end.
