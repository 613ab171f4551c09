%% An HTTP server on the BEAM (http_front.erl: a process per connection) whose every
%% request appends a 512-byte order record to one journal file and forces it to the disk
%% (file:datasync, fdatasync(2)) before it answers: each connection's process opens the
%% journal once (a raw file, O_APPEND) and the runtime runs the file's calls on its dirty
%% I/O schedulers.
%%
%%   erl -noshell +JPperf true -eval 'journal:start("DIR")'
%%
%% DIR holds the journal (DIR/orders.log).
-module(journal).
-export([start/1, append_order/1]).

start(Dir) ->
    Path = filename:join(Dir, "orders.log"),
    http_front:listen(fun() -> append_order(Path) end),
    receive stop -> ok end.

append_order(Path) ->
    Fd = case get(journal) of
             undefined ->
                 {ok, F} = file:open(Path, [append, raw, binary]),
                 put(journal, F),
                 F;
             F -> F
         end,
    Id = erlang:unique_integer([positive]),
    Record = iolist_to_binary([integer_to_binary(Id), $\s, binary:copy(<<"x">>, 600)]),
    ok = file:write(Fd, [binary:part(Record, 0, 511), $\n]),
    ok = file:datasync(Fd),
    Id.
