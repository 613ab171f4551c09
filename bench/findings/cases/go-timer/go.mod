module sleepserver

go 1.21
