package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/kcd-project/kcd/raft"
)

// Members record their REST URL and roles in the store under this prefix.
// Raft's membership knows how to reach a member's peer port; a founding
// member's REST URL and roles are only known to the member itself, so each
// one publishes them here (and again whenever they change).
const memberKeyPrefix = "kcd/members/"

type memberRecord struct {
	RESTURL string   `json:"rest_url"`
	Roles   []string `json:"roles"`
}

func memberKey(id uint64) string { return memberKeyPrefix + strconv.FormatUint(id, 10) }

// publishSelf writes this node's member record until it is stored.
func (n *Node) publishSelf(ctx context.Context, self raft.Member) {
	want, _ := json.Marshal(memberRecord{RESTURL: self.RESTURL, Roles: self.Roles})
	backoff := 100 * time.Millisecond
	for {
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		kv, found, err := n.raftStore.Get(wctx, memberKey(self.ID))
		if err == nil && found && string(kv.Value) == string(want) {
			cancel()
			return
		}
		if err == nil {
			_, err = n.raftStore.Put(wctx, memberKey(self.ID), want)
		}
		cancel()
		if err == nil {
			return
		}
		if ctx.Err() != nil || errors.Is(err, raft.ErrStopped) {
			return
		}
		n.log.Debug("publish member record; retrying", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

// memberRecords reads the published records from this node's state
// machine (no read barrier: a slightly old view is fine for addresses).
func memberRecords(r *raft.Node) map[uint64]memberRecord {
	out := map[uint64]memberRecord{}
	kvs, _, err := r.FSM().Scan(memberKeyPrefix, 0)
	if err != nil {
		return out
	}
	for _, kv := range kvs {
		id, err := strconv.ParseUint(kv.Key[len(memberKeyPrefix):], 10, 64)
		var rec memberRecord
		if err != nil || json.Unmarshal(kv.Value, &rec) != nil {
			continue
		}
		out[id] = rec
	}
	return out
}
