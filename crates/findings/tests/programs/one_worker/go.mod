module oneworker

go 1.19
