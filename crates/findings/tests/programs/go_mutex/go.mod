module gomutex

go 1.19
