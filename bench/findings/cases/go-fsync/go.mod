module fsyncserver

go 1.21
