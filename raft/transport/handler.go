package transport

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"go.etcd.io/raft/v3/raftpb"
)

// admit checks that a request comes from a live member of our cluster and
// is meant for us; it answers the refusal itself and returns false.
func (t *HTTP) admit(w http.ResponseWriter, r *http.Request) (uint64, bool) {
	w.Header().Set(hdrClusterID, t.cfg.ClusterID)
	if t.cfg.ServerTLS != nil && r.TLS == nil {
		http.Error(w, "raft peers must use TLS to reach this member", http.StatusForbidden)
		return 0, false
	}
	if got := r.Header.Get(hdrClusterID); got != t.cfg.ClusterID {
		http.Error(w, fmt.Sprintf("cluster id mismatch: member %d belongs to cluster %q, the request comes from cluster %q",
			t.cfg.ID, t.cfg.ClusterID, got), http.StatusPreconditionFailed)
		return 0, false
	}
	from, err := strconv.ParseUint(r.Header.Get(hdrFrom), 10, 64)
	if err != nil || from == 0 {
		http.Error(w, "missing or bad "+hdrFrom+" header", http.StatusBadRequest)
		return 0, false
	}
	if to := r.Header.Get(hdrTo); to != strconv.FormatUint(t.cfg.ID, 10) {
		// The sender's address book points at the wrong member.
		http.Error(w, fmt.Sprintf("request for member %s reached member %d", to, t.cfg.ID), http.StatusPreconditionFailed)
		return 0, false
	}
	if t.recv.IsIDRemoved(from) {
		http.Error(w, removedMsg(from), http.StatusGone)
		return 0, false
	}
	if err := t.checkPeerCert(from, r.TLS); err != nil {
		http.Error(w, err.Error(), http.StatusForbidden)
		return 0, false
	}
	return from, true
}

// checkPeerCert binds a verified client certificate to the member the
// request claims to come from: it must be valid for the host of that
// member's peer URL as this member knows it, so that a member cannot send
// as another one. Without a verified client certificate (no mutual TLS)
// there is nothing to bind.
func (t *HTTP) checkPeerCert(from uint64, cs *tls.ConnectionState) error {
	if cs == nil || len(cs.VerifiedChains) == 0 {
		return nil
	}
	p := t.peer(from)
	if p == nil {
		return fmt.Errorf("member %d does not know member %d: its certificate cannot be checked", t.cfg.ID, from)
	}
	p.mu.Lock()
	raw := p.url
	p.mu.Unlock()
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" {
		return fmt.Errorf("member %d has no peer URL to check its certificate against", from)
	}
	if err := cs.PeerCertificates[0].VerifyHostname(u.Hostname()); err != nil {
		return fmt.Errorf("the client certificate is not member %d's (its peer URL's host is %s): %v", from, u.Hostname(), err)
	}
	return nil
}

func removedMsg(id uint64) string {
	return fmt.Sprintf("member %d was removed from the cluster", id)
}

// serve runs fn for an admitted request with a context that Close cancels;
// Close also interrupts fn's body reads.
func (t *HTTP) serve(w http.ResponseWriter, r *http.Request, fn func(context.Context, uint64)) {
	if !t.enterHandler() {
		http.Error(w, "raft transport is closed", http.StatusServiceUnavailable)
		return
	}
	defer t.handlers.Done()
	from, ok := t.admit(w, r)
	if !ok {
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	rc := http.NewResponseController(w)
	interrupted := make(chan struct{})
	stop := context.AfterFunc(t.ctx, func() {
		defer close(interrupted)
		cancel()
		_ = rc.SetReadDeadline(time.Now()) // a body read would block Close
	})
	defer func() {
		// The response writer must not be touched once the handler returns.
		if !stop() {
			<-interrupted
		}
	}()
	fn(ctx, from)
}

// serveStream delivers a peer's frames in order until it closes the stream.
// Once the 200 is sent, refusals go into the body as text.
func (t *HTTP) serveStream(w http.ResponseWriter, r *http.Request) {
	if r.ProtoMajor < 2 {
		http.Error(w, "raft streams need HTTP/2; configure the peer listener with ConfigureServer",
			http.StatusHTTPVersionNotSupported)
		return
	}
	t.serve(w, r, func(ctx context.Context, from uint64) {
		w.WriteHeader(http.StatusOK)
		if err := http.NewResponseController(w).Flush(); err != nil {
			return
		}
		if err := t.deliver(ctx, from, newFrameReader(r.Body, t.cfg.MaxFrameBytes)); err != nil {
			if ctx.Err() == nil {
				t.log.Debug("raft stream from peer ended", "peer", from, "err", err)
				fmt.Fprintln(w, err)
			}
		}
	})
}

// serveSnapshot delivers one MsgSnap and answers 204 once raft has taken
// it, so that the sender can report the outcome.
func (t *HTTP) serveSnapshot(w http.ResponseWriter, r *http.Request) {
	t.serve(w, r, func(ctx context.Context, from uint64) {
		m, err := newFrameReader(r.Body, t.cfg.MaxFrameBytes).next()
		if errors.Is(err, io.EOF) {
			err = errors.New("empty snapshot request")
		}
		if err == nil {
			err = t.check(from, m)
		}
		if err == nil && m.GetType() != raftpb.MsgSnap {
			err = fmt.Errorf("%s sent as a snapshot", m.GetType())
		}
		if err != nil {
			code := http.StatusBadRequest
			if errors.Is(err, errRemoved) {
				code = http.StatusGone
			}
			http.Error(w, err.Error(), code)
			return
		}
		if err := t.recv.Process(ctx, m); err != nil {
			http.Error(w, fmt.Sprintf("raft did not take the snapshot: %v", err), http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
}

var errRemoved = errors.New("sender was removed from the cluster")

// check applies the per-message rules to m, received on a connection that
// was admitted for from.
func (t *HTTP) check(from uint64, m *raftpb.Message) error {
	if m.GetFrom() != from || m.GetTo() != t.cfg.ID {
		return fmt.Errorf("message %d→%d on a connection from %d to %d", m.GetFrom(), m.GetTo(), from, t.cfg.ID)
	}
	// Checked for every message: the sender may be removed while its stream
	// is open.
	if t.recv.IsIDRemoved(from) {
		return fmt.Errorf("%w: %s", errRemoved, removedMsg(from))
	}
	return nil
}

// deliver hands a stream's messages to the receiver until EOF. A frame that
// breaks the rules ends the stream with an error.
func (t *HTTP) deliver(ctx context.Context, from uint64, fr *frameReader) error {
	for {
		m, err := fr.next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := t.check(from, m); err != nil {
			return err
		}
		if err := t.recv.Process(ctx, m); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			// raft refuses some messages (e.g. after it was stopped); that is
			// no reason to end the stream.
			t.log.Debug("raft refused a message", "peer", from, "type", m.GetType(), "err", err)
		}
	}
}
