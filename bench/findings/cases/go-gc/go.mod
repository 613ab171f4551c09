module gcserver

go 1.21
