package transport

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/raft/v3/raftpb"
)

// maxErrorBody bounds how much of a peer's error answer is read.
const maxErrorBody = 4 << 10

// stream is one long-lived POST to a peer: frames go into the request body
// through a pipe; the peer answers 200 at once and writes nothing more
// unless it ends the stream, in which case it writes why.
type stream struct {
	pw       *io.PipeWriter
	body     io.ReadCloser
	cancel   context.CancelFunc
	watchdog *time.Timer
	done     chan struct{} // closed when the response body ends

	mu       sync.Mutex
	abortErr error // why the stream was aborted locally
	endErr   error // why the peer ended it
}

// abort ends the stream with err: a write blocked in the pipe returns at
// once, and the request is cancelled.
func (s *stream) abort(err error) {
	s.mu.Lock()
	if s.abortErr == nil {
		s.abortErr = err
	}
	s.mu.Unlock()
	s.pw.CloseWithError(err)
	s.cancel()
}

// err explains a failed write: the local abort reason, else the peer's.
func (s *stream) err(writeErr error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.abortErr != nil:
		return s.abortErr
	case s.endErr != nil:
		return s.endErr
	}
	return writeErr
}

// watch reads the response body, which only carries the peer's reason for
// ending the stream, so that a stream the peer closed is noticed even when
// there is nothing to write.
func (s *stream) watch() {
	defer close(s.done)
	b, err := io.ReadAll(io.LimitReader(s.body, maxErrorBody))
	var end error
	switch msg := strings.TrimSpace(string(b)); {
	case msg != "":
		end = fmt.Errorf("peer ended the stream: %s", msg)
	case err != nil:
		end = fmt.Errorf("stream broken: %w", err)
	default:
		end = errors.New("peer ended the stream")
	}
	s.mu.Lock()
	s.endErr = end
	s.mu.Unlock()
}

// close ends the stream (the peer reads EOF) and waits for its watcher.
func (s *stream) close() {
	s.watchdog.Stop()
	s.pw.Close()
	s.cancel()
	s.body.Close()
	<-s.done
}

// open starts a stream to the peer and waits for its answer, so that a
// refusal (wrong cluster, removed member) is known before anything is sent.
func (p *peer) open() (*stream, error) {
	base, err := p.currentURL()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(p.ctx)
	pr, pw := io.Pipe()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+streamPath, pr)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("stream to %s: %w", base, err)
	}
	p.t.setHeaders(req, p.id)

	// OpenTimeout bounds getting the answer only; the request's context
	// stays open for the stream's life.
	var timedOut atomic.Bool
	timer := time.AfterFunc(p.t.cfg.OpenTimeout, func() { timedOut.Store(true); cancel() })
	p.setAbort(func(error) { cancel() })
	resp, err := p.t.client.Do(req)
	stopped := timer.Stop()
	p.setAbort(nil)
	if err != nil {
		cancel()
		pw.Close()
		if !stopped && timedOut.Load() {
			return nil, fmt.Errorf("stream to %s: no answer within %v: %w", base, p.t.cfg.OpenTimeout, err)
		}
		return nil, fmt.Errorf("stream to %s: %w", base, err)
	}
	if err := p.t.checkAnswer(resp, http.StatusOK); err != nil {
		cancel()
		pw.Close()
		return nil, fmt.Errorf("stream to %s: %w", base, err)
	}
	s := &stream{pw: pw, body: resp.Body, cancel: cancel, done: make(chan struct{})}
	s.watchdog = time.AfterFunc(time.Hour, func() {
		s.abort(fmt.Errorf("stream to %s: a batch was not accepted within %v", base, p.t.cfg.WriteTimeout))
	})
	s.watchdog.Stop()
	p.setAbort(s.abort)
	p.t.wg.Go(s.watch)
	return s, nil
}

// pump writes whatever is queued, one batch per wake-up, until the stream
// fails or the peer is stopped.
func (p *peer) pump(s *stream) error {
	defer p.setAbort(nil)
	bw := bufio.NewWriterSize(s.pw, 64<<10)
	var batch []*raftpb.Message
	var scratch []byte
	for {
		var size int
		batch, size = p.q.take(batch)
		if len(batch) > 0 {
			var err error
			scratch, err = p.writeBatch(s, bw, batch, scratch)
			p.q.release(len(batch), size)
			clear(batch) // let the messages be collected
			if err != nil {
				return err
			}
		}
		select {
		case <-p.q.ready:
		case <-s.done:
			return s.err(nil)
		case <-p.ctx.Done():
			return p.ctx.Err()
		}
	}
}

func (p *peer) writeBatch(s *stream, bw *bufio.Writer, batch []*raftpb.Message, scratch []byte) ([]byte, error) {
	s.watchdog.Reset(p.t.cfg.WriteTimeout)
	defer s.watchdog.Stop()
	n := 0
	for _, m := range batch {
		var err error
		scratch, err = appendFrame(scratch[:0], m)
		if err != nil { // a message raft built cannot fail to encode; skip it
			p.dropped.Add(1)
			p.t.log.Error("raft message dropped", "peer", p.id, "err", err)
			continue
		}
		if _, err := bw.Write(scratch); err != nil {
			return scratch, s.err(err)
		}
		n++
	}
	if err := bw.Flush(); err != nil {
		return scratch, s.err(err)
	}
	if cap(scratch) > reuseBufLimit { // do not pin a large message's buffer
		scratch = nil
	}
	p.sent.Add(uint64(n))
	p.contact()
	return scratch, nil
}

func (t *HTTP) setHeaders(req *http.Request, to uint64) {
	req.Header.Set(hdrClusterID, t.cfg.ClusterID)
	req.Header.Set(hdrFrom, strconv.FormatUint(t.cfg.ID, 10))
	req.Header.Set(hdrTo, strconv.FormatUint(to, 10))
	req.Header.Set("Content-Type", contentFrames)
}

// RemovalListener is implemented by receivers that want to know when a
// peer of their cluster refuses them as removed: a member cut off before it
// applied its own removal learns it this way.
type RemovalListener interface {
	SelfRemoved()
}

func (t *HTTP) selfRemoved() {
	if l, ok := t.cfg.Receiver.(RemovalListener); ok {
		l.SelfRemoved()
	}
}

// statusError is a peer's refusal.
type statusError struct {
	code int
	msg  string
}

func (e *statusError) Error() string {
	return fmt.Sprintf("peer answered %d %s: %s", e.code, http.StatusText(e.code), e.msg)
}

// fatal refusals need an operator: they will not go away by retrying.
func (e *statusError) fatal() bool {
	return e.code == http.StatusPreconditionFailed || e.code == http.StatusGone
}

// checkAnswer turns anything but the wanted status from a peer of our
// cluster into an error, closing the body then.
func (t *HTTP) checkAnswer(resp *http.Response, want int) error {
	if resp.StatusCode != want {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		resp.Body.Close()
		if resp.StatusCode == http.StatusGone && resp.Header.Get(hdrClusterID) == t.cfg.ClusterID {
			t.selfRemoved()
		}
		return &statusError{code: resp.StatusCode, msg: strings.TrimSpace(string(b))}
	}
	// The check is mutual: a peer that does not check (or a stray server on
	// the address) must not get our messages either.
	if got := resp.Header.Get(hdrClusterID); got != t.cfg.ClusterID {
		resp.Body.Close()
		return &statusError{code: http.StatusPreconditionFailed,
			msg: fmt.Sprintf("the peer belongs to cluster %q, not %q", got, t.cfg.ClusterID)}
	}
	return nil
}
