package transport

import (
	"bytes"
	"context"
	"fmt"
	"net/http"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// runSnapshots sends the peer's snapshots one at a time, each in its own
// request, and reports each outcome to raft.
func (p *peer) runSnapshots() {
	defer p.t.wg.Done()
	for {
		select {
		case m := <-p.snapc:
			if err := p.sendSnapshot(m); err != nil {
				if p.ctx.Err() != nil {
					return // removed or closing: nobody needs the report
				}
				p.dropped.Add(1)
				p.t.log.Warn("raft snapshot not delivered", "peer", p.id, "index", m.GetSnapshot().GetMetadata().GetIndex(), "err", err)
				p.t.recv.ReportUnreachable(p.id)
				p.t.recv.ReportSnapshot(p.id, raft.SnapshotFailure)
				continue
			}
			p.sent.Add(1)
			p.contact()
			p.t.recv.ReportSnapshot(p.id, raft.SnapshotFinish)
		case <-p.ctx.Done():
			return
		}
	}
}

// sendSnapshot posts m as a single frame; the peer answers once raft has
// taken it (Process returned).
func (p *peer) sendSnapshot(m *raftpb.Message) error {
	base, err := p.currentURL()
	if err != nil {
		return err
	}
	body, err := appendFrame(nil, m)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(p.ctx, p.t.cfg.SnapshotTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+snapshotPath, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("snapshot to %s: %w", base, err)
	}
	p.t.setHeaders(req, p.id)
	resp, err := p.t.client.Do(req)
	if err != nil {
		return fmt.Errorf("snapshot to %s: %w", base, err)
	}
	if err := p.t.checkAnswer(resp, http.StatusNoContent); err != nil {
		return fmt.Errorf("snapshot to %s: %w", base, err)
	}
	resp.Body.Close()
	return nil
}
