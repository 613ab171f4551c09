module quoteserver

go 1.21
