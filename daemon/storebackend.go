package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/kcd-project/kcd/api"
	"github.com/kcd-project/kcd/daemon/store/activestore"
	"github.com/kcd-project/kcd/daemon/store/remotestore"
	"github.com/kcd-project/kcd/store"
)

// leaderStore is how a Raft node that is not the leader reaches a non-raft
// active backend: the store API of the other members, of which only the
// leader serves it.
func (n *Node) leaderStore() (store.Store, error) {
	var urls []string
	for id, m := range memberRecords(n.raft) {
		if id != n.cfg.NodeID && m.RESTURL != "" {
			urls = append(urls, m.RESTURL)
		}
	}
	if len(urls) == 0 {
		return nil, fmt.Errorf("no other Raft member is known yet")
	}
	return remotestore.New(urls, remotestore.Options{
		Logger: n.log.With("subsys", "remotestore"), Transport: n.remoteStoreTransport,
		Prefer: n.leaderURL,
	})
}

// leaderURL is the REST URL of the Raft leader as this node knows it ("":
// none or unknown): the node whose store API serves a non-raft backend.
func (n *Node) leaderURL() string {
	id := n.raft.Leader()
	if id == 0 || id == n.cfg.NodeID {
		return ""
	}
	kv, found, err := n.raft.FSM().Get(memberKey(id))
	if err != nil || !found {
		return ""
	}
	var rec memberRecord
	if json.Unmarshal(kv.Value, &rec) != nil {
		return ""
	}
	return rec.RESTURL
}

// bootstrapStore makes the configured backend the first one of a new
// cluster: when this node leads and the cluster has no store record yet,
// it switches to the backend (copying what the cluster wrote so far), or,
// when the backend already holds metadata (a database kept from before),
// takes it as it is. Afterwards the record in Raft decides, and --store is
// not read again.
func (n *Node) bootstrapStore(ctx context.Context) {
	want := n.cfg.Store.Backend
	if want == "" || want == activestore.Raft {
		return
	}
	settings := n.cfg.Store.BackendSettings()
	for ctx.Err() == nil {
		done, err := n.tryBootstrapStore(ctx, want, settings)
		if done {
			return
		}
		if err != nil {
			n.log.Warn("the configured metadata backend is not active yet; retrying", "backend", want, "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

func (n *Node) tryBootstrapStore(ctx context.Context, want string, settings map[string]string) (bool, error) {
	if !n.raft.IsLeader() {
		// Another node bootstraps it, or this one once it leads; stop
		// once the cluster's backend is chosen.
		_, chosen, _ := n.active.Chosen()
		return chosen, nil
	}
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := n.raft.LinearizableRead(rctx); err != nil {
		return false, err
	}
	rec, chosen, err := n.active.Chosen()
	if err != nil || chosen {
		if chosen {
			n.logConfiguredStore(want)
		}
		return chosen, err
	}
	// A switch to the backend noted but not taken effect (its leader died,
	// or it failed) left what the database holds: a partial copy of this
	// cluster's, to replace, not a kept cluster's to take.
	force := rec.LastSwitch != nil && rec.LastSwitch.To == want
	_, err = n.active.Switch(rctx, api.StoreSwitchRequest{Backend: want, Settings: settings, Force: force})
	if err == nil {
		n.log.Info("switching the new cluster to the configured metadata backend", "backend", want)
		return n.waitSwitch(ctx)
	}
	if !errors.Is(err, activestore.ErrTargetHeld) {
		return false, err
	}
	// The database holds a cluster's metadata: take it as it is.
	if err := n.active.Adopt(rctx, activestore.Record{Backend: want, Settings: settings, Since: time.Now().UTC()}); err != nil {
		return false, err
	}
	n.log.Info("the new cluster takes the metadata the configured backend holds", "backend", want)
	return true, nil
}

// waitSwitch waits for the bootstrap switch to end.
func (n *Node) waitSwitch(ctx context.Context) (bool, error) {
	for ctx.Err() == nil {
		st := n.active.Status(ctx)
		if sw := st.LastSwitch; sw != nil && sw.State != api.SwitchRunning {
			if sw.State == api.SwitchFailed {
				return false, fmt.Errorf("switch to the configured backend: %s", sw.Error)
			}
			return true, nil
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
	return false, ctx.Err()
}

// logConfiguredStore notes once that --store no longer decides.
func (n *Node) logConfiguredStore(want string) {
	if name, _ := n.active.Backend(); name != want {
		n.log.Info("the cluster's metadata backend is set in the cluster; --store only chooses a new cluster's first backend", "active", name, "configured", want)
	}
}
