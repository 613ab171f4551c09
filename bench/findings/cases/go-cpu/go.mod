module receiptserver

go 1.21
