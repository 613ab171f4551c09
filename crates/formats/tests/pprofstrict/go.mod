module kiln.test/pprofstrict

go 1.24.0

require google.golang.org/protobuf v1.36.9
