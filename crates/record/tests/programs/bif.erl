%% Erlang code whose time goes to a C built-in function: hot/2 calls
%% erlang:term_to_binary/1 (C code in beam.smp, reached from JIT code through
%% the BEAM's runtime stack), under outer/2 under loop/2. Run with
%% `erl +JPperf true`.
-module(bif).
-export([start/1]).

start(Seconds) ->
    Term = [{N, integer_to_list(N), <<N:64>>} || N <- lists:seq(1, 2000)],
    Deadline = erlang:monotonic_time(millisecond) + Seconds * 1000,
    loop(Deadline, Term).

loop(Deadline, Term) ->
    case erlang:monotonic_time(millisecond) >= Deadline of
        true -> ok;
        false -> _ = outer(20, Term), loop(Deadline, Term)
    end.

outer(0, _) -> ok;
outer(N, Term) -> _ = hot(Term, 0), outer(N - 1, Term).

hot(Term, Acc) -> Acc + byte_size(erlang:term_to_binary(Term)).
