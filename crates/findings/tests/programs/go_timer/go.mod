module gotimer

go 1.19
