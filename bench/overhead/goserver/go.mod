module kiln.bench/overhead-goserver

go 1.21
