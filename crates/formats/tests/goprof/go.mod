module kiln.test/goprof

go 1.21
