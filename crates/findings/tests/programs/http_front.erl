%% The HTTP front the BEAM test servers share: a listener on 127.0.0.1 (a free port, said
%% on standard output as "listening on 127.0.0.1:PORT"), a process per connection, and
%% for every request the body Answer() returns (an integer), in a keep-alive response.
-module(http_front).
-export([listen/1]).

listen(Answer) ->
    {ok, L} = gen_tcp:listen(0, [binary, {ip, {127, 0, 0, 1}}, {packet, http_bin},
                                 {active, false}, {reuseaddr, true}, {backlog, 128},
                                 {nodelay, true}]),
    {ok, Port} = inet:port(L),
    io:format("listening on 127.0.0.1:~p~n", [Port]),
    spawn(fun() -> accept(L, Answer) end).

accept(L, Answer) ->
    {ok, S} = gen_tcp:accept(L),
    spawn(fun() -> accept(L, Answer) end),
    serve(S, Answer).

serve(S, Answer) ->
    case gen_tcp:recv(S, 0) of
        {ok, {http_request, _, _, _}} -> headers(S, Answer);
        _ -> gen_tcp:close(S)
    end.

headers(S, Answer) ->
    case gen_tcp:recv(S, 0) of
        {ok, {http_header, _, _, _, _}} -> headers(S, Answer);
        {ok, http_eoh} ->
            Body = integer_to_binary(Answer()),
            ok = gen_tcp:send(S, [<<"HTTP/1.1 200 OK\r\nContent-Length: ">>,
                                  integer_to_binary(byte_size(Body) + 1), <<"\r\n\r\n">>, Body, <<"\n">>]),
            serve(S, Answer);
        _ -> gen_tcp:close(S)
    end.
