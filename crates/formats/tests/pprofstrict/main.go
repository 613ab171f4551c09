// pprofstrict decodes a pprof file (gzipped or not) with Go's protobuf runtime as a proto3
// message, which refuses a `string` field that is not UTF-8, as strict decoders do. Only
// the string table is declared (the profile's only strings); every other field is kept
// unknown. Prints "ok N strings", or the decoder's error and exits 1.
//
//	pprofstrict FILE
package main

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

func main() {
	data, err := os.ReadFile(os.Args[1])
	if err != nil {
		fail(err)
	}
	if bytes.HasPrefix(data, []byte{0x1f, 0x8b}) {
		z, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			fail(err)
		}
		if data, err = io.ReadAll(z); err != nil {
			fail(err)
		}
	}
	file, err := protodesc.NewFile(&descriptorpb.FileDescriptorProto{
		Name:    proto.String("profile.proto"),
		Package: proto.String("perftools.profiles"),
		Syntax:  proto.String("proto3"),
		MessageType: []*descriptorpb.DescriptorProto{{
			Name: proto.String("Profile"),
			Field: []*descriptorpb.FieldDescriptorProto{{
				Name:     proto.String("string_table"),
				JsonName: proto.String("stringTable"),
				Number:   proto.Int32(6),
				Label:    descriptorpb.FieldDescriptorProto_LABEL_REPEATED.Enum(),
				Type:     descriptorpb.FieldDescriptorProto_TYPE_STRING.Enum(),
			}},
		}},
	}, nil)
	if err != nil {
		fail(err)
	}
	msg := dynamicpb.NewMessage(file.Messages().ByName("Profile"))
	if err := proto.Unmarshal(data, msg); err != nil {
		fail(err)
	}
	n := msg.Get(file.Messages().ByName("Profile").Fields().ByNumber(6)).List().Len()
	fmt.Printf("ok %d strings\n", n)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}
