module kiln.example/go-blockcache

go 1.21
