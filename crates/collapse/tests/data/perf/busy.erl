-module(busy).
-export([start/0, 'quoted atom'/1]).
start() -> loop(0).
loop(N) -> loop(work(N)).
work(N) -> 'quoted atom'(lists:foldl(fun(X, A) -> (A * 31 + X) rem 1000003 end, N, lists:seq(1, 1000))).
'quoted atom'(N) -> N + 1.
