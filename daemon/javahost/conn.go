// Package javahost runs Kafka Connect's Java plugins for kcd: it
// supervises one Java "connector host" process per node, speaks the
// protocol of javahost/src/main/proto/host.proto with it over a Unix
// socket, and offers the host's connectors to the runtime as ordinary
// connect.Plugin values whose instances proxy every call to the host.
package javahost

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/kcd-project/kcd/daemon/connect"
	"github.com/kcd-project/kcd/daemon/javahost/hostpb"
)

// DefaultMaxFrame is the largest frame kcd sends or accepts unless the
// host's Hello asks for less.
const DefaultMaxFrame = 64 << 20

// Bounds of the connection's concurrency.
const (
	maxCallsInFlight    = 256 // kcd's calls awaiting an answer
	maxHandlersInFlight = 64  // the host's calls being answered
)

// ErrFrameTooLarge is returned for a frame over the connection's limit.
var ErrFrameTooLarge = errors.New("frame too large")

// JavaError is an error the host answered with: a Java exception.
type JavaError struct {
	Class     string
	Message   string
	Stack     string // as printStackTrace writes it
	Retriable bool
}

// Error is the stack trace when there is one (it starts with class and
// message), as Kafka Connect puts it in a failed task's status.
func (e *JavaError) Error() string {
	if e.Stack != "" {
		return strings.TrimRight(e.Stack, "\n")
	}
	if e.Message == "" {
		return e.Class
	}
	return e.Class + ": " + e.Message
}

// ExceptionClass, ExceptionMessage and ExceptionStack make it a
// connect.ExceptionError: the dead letter queue names the Java class.
func (e *JavaError) ExceptionClass() string   { return e.Class }
func (e *JavaError) ExceptionMessage() string { return e.Message }
func (e *JavaError) ExceptionStack() string   { return e.Stack }

var _ connect.ExceptionError = (*JavaError)(nil)

func javaError(e *hostpb.Error) *JavaError {
	return &JavaError{Class: e.GetClassName(), Message: e.GetMessage(), Stack: e.GetStackTrace(), Retriable: e.GetRetriable()}
}

// Handler answers one call of the host. It returns the response's result
// (the id is set by the connection) or an error, sent as a Response error.
type Handler func(ctx context.Context, req *hostpb.Request) (*hostpb.Response, error)

// writeFrame writes f with its 4-byte big-endian length.
func writeFrame(w io.Writer, f *hostpb.Frame, max uint32) error {
	b, err := proto.Marshal(f)
	if err != nil {
		return fmt.Errorf("encode frame: %w", err)
	}
	if uint64(len(b)) > uint64(max) {
		return fmt.Errorf("%w: %d bytes, the limit is %d", ErrFrameTooLarge, len(b), max)
	}
	buf := make([]byte, 4+len(b))
	binary.BigEndian.PutUint32(buf, uint32(len(b)))
	copy(buf[4:], b)
	if _, err := w.Write(buf); err != nil {
		return fmt.Errorf("write frame: %w", err)
	}
	return nil
}

// readFrame reads one frame of at most max bytes.
func readFrame(r io.Reader, max uint32) (*hostpb.Frame, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > max {
		return nil, fmt.Errorf("%w: %d bytes, the limit is %d", ErrFrameTooLarge, n, max)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, fmt.Errorf("read frame body: %w", io.ErrUnexpectedEOF)
	}
	f := &hostpb.Frame{}
	if err := proto.Unmarshal(b, f); err != nil {
		return nil, fmt.Errorf("decode frame: %w", err)
	}
	return f, nil
}

// Conn is a connection to the host after its Hello: calls both ways,
// multiplexed by id.
type Conn struct {
	c        net.Conn
	maxFrame uint32
	handler  Handler
	log      *slog.Logger
	// explain turns the read error that ended the connection into the
	// error pending and later calls fail with (the host's exit and why).
	explain func(error) error

	wmu   sync.Mutex
	calls chan struct{} // a token per call in flight
	hsem  chan struct{} // a token per host call being answered

	mu      sync.Mutex
	nextID  uint64
	pending map[uint64]chan *hostpb.Response
	err     error
	dead    chan struct{}

	hctx    context.Context // ends when the connection does
	hcancel context.CancelFunc
}

// NewConn serves c, whose Hello has been read. maxFrame bounds frames
// both ways; handler answers the host's calls; explain (may be nil)
// words the error of a connection that ended.
func NewConn(c net.Conn, maxFrame uint32, handler Handler, explain func(error) error, log *slog.Logger) *Conn {
	if maxFrame == 0 || maxFrame > DefaultMaxFrame {
		maxFrame = DefaultMaxFrame
	}
	if explain == nil {
		explain = func(err error) error { return fmt.Errorf("java host connection ended: %w", err) }
	}
	ctx, cancel := context.WithCancel(context.Background())
	cn := &Conn{
		c: c, maxFrame: maxFrame, handler: handler, log: log, explain: explain,
		calls: make(chan struct{}, maxCallsInFlight), hsem: make(chan struct{}, maxHandlersInFlight),
		pending: map[uint64]chan *hostpb.Response{}, dead: make(chan struct{}),
		hctx: ctx, hcancel: cancel,
	}
	go cn.readLoop()
	return cn
}

// Done is closed when the connection has ended; Err then says why.
func (cn *Conn) Done() <-chan struct{} { return cn.dead }

// Err is why the connection ended, or nil while it is up.
func (cn *Conn) Err() error {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	return cn.err
}

// Close ends the connection; pending calls fail with err.
func (cn *Conn) Close(err error) { cn.fail(err) }

func (cn *Conn) fail(err error) {
	cn.mu.Lock()
	if cn.err != nil {
		cn.mu.Unlock()
		return
	}
	cn.err = err
	close(cn.dead)
	cn.mu.Unlock()
	cn.hcancel()
	_ = cn.c.Close()
}

func (cn *Conn) readLoop() {
	for {
		f, err := readFrame(cn.c, cn.maxFrame)
		if err != nil {
			select {
			case <-cn.dead: // closed by us
			default:
				cn.fail(cn.explain(err))
			}
			return
		}
		switch k := f.Kind.(type) {
		case *hostpb.Frame_Response:
			cn.mu.Lock()
			ch, ok := cn.pending[k.Response.GetId()]
			delete(cn.pending, k.Response.GetId())
			cn.mu.Unlock()
			if ok {
				ch <- k.Response // buffered: never blocks
			}
		case *hostpb.Frame_Request:
			select {
			case cn.hsem <- struct{}{}:
			case <-cn.dead:
				return
			}
			go cn.serve(k.Request)
		default:
			cn.fail(cn.explain(fmt.Errorf("unexpected frame %T", f.Kind)))
			return
		}
	}
}

// serve answers one call of the host.
func (cn *Conn) serve(req *hostpb.Request) {
	defer func() { <-cn.hsem }()
	var resp *hostpb.Response
	var err error
	if cn.handler == nil {
		err = errors.New("kcd answers no calls on this connection")
	} else {
		func() {
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("panic answering %T: %v", req.Call, r)
				}
			}()
			resp, err = cn.handler(cn.hctx, req)
		}()
	}
	if resp == nil {
		resp = &hostpb.Response{}
	}
	resp.Id = req.GetId()
	if err != nil {
		resp.Result = nil
		resp.Error = &hostpb.Error{ClassName: "org.apache.kafka.connect.errors.ConnectException", Message: err.Error()}
		var re *connect.RetriableError
		if errors.As(err, &re) {
			resp.Error.ClassName = "org.apache.kafka.connect.errors.RetriableException"
			resp.Error.Retriable = true
		}
	} else if resp.Result == nil {
		resp.Result = &hostpb.Response_Empty{Empty: &hostpb.Empty{}}
	}
	if err := cn.write(&hostpb.Frame{Kind: &hostpb.Frame_Response{Response: resp}}); err != nil && cn.Err() == nil {
		cn.log.Warn("answer the java host", "err", err)
	}
}

func (cn *Conn) write(f *hostpb.Frame) error {
	cn.wmu.Lock()
	defer cn.wmu.Unlock()
	return writeFrame(cn.c, f, cn.maxFrame)
}

// Call sends req (its id is set here) and waits for the answer, ctx's
// end, or the connection's end. An answer with an error returns a
// *JavaError.
func (cn *Conn) Call(ctx context.Context, req *hostpb.Request) (*hostpb.Response, error) {
	select {
	case cn.calls <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-cn.dead:
		return nil, cn.Err()
	}
	defer func() { <-cn.calls }()

	ch := make(chan *hostpb.Response, 1)
	cn.mu.Lock()
	if cn.err != nil {
		cn.mu.Unlock()
		return nil, cn.err
	}
	cn.nextID++
	id := cn.nextID
	cn.pending[id] = ch
	cn.mu.Unlock()
	forget := func() {
		cn.mu.Lock()
		delete(cn.pending, id)
		cn.mu.Unlock()
	}

	req.Id = id
	if err := cn.write(&hostpb.Frame{Kind: &hostpb.Frame_Request{Request: req}}); err != nil {
		forget()
		if errors.Is(err, ErrFrameTooLarge) {
			return nil, err
		}
		if e := cn.Err(); e != nil {
			return nil, e
		}
		cn.fail(cn.explain(err))
		return nil, cn.Err()
	}
	var resp *hostpb.Response
	select {
	case resp = <-ch:
	case <-ctx.Done():
		forget()
		return nil, ctx.Err()
	case <-cn.dead:
		forget()
		// An answer read before the end wins: a host that answers and then
		// exits (out of heap) has said why the call failed.
		select {
		case resp = <-ch:
		default:
			return nil, cn.Err()
		}
	}
	if resp.GetError() != nil {
		return nil, javaError(resp.GetError())
	}
	return resp, nil
}
