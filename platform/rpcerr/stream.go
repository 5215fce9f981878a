package rpcerr

import (
	"errors"
	"io"

	"google.golang.org/grpc"
)

// RecvHeader receives the first message of a client stream that must open
// with a header, and returns the header (header reads it from the message;
// the zero H means it has none). A stream that ends first, or opens with
// something else, is refused as InvalidArgument naming the stream ("the
// ingest stream is empty") with a violation of field "header" that says
// what to send first (want). Other receive errors are returned as they are.
func RecvHeader[M any, H comparable](recv func() (M, error), header func(M) H, stream, want string) (H, error) {
	var none H
	first, err := recv()
	if errors.Is(err, io.EOF) {
		return none, InvalidArgument("the "+stream+" stream is empty", FieldViolation{Field: "header", Description: want})
	}
	if err != nil {
		return none, err
	}
	h := header(first)
	if h == none {
		return none, InvalidArgument("the "+stream+" stream must open with a header", FieldViolation{Field: "header", Description: want})
	}
	return h, nil
}

// AnswerEach serves a bidirectional stream on which every request gets one
// response, in order: it receives until the client closes its side (and
// then returns nil), sending what answer returns for each request. The
// first error of the stream or of answer ends the stream with it, since a
// stream response has no room for an error.
func AnswerEach[Req, Resp any](stream grpc.BidiStreamingServer[Req, Resp], answer func(*Req) (*Resp, error)) error {
	for {
		req, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		resp, err := answer(req)
		if err != nil {
			return err
		}
		if err := stream.Send(resp); err != nil {
			return err
		}
	}
}
