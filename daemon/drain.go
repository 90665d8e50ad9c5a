package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/kcd-project/kcd/daemon/coordinator"
	"github.com/kcd-project/kcd/store"
)

// drainTimeout bounds how long a removal waits for the member's worker to
// hand over its units; past it the member is removed anyway (a unit that
// will not stop must not block a removal for ever). It leaves room in
// kcctl's 30 s request timeout for the removal itself.
const drainTimeout = 20 * time.Second

// memberWorkers returns the ids of the workers that run in member id: those
// with a session naming the node, and the one its REST URL names.
func (n *Node) memberWorkers(ctx context.Context, id uint64) ([]string, error) {
	var out []string
	kvs, _, err := n.store.Scan(ctx, coordinator.WorkerPrefix, 0)
	if err != nil {
		return nil, fmt.Errorf("read the workers: %w", err)
	}
	for _, kv := range kvs {
		var w coordinator.WorkerInfo
		if json.Unmarshal(kv.Value, &w) == nil && w.NodeID == id {
			out = append(out, strings.TrimPrefix(kv.Key, coordinator.WorkerPrefix))
		}
	}
	if rec, ok := memberRecords(n.raft)[id]; ok && rec.RESTURL != "" {
		wid := strings.TrimPrefix(strings.TrimPrefix(rec.RESTURL, "http://"), "https://")
		found := false
		for _, w := range out {
			found = found || w == wid
		}
		if !found {
			out = append(out, wid)
		}
	}
	return out, nil
}

// setDraining turns draining of worker wid on or off, as kcctl worker drain
// does; the coordinator then moves its units away, each stopped (and its
// offsets committed) before it runs elsewhere.
func (n *Node) setDraining(ctx context.Context, wid string, on bool) error {
	key := coordinator.SettingsPrefix + wid
	for {
		kv, found, err := n.store.Get(ctx, key)
		if err != nil {
			return err
		}
		var s coordinator.Settings
		if found {
			if err := json.Unmarshal(kv.Value, &s); err != nil {
				return fmt.Errorf("settings of worker %s: %w", wid, err)
			}
		}
		if s.Draining == on {
			return nil
		}
		s.Draining = on
		if !on && s.Weight == nil {
			_, _, err := n.store.Batch(ctx, []store.Cond{{Key: key, ModRevision: kv.ModRevision}}, []store.Op{store.Delete(key)})
			return err
		}
		b, _ := json.Marshal(s)
		if _, ok, err := n.store.CompareAndSet(ctx, key, kv.ModRevision, b); err != nil || ok {
			return err
		}
	}
}

// holdsUnits reports whether any unit is owned by, or being revoked from,
// one of workers.
func (n *Node) holdsUnits(ctx context.Context, workers []string) (bool, error) {
	kvs, _, err := n.store.Scan(ctx, coordinator.AssignPrefix, 0)
	if err != nil {
		return false, err
	}
	mine := func(w string) bool {
		for _, x := range workers {
			if x == w {
				return true
			}
		}
		return false
	}
	for _, kv := range kvs {
		_, isRevoke, ok := coordinator.ParseUnitKey(kv.Key)
		if !ok {
			continue
		}
		if isRevoke {
			var r coordinator.Revoke
			if json.Unmarshal(kv.Value, &r) == nil && mine(r.From) {
				return true, nil
			}
			continue
		}
		var o coordinator.Owner
		if json.Unmarshal(kv.Value, &o) == nil && mine(o.Worker) {
			return true, nil
		}
	}
	return false, nil
}

// drainMember moves every unit off member id's worker before the member is
// removed: a live member's tasks stop and commit their last offsets while
// the store still takes them, instead of losing them when the removed node
// stops. It returns a function that clears the drain marks, to call once
// the member is gone (worker ids are addresses, which a later node may
// reuse).
func (n *Node) drainMember(ctx context.Context, id uint64) (func(), error) {
	noop := func() {}
	if n.store == nil {
		return noop, nil
	}
	workers, err := n.memberWorkers(ctx, id)
	if err != nil || len(workers) == 0 {
		return noop, err
	}
	for _, w := range workers {
		if err := n.setDraining(ctx, w, true); err != nil {
			return noop, fmt.Errorf("drain worker %s of member %d: %w", w, id, err)
		}
	}
	clear := func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		for _, w := range workers {
			if err := n.setDraining(cctx, w, false); err != nil {
				n.log.Warn("clear the drain mark of a removed member's worker", "worker", w, "err", err)
			}
		}
	}
	dctx, cancel := context.WithTimeout(ctx, drainTimeout)
	defer cancel()
	start := time.Now()
	for {
		held, err := n.holdsUnits(dctx, workers)
		if err == nil && !held {
			n.log.Info("drained member before its removal", "member", id, "workers", workers, "took", time.Since(start).Round(time.Millisecond))
			return clear, nil
		}
		select {
		case <-dctx.Done():
			if ctx.Err() != nil {
				clear()
				return noop, ctx.Err()
			}
			n.log.Warn("member's worker still holds units; removing it anyway", "member", id, "workers", workers, "waited", drainTimeout, "err", err)
			return clear, nil
		case <-time.After(100 * time.Millisecond):
		}
	}
}
