module gosemaphore

go 1.19
