package activestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/kcd-project/kcd/api"
	_ "github.com/kcd-project/kcd/daemon/store/sqlstore" // registers mysql and postgres
	"github.com/kcd-project/kcd/internal/testenv"
	"github.com/kcd-project/kcd/raft/raftstore"
	"github.com/kcd-project/kcd/raft/rafttest"
)

// postgresTarget returns the settings of the test environment's
// PostgreSQL on tables of their own, dropped when the test ends.
func postgresTarget(t *testing.T) map[string]string {
	t.Helper()
	dsn := testenv.Require(t, testenv.PostgreDSN)
	prefix := fmt.Sprintf("as%d_", time.Now().UnixNano()%1e9)
	t.Cleanup(func() {
		db, err := sql.Open("pgx", dsn)
		if err != nil {
			t.Errorf("drop tables: %v", err)
			return
		}
		defer db.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, table := range []string{"kv", "meta", "history", "schema"} {
			if _, err := db.ExecContext(ctx, "DROP TABLE IF EXISTS "+prefix+table); err != nil {
				t.Errorf("drop table %s%s: %v", prefix, table, err)
			}
		}
	})
	return map[string]string{"dsn": dsn, "table_prefix": prefix}
}

// single is the active store of a one-member cluster.
func single(t *testing.T, dropAfter time.Duration) (*Store, *raftstore.Store) {
	t.Helper()
	c := rafttest.NewCluster(t, 1, nil)
	n := c.Leader(10 * time.Second)
	rs := raftstore.New(n)
	s := New(Config{Raft: n, RaftStore: rs, DropCopyAfter: dropAfter})
	ctx, cancel := context.WithCancel(context.Background())
	go s.Run(ctx)
	t.Cleanup(func() {
		cancel()
		s.Close()
		rs.Close()
	})
	return s, rs
}

// switchTo starts a switch to backend with settings (retrying while the
// leader's mark is not in yet or it tidies up) and waits until it is done.
func switchTo(t *testing.T, s *Store, backend string, settings map[string]string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	var sw api.StoreSwitch
	var err error
	for {
		sw, err = s.Switch(ctx, api.StoreSwitchRequest{Backend: backend, Settings: settings})
		// A new leader refuses switches until it has tidied up.
		if !errors.Is(err, ErrNotLeader) && !errors.Is(err, ErrTidying) || ctx.Err() != nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("switch to %s: %v", backend, err)
	}
	for {
		st := s.Status(ctx)
		if ls := st.LastSwitch; ls != nil && ls.ID == sw.ID && ls.State != api.SwitchRunning {
			if ls.State != api.SwitchDone || st.Backend != backend {
				t.Fatalf("switch to %s ended %s (%s), backend %s", backend, ls.State, ls.Error, st.Backend)
			}
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("switch to %s not done within 20 s", backend)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func raftKeys(t *testing.T, rs *Store, prefix string) int {
	t.Helper()
	kvs, _, err := rs.cfg.Raft.FSM().Scan(prefix, 0)
	if err != nil {
		t.Fatal(err)
	}
	return len(kvs)
}

// After a switch away from raft the Raft copy stays for
// Config.DropCopyAfter, then it is dropped; the metadata is on the new
// backend.
func TestIntegrationSwitchDropsTheRaftCopyLater(t *testing.T) {
	s, _ := single(t, 300*time.Millisecond)
	ctx := t.Context()
	for _, k := range []string{"kcd/connect/a", "kcd/connect/b"} {
		if _, err := s.Put(ctx, k, []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	switchTo(t, s, "postgres", postgresTarget(t))
	waitFor(t, "drop of the Raft copy", func() bool { return raftKeys(t, s, "kcd/connect/") == 0 })
	if kv, found, err := s.Get(ctx, "kcd/connect/a"); err != nil || !found || string(kv.Value) != "v" {
		t.Fatalf("Get after the drop: %q, %v, %v; want v from the new backend", kv.Value, found, err)
	}
}

// A switch back to raft while the Raft copy of the switch away is still
// there (its drop pending) replaces it without --force, and carries what
// changed meanwhile.
func TestIntegrationSwitchBackToRaftBeforeTheDrop(t *testing.T) {
	s, _ := single(t, time.Hour)
	ctx := t.Context()
	if _, err := s.Put(ctx, "kcd/connect/a", []byte("1")); err != nil {
		t.Fatal(err)
	}
	switchTo(t, s, "postgres", postgresTarget(t))
	if n := raftKeys(t, s, "kcd/connect/"); n != 1 {
		t.Fatalf("the Raft copy holds %d keys right after the switch; want the stale 1", n)
	}
	rev, err := s.Put(ctx, "kcd/connect/a", []byte("2"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Delete(ctx, "kcd/connect/gone"); err != nil {
		t.Fatal(err)
	}
	switchTo(t, s, Raft, nil) // not forced
	kv, found, err := s.Get(ctx, "kcd/connect/a")
	if err != nil || !found || string(kv.Value) != "2" || kv.ModRevision != rev {
		t.Fatalf("Get after the switch back: %q at %d, %v, %v; want 2 at %d", kv.Value, kv.ModRevision, found, err, rev)
	}
	if r, err := s.Revision(ctx); err != nil || r < rev {
		t.Fatalf("Revision after the switch back = %d, %v; want at least %d", r, err, rev)
	}
}

// A leader that is still tidying up refuses a switch with ErrTidying, not
// ErrSwitchRunning: no switch runs, and one may start in a moment (the
// REST API answers the two apart). No database is reached: the refusal
// comes before the target is opened.
func TestSwitchRefusedWhileTidying(t *testing.T) {
	s, _ := single(t, time.Hour)
	waitFor(t, "the leader's mark and tidy-up", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.mark.term != 0 && s.mark.term == s.cfg.Raft.Term() && s.tidied == s.mark.term
	})
	req := api.StoreSwitchRequest{Backend: "postgres", Settings: map[string]string{"dsn": "postgres://nowhere.invalid/kcd"}}
	set := func(tidying, busy bool) {
		s.swmu.Lock()
		s.tidying, s.busy = tidying, busy
		s.swmu.Unlock()
	}

	set(true, false) // as startTidy holds it while a new leader tidies
	_, err := s.Switch(t.Context(), req)
	if !errors.Is(err, ErrTidying) || errors.Is(err, ErrSwitchRunning) {
		t.Errorf("switch while tidying: %v; want ErrTidying alone", err)
	}
	set(false, true) // as a running switch holds it
	_, err = s.Switch(t.Context(), req)
	if !errors.Is(err, ErrSwitchRunning) || errors.Is(err, ErrTidying) {
		t.Errorf("switch while another runs: %v; want ErrSwitchRunning alone", err)
	}
	set(false, false)
}
