module leakserver

go 1.21
