package javahost

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kcd-project/kcd/daemon/javahost/hostpb"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func TestFrameLimits(t *testing.T) {
	f := &hostpb.Frame{Kind: &hostpb.Frame_Request{Request: &hostpb.Request{Id: 7,
		Call: &hostpb.Request_Poll{Poll: &hostpb.PollRequest{Task: strings.Repeat("t", 100)}}}}}
	var buf bytes.Buffer
	if err := writeFrame(&buf, f, 50); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("write over the limit: %v, want ErrFrameTooLarge", err)
	}
	if buf.Len() != 0 {
		t.Fatalf("a refused frame wrote %d bytes", buf.Len())
	}
	if err := writeFrame(&buf, f, 1000); err != nil {
		t.Fatal(err)
	}
	if n := binary.BigEndian.Uint32(buf.Bytes()); int(n) != buf.Len()-4 {
		t.Fatalf("length prefix %d, body %d bytes", n, buf.Len()-4)
	}
	raw := bytes.Clone(buf.Bytes())
	if _, err := readFrame(bytes.NewReader(raw), 50); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("read over the limit: %v, want ErrFrameTooLarge", err)
	}
	got, err := readFrame(bytes.NewReader(raw), 1000)
	if err != nil {
		t.Fatal(err)
	}
	if got.GetRequest().GetPoll().GetTask() != strings.Repeat("t", 100) || got.GetRequest().GetId() != 7 {
		t.Fatalf("round trip: %v", got)
	}
	if _, err := readFrame(bytes.NewReader(raw[:len(raw)-3]), 1000); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("truncated frame: %v, want ErrUnexpectedEOF", err)
	}
}

// peer is an in-process far end of the protocol: it answers each
// PollRequest after the delay its task name says, in its own goroutine,
// so answers come back out of order.
type peer struct {
	c   net.Conn
	wmu sync.Mutex
}

func (p *peer) write(t *testing.T, f *hostpb.Frame) {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	if err := writeFrame(p.c, f, DefaultMaxFrame); err != nil {
		t.Log(err)
	}
}

func TestConnMultiplexesBothWays(t *testing.T) {
	a, b := net.Pipe()
	var gotOffsets sync.WaitGroup
	gotOffsets.Add(1)
	handler := func(ctx context.Context, req *hostpb.Request) (*hostpb.Response, error) {
		r := req.GetOffsetRead()
		if r == nil {
			return nil, fmt.Errorf("unexpected %T", req.Call)
		}
		return &hostpb.Response{Result: &hostpb.Response_OffsetRead{OffsetRead: &hostpb.OffsetReadResponse{
			Offsets: [][]byte{[]byte(`{"pos":1}`)}}}}, nil
	}
	cn := NewConn(a, DefaultMaxFrame, handler, nil, quiet())
	defer cn.Close(errors.New("test over"))

	p := &peer{c: b}
	go func() {
		// The peer's own call to kcd, with id 1 like kcd's first.
		p.write(t, &hostpb.Frame{Kind: &hostpb.Frame_Request{Request: &hostpb.Request{Id: 1,
			Call: &hostpb.Request_OffsetRead{OffsetRead: &hostpb.OffsetReadRequest{Connector: "c"}}}}})
		for {
			f, err := readFrame(b, DefaultMaxFrame)
			if err != nil {
				return
			}
			if r := f.GetResponse(); r != nil {
				if string(r.GetOffsetRead().GetOffsets()[0]) == `{"pos":1}` && r.GetId() == 1 {
					gotOffsets.Done()
				}
				continue
			}
			req := f.GetRequest()
			go func() {
				var d time.Duration
				fmt.Sscanf(req.GetPoll().GetTask(), "%d", &d)
				time.Sleep(d * time.Millisecond)
				if req.GetPoll().GetTask() == "3" {
					p.write(t, &hostpb.Frame{Kind: &hostpb.Frame_Response{Response: &hostpb.Response{Id: req.GetId(),
						Error: &hostpb.Error{ClassName: "java.lang.IllegalStateException", Message: "no", Retriable: true}}}})
					return
				}
				p.write(t, &hostpb.Frame{Kind: &hostpb.Frame_Response{Response: &hostpb.Response{Id: req.GetId(),
					Result: &hostpb.Response_Poll{Poll: &hostpb.PollResponse{Records: []*hostpb.SourceRecord{{Topic: req.GetPoll().GetTask()}}}}}}})
			}()
		}
	}()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 10)
	for _, d := range []string{"60", "1", "30", "3"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := cn.Call(ctx, &hostpb.Request{Call: &hostpb.Request_Poll{Poll: &hostpb.PollRequest{Task: d}}})
			if d == "3" {
				var je *JavaError
				if !errors.As(err, &je) || !je.Retriable || je.Error() != "java.lang.IllegalStateException: no" {
					errs <- fmt.Errorf("call %s: %v, want the Java error", d, err)
				}
				return
			}
			if err != nil {
				errs <- fmt.Errorf("call %s: %w", d, err)
				return
			}
			if got := resp.GetPoll().GetRecords()[0].GetTopic(); got != d {
				errs <- fmt.Errorf("call %s got the answer of %s", d, got)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	done := make(chan struct{})
	go func() { gotOffsets.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("the peer's call was not answered")
	}
}

func TestConnPeerDiesMidCall(t *testing.T) {
	a, b := net.Pipe()
	cn := NewConn(a, DefaultMaxFrame, nil, func(err error) error {
		return fmt.Errorf("java host exited (exit status 3): OutOfMemoryError: %w", err)
	}, quiet())
	started := make(chan struct{})
	go func() {
		// Read the calls, answer none, then die.
		for i := 0; i < 3; i++ {
			if _, err := readFrame(b, DefaultMaxFrame); err != nil {
				return
			}
		}
		close(started)
		_ = b.Close()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	errs := make(chan error, 3)
	for i := 0; i < 3; i++ {
		go func() {
			_, err := cn.Call(ctx, &hostpb.Request{Call: &hostpb.Request_Poll{Poll: &hostpb.PollRequest{Task: "t"}}})
			errs <- err
		}()
	}
	for i := 0; i < 3; i++ {
		select {
		case err := <-errs:
			if err == nil || !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), "OutOfMemoryError") {
				t.Fatalf("pending call: %v, want the host's exit", err)
			}
		case <-ctx.Done():
			t.Fatal("pending calls did not fail when the peer died")
		}
	}
	<-started
	if _, err := cn.Call(ctx, &hostpb.Request{}); err == nil || !strings.Contains(err.Error(), "exit status 3") {
		t.Fatalf("call after the end: %v", err)
	}
}

func TestConnCallContext(t *testing.T) {
	a, b := net.Pipe()
	cn := NewConn(a, DefaultMaxFrame, nil, nil, quiet())
	defer cn.Close(errors.New("test over"))
	go func() { _, _ = io.Copy(io.Discard, b) }()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := cn.Call(ctx, &hostpb.Request{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("unanswered call: %v, want its context's end", err)
	}
	cn.mu.Lock()
	n := len(cn.pending)
	cn.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d calls still pending after their context ended", n)
	}
}

// TestConnAnswerBeforeEndWins: a host that answers a call and then exits
// (as it does when its heap ran out) has the call fail with its answer,
// not with the end of the connection.
func TestConnAnswerBeforeEndWins(t *testing.T) {
	for i := range 20 { // a call that enters its wait after both the answer and the end were read picked either
		a, b := net.Pipe()
		cn := NewConn(a, DefaultMaxFrame, nil, nil, quiet())
		go func() {
			f, err := readFrame(b, DefaultMaxFrame)
			if err != nil {
				return
			}
			_ = writeFrame(b, &hostpb.Frame{Kind: &hostpb.Frame_Response{Response: &hostpb.Response{Id: f.GetRequest().GetId(),
				Error: &hostpb.Error{ClassName: "java.lang.OutOfMemoryError", Message: "Java heap space"}}}}, DefaultMaxFrame)
			b.Close()
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := cn.Call(ctx, &hostpb.Request{Call: &hostpb.Request_Poll{Poll: &hostpb.PollRequest{Task: "t"}}})
		cancel()
		<-cn.Done()
		var je *JavaError
		if !errors.As(err, &je) || je.Class != "java.lang.OutOfMemoryError" {
			t.Fatalf("call %d: %v, want the host's OutOfMemoryError", i, err)
		}
	}
}
