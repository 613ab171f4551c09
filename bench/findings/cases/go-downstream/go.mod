module downstream

go 1.21
