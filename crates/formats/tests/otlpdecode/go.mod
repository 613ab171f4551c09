module kiln.test/otlpdecode

go 1.23.0

require (
	go.opentelemetry.io/proto/otlp v1.7.1
	go.opentelemetry.io/proto/otlp/collector/profiles/v1development v0.1.0
	google.golang.org/protobuf v1.36.8
)

require (
	github.com/grpc-ecosystem/grpc-gateway/v2 v2.27.2 // indirect
	go.opentelemetry.io/proto/otlp/profiles/v1development v0.1.0 // indirect
	golang.org/x/net v0.43.0 // indirect
	golang.org/x/sys v0.35.0 // indirect
	golang.org/x/text v0.28.0 // indirect
	google.golang.org/genproto/googleapis/api v0.0.0-20250825161204-c5933d9347a5 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20250825161204-c5933d9347a5 // indirect
	google.golang.org/grpc v1.75.0 // indirect
)
