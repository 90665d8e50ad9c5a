package coordinator

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/kcd-project/kcd/raft/rafttest"
)

// TakeChanged names the connectors whose units of this worker the
// assignment gave, took or revoked, and no others: a worker looks again at
// those only. A full read of the assignment says all.
func TestTakeChangedNamesOnlyTheConnectorsOfThisWorkersUnits(t *testing.T) {
	r := newOneNode(t)
	st, ctx, wg := r.st, r.ctx, &r.wg
	put := func(key string, v any) {
		t.Helper()
		b, _ := json.Marshal(v)
		if _, err := st.Put(ctx, key, b); err != nil {
			t.Fatal(err)
		}
	}
	put(OwnerKey(Unit{Connector: "a", Task: 0}), Owner{Worker: "w1"})

	m, err := NewMember(MemberConfig{
		Worker: WorkerInfo{ID: "w1", Weight: 1}, Store: st,
		// No coordinator: the session never holds, which TakeChanged
		// does not depend on.
		Endpoints: func() []string { return nil },
		Logger:    rafttest.Logger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	wg.Add(1)
	go func() { defer wg.Done(); m.Run(ctx) }()
	// The first read of the assignment: all.
	waitFor(t, 10*time.Second, "the first read", func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.synced
	})
	if _, all := m.TakeChanged(); !all {
		t.Fatal("after the first read of the assignment: not all")
	}
	// Changed connectors accumulate until taken, in the order of the
	// store: b's unit of another worker first, then a's of this one.
	take := func(what string, want ...string) {
		t.Helper()
		var got []string
		waitFor(t, 10*time.Second, what, func() bool {
			names, all := m.TakeChanged()
			if all {
				t.Fatalf("%s: all", what)
			}
			got = append(got, names...)
			return len(got) >= len(want)
		})
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("%s: changed %v, want %v", what, got, want)
		}
	}
	put(OwnerKey(Unit{Connector: "b", Task: 0}), Owner{Worker: "w2"})
	put(OwnerKey(Unit{Connector: "a", Task: 1}), Owner{Worker: "w1"})
	take("a unit given", "a")
	put(OwnerKey(Unit{Connector: "b", Task: 1}), Owner{Worker: "w2"})
	put(revokeKey(Unit{Connector: "c", Task: 0}), Revoke{From: "w2", To: "w3"})
	put(revokeKey(Unit{Connector: "a", Task: 0}), Revoke{From: "w1", To: "w2"})
	put(OwnerKey(Unit{Connector: "d", Task: 0}), Owner{Worker: "w1"})
	take("a unit revoked, another given", "a", "d")
	put(OwnerKey(Unit{Connector: "c", Task: 0}), Owner{Worker: "w3"})
	put(OwnerKey(Unit{Connector: "d", Task: 0}), Owner{Worker: "w2"})
	take("a unit taken", "d")
}
