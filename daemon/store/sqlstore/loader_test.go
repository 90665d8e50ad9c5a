package sqlstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kcd-project/kcd/internal/testenv"
	"github.com/kcd-project/kcd/store"
)

func wantKV(t *testing.T, s store.Store, key, value string, create, mod int64) {
	t.Helper()
	kv, found, err := s.Get(t.Context(), key)
	if err != nil || !found {
		t.Fatalf("Get(%q) = found %v, %v; want %q", key, found, err, value)
	}
	if string(kv.Value) != value || kv.CreateRevision != create || kv.ModRevision != mod {
		t.Fatalf("Get(%q) = %q create %d mod %d, want %q create %d mod %d", key, kv.Value, kv.CreateRevision, kv.ModRevision, value, create, mod)
	}
}

func wantAbsent(t *testing.T, s store.Store, key string) {
	t.Helper()
	if kv, found, err := s.Get(t.Context(), key); err != nil || found {
		t.Fatalf("Get(%q) = %q, found %v, %v; want absent", key, kv.Value, found, err)
	}
}

func wantRev(t *testing.T, s store.Store, want int64) {
	t.Helper()
	if rev, err := s.Revision(t.Context()); err != nil || rev != want {
		t.Fatalf("Revision = %d, %v; want %d", rev, err, want)
	}
}

func nextEvent(t *testing.T, w store.Watcher) store.Event {
	t.Helper()
	select {
	case ev, ok := <-w.Events():
		if !ok {
			t.Fatalf("watch ended: %v", w.Err())
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10s")
	}
	panic("unreachable")
}

func TestIntegrationLoader(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			dsn := testenv.Require(t, b.env)
			s := openTest(t, b.name, dsn, nil)
			defer s.Close()
			ctx := t.Context()
			for _, k := range []string{"a", "b", "kcd/cluster/store", "kcd/members/1"} {
				if _, err := s.Put(ctx, k, []byte("old")); err != nil {
					t.Fatal(err)
				}
			}
			// Clear keeps the prefixes asked for and the revision, and
			// drops the rest and the history.
			if err := s.Clear(ctx, "kcd/cluster/", "kcd/members/"); err != nil {
				t.Fatalf("Clear: %v", err)
			}
			wantAbsent(t, s, "a")
			wantAbsent(t, s, "b")
			wantKV(t, s, "kcd/cluster/store", "old", 3, 3)
			wantKV(t, s, "kcd/members/1", "old", 4, 4)
			wantRev(t, s, 4)
			if w, err := s.Watch(ctx, "", 3); !errors.Is(err, store.ErrCompacted) {
				if err == nil {
					w.Close()
				}
				t.Fatalf("Watch from 3 after Clear at 4: %v, want store.ErrCompacted", err)
			}
			// Without keep, everything goes and the revisions start again.
			if err := s.Clear(ctx); err != nil {
				t.Fatalf("Clear: %v", err)
			}
			wantRev(t, s, 0)
			if kvs, _, err := s.Scan(ctx, "", 0); err != nil || len(kvs) != 0 {
				t.Fatalf("Scan after Clear() = %d keys, %v; want none", len(kvs), err)
			}

			// Load keeps the revisions it is given.
			if err := s.Load(ctx, 100, []store.KV{
				{Key: "a", Value: []byte("1"), CreateRevision: 10, ModRevision: 50},
				{Key: "b", Value: []byte("2"), CreateRevision: 99, ModRevision: 100},
				{Key: "c", Value: nil, CreateRevision: 7, ModRevision: 7},
			}, nil); err != nil {
				t.Fatalf("Load: %v", err)
			}
			wantKV(t, s, "a", "1", 10, 50)
			wantKV(t, s, "b", "2", 99, 100)
			wantKV(t, s, "c", "", 7, 7)
			wantRev(t, s, 100)
			kvs, rev, err := s.Scan(ctx, "", 0)
			if err != nil || rev != 100 || len(kvs) != 3 {
				t.Fatalf("Scan after Load = %d keys at %d, %v; want 3 at 100", len(kvs), rev, err)
			}
			// No history before rev: a watch from before it is compacted,
			// one from rev works and sees only what follows.
			for _, after := range []int64{1, 50, 99} {
				if w, err := s.Watch(ctx, "", after); !errors.Is(err, store.ErrCompacted) {
					if err == nil {
						w.Close()
					}
					t.Fatalf("Watch from %d after Load at 100: %v, want store.ErrCompacted", after, err)
				}
			}
			w, err := s.Watch(ctx, "", 100)
			if err != nil {
				t.Fatalf("Watch from 100: %v", err)
			}
			defer w.Close()
			r, err := s.Put(ctx, "a", []byte("after"))
			if err != nil || r != 101 {
				t.Fatalf("Put after Load = %d, %v; want 101", r, err)
			}
			if ev := nextEvent(t, w); ev.KV.Key != "a" || ev.KV.CreateRevision != 10 || ev.KV.ModRevision != 101 {
				t.Fatalf("first event after Load = %+v, want a put of a create 10 mod 101", ev.KV)
			}
			w.Close()

			// A later chunk: rev at or above the current, deletions.
			if err := s.Load(ctx, 120, []store.KV{{Key: "d", Value: []byte("4"), CreateRevision: 110, ModRevision: 120}}, []string{"a", "absent"}); err != nil {
				t.Fatalf("second Load: %v", err)
			}
			wantAbsent(t, s, "a")
			wantKV(t, s, "d", "4", 110, 120)
			wantRev(t, s, 120)
			if err := s.Load(ctx, 120, nil, []string{"c"}); err != nil {
				t.Fatalf("Load at the current revision: %v", err)
			}
			wantAbsent(t, s, "c")

			// Limits and revisions that do not fit: ErrInvalid, nothing changes.
			big := bytes.Repeat([]byte{1}, store.MaxValueSize)
			many := make([]string, store.MaxBatchOps+1)
			for i := range many {
				many[i] = fmt.Sprintf("k%d", i)
			}
			half := bytes.Repeat([]byte{2}, store.MaxLoadBytes/2+1)
			for name, call := range map[string]func() error{
				"below current revision": func() error { return s.Load(ctx, 119, nil, nil) },
				"mod above rev": func() error {
					return s.Load(ctx, 130, []store.KV{{Key: "x", CreateRevision: 1, ModRevision: 131}}, nil)
				},
				"create above mod": func() error { return s.Load(ctx, 130, []store.KV{{Key: "x", CreateRevision: 5, ModRevision: 4}}, nil) },
				"zero revisions":   func() error { return s.Load(ctx, 130, []store.KV{{Key: "x"}}, nil) },
				"empty key":        func() error { return s.Load(ctx, 130, []store.KV{{Key: "", CreateRevision: 1, ModRevision: 1}}, nil) },
				"too many":         func() error { return s.Load(ctx, 130, nil, many) },
				"too many bytes": func() error {
					return s.Load(ctx, 130, []store.KV{
						{Key: "x", Value: half, CreateRevision: 1, ModRevision: 1},
						{Key: "y", Value: half, CreateRevision: 1, ModRevision: 1},
					}, nil)
				},
				"negative revision": func() error { return s.Load(ctx, -1, nil, nil) },
			} {
				if err := call(); !errors.Is(err, store.ErrInvalid) {
					t.Errorf("Load %s: %v, want store.ErrInvalid", name, err)
				}
			}
			wantRev(t, s, 120)
			wantAbsent(t, s, "x")
			// One KV of any allowed size is always accepted.
			if err := s.Load(ctx, 130, []store.KV{{Key: "big", Value: big, CreateRevision: 130, ModRevision: 130}}, nil); err != nil {
				t.Fatalf("Load of one maximal value: %v", err)
			}
			wantRev(t, s, 130)
		})
	}
}

// TestIntegrationTablesAndSchema checks that the tables are plain and
// readable, and that a newer schema is refused.
func TestIntegrationTablesAndSchema(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			dsn := testenv.Require(t, b.env)
			s := openTest(t, b.name, dsn, nil)
			ctx := t.Context()
			r1, _ := s.Put(ctx, "conn/a", []byte("va"))
			r2, _, err := s.Batch(ctx, []store.Cond{{Key: "conn/a", ModRevision: r1}},
				[]store.Op{store.Put("conn/b", []byte("vb")), store.Delete("conn/a")})
			if err != nil {
				t.Fatal(err)
			}
			prefix := s.cfg.tablePrefix
			s.Close()

			db, err := s.d.openDB(dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			q := func(query string) string {
				rows, err := db.QueryContext(ctx, s.d.rebind(query))
				if err != nil {
					t.Fatalf("%s: %v", query, err)
				}
				defer rows.Close()
				var out []string
				cols, _ := rows.Columns()
				for rows.Next() {
					vals := make([]any, len(cols))
					ptrs := make([]any, len(cols))
					for i := range vals {
						ptrs[i] = &vals[i]
					}
					if err := rows.Scan(ptrs...); err != nil {
						t.Fatal(err)
					}
					var f []string
					for _, v := range vals {
						if bs, ok := v.([]byte); ok {
							v = string(bs)
						}
						f = append(f, fmt.Sprint(v))
					}
					out = append(out, strings.Join(f, " "))
				}
				return strings.Join(out, "; ")
			}
			if got, want := q("SELECT k, val, create_rev, mod_rev FROM "+prefix+"kv ORDER BY k"), fmt.Sprintf("conn/b vb %d %d", r2, r2); got != want {
				t.Errorf("kv table = %q, want %q", got, want)
			}
			if got, want := q("SELECT rev, compacted FROM "+prefix+"meta"), fmt.Sprintf("%d 0", r2); got != want {
				t.Errorf("meta table = %q, want %q", got, want)
			}
			if got, want := q("SELECT rev, seq, op, k, val, create_rev FROM "+prefix+"history ORDER BY rev, seq"),
				fmt.Sprintf("%d 0 put conn/a va %d; %d 0 put conn/b vb %d; %d 1 delete conn/a  %d", r1, r1, r2, r2, r2, r1); got != want {
				t.Errorf("history table = %q, want %q", got, want)
			}
			if got := q("SELECT version FROM " + prefix + "schema"); got != fmt.Sprint(schemaVersion) {
				t.Errorf("schema table = %q, want %d", got, schemaVersion)
			}

			// Opening again keeps everything; a newer schema is refused.
			s2, err := store.Open(ctx, b.name, map[string]string{"dsn": dsn, "table_prefix": prefix})
			if err != nil {
				t.Fatalf("reopen: %v", err)
			}
			wantKV(t, s2, "conn/b", "vb", r2, r2)
			wantRev(t, s2, r2)
			s2.Close()
			if _, err := db.ExecContext(ctx, "UPDATE "+prefix+"schema SET version = 99"); err != nil {
				t.Fatal(err)
			}
			_, err = store.Open(ctx, b.name, map[string]string{"dsn": dsn, "table_prefix": prefix})
			if err == nil || !strings.Contains(err.Error(), "schema version 99, newer than this kcd knows") {
				t.Fatalf("Open of a newer schema: %v, want a refusal", err)
			}
		})
	}
}

// TestIntegrationHistoryKeep checks that history is trimmed to
// history_keep revisions and the compacted revision raised with it.
func TestIntegrationHistoryKeep(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			dsn := testenv.Require(t, b.env)
			s := openTest(t, b.name, dsn, map[string]string{"history_keep": "10"})
			defer s.Close()
			ctx := t.Context()
			const writes = 200
			var last int64
			for i := range writes {
				rev, err := s.Put(ctx, fmt.Sprintf("k%d", i%7), []byte("v"))
				if err != nil {
					t.Fatal(err)
				}
				last = rev
			}
			var rows, compacted, rev int64
			if err := s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+s.q.history).Scan(&rows); err != nil {
				t.Fatal(err)
			}
			if err := s.db.QueryRowContext(ctx, s.q.readMeta).Scan(&rev, &compacted); err != nil {
				t.Fatal(err)
			}
			if rows > 10+trimSlack+1 || compacted < last-10-trimSlack-1 || rows != last-compacted {
				t.Fatalf("after %d writes with history_keep 10: %d history rows, compacted %d, rev %d", writes, rows, compacted, rev)
			}
			if w, err := s.Watch(ctx, "", 1); !errors.Is(err, store.ErrCompacted) {
				if err == nil {
					w.Close()
				}
				t.Fatalf("Watch from 1: %v, want store.ErrCompacted", err)
			}
			w, err := s.Watch(ctx, "", last-10)
			if err != nil {
				t.Fatalf("Watch from %d: %v", last-10, err)
			}
			defer w.Close()
			for want := last - 9; want <= last; want++ {
				if ev := nextEvent(t, w); ev.KV.ModRevision != want {
					t.Fatalf("replayed event at %d, want %d", ev.KV.ModRevision, want)
				}
			}
		})
	}
}

func TestSettings(t *testing.T) {
	for _, tc := range []struct {
		settings map[string]string
		want     string
	}{
		{map[string]string{}, `"dsn" is required`},
		{map[string]string{"dsn": "x", "password": "p"}, `unknown setting "password"`},
		{map[string]string{"dsn": "x", "max_open_conns": "0"}, `"max_open_conns": want a positive integer`},
		{map[string]string{"dsn": "x", "op_timeout": "soon"}, `"op_timeout": want a positive duration`},
		{map[string]string{"dsn": "x", "table_prefix": "kcd; DROP TABLE x"}, `"table_prefix"`},
		{map[string]string{"dsn": "x", "history_keep": "-3"}, `"history_keep"`},
	} {
		_, err := store.Open(context.Background(), "mysql", tc.settings)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open(%v) = %v, want an error with %q", tc.settings, err, tc.want)
		}
	}
	c, err := parseSettings(map[string]string{"dsn": "x"})
	if err != nil || c.maxOpenConns != DefaultMaxOpenConns || c.opTimeout != DefaultOpTimeout ||
		c.tablePrefix != DefaultTablePrefix || c.pollInterval != DefaultPollInterval || c.historyKeep != DefaultHistoryKeep {
		t.Fatalf("defaults = %+v, %v", c, err)
	}
}

// TestIntegrationLargeBatch writes a Batch of maximal values, which the
// store splits into several statements, and reads it back and watches it.
func TestIntegrationLargeBatch(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			dsn := testenv.Require(t, b.env)
			// 6 MiB in one transaction: what is tested is how it is split,
			// not how fast a loaded machine writes it.
			s := openTest(t, b.name, dsn, map[string]string{"op_timeout": "60s"})
			defer s.Close()
			ctx := t.Context()
			w, err := s.Watch(ctx, "big/", 0)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			const n = 6
			values := make([][]byte, n)
			ops := make([]store.Op, n)
			for i := range ops {
				// Every byte value, so that quoting and escaping are exercised.
				values[i] = bytes.Repeat([]byte{byte(i)}, store.MaxValueSize)
				for j := range values[i] {
					values[i][j] += byte(j)
				}
				ops[i] = store.Put(fmt.Sprintf("big/%d", i), values[i])
			}
			rev, ok, err := s.Batch(ctx, nil, ops)
			if err != nil || !ok {
				t.Fatalf("Batch of %d values of %d bytes = %v, %v", n, store.MaxValueSize, ok, err)
			}
			for i := range n {
				kv, found, err := s.Get(ctx, fmt.Sprintf("big/%d", i))
				if err != nil || !found || !bytes.Equal(kv.Value, values[i]) || kv.ModRevision != rev {
					t.Fatalf("Get(big/%d) = found %v, %d bytes, mod %d, %v", i, found, len(kv.Value), kv.ModRevision, err)
				}
				if ev := nextEvent(t, w); ev.KV.Key != fmt.Sprintf("big/%d", i) || !bytes.Equal(ev.KV.Value, values[i]) || ev.KV.ModRevision != rev {
					t.Fatalf("event %d = %q, %d bytes at %d", i, ev.KV.Key, len(ev.KV.Value), ev.KV.ModRevision)
				}
			}
		})
	}
}

// TestIntegrationTwoClients runs two stores on the same tables, as an old
// and a new leader briefly do after a failover: their concurrent writes
// get distinct, gap-free revisions, compare-and-set stays exclusive across
// them, and a watcher of one sees the writes of both, in order.
func TestIntegrationTwoClients(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			dsn := testenv.Require(t, b.env)
			a := openTest(t, b.name, dsn, map[string]string{"poll_interval": "50ms"})
			defer a.Close()
			other, err := store.Open(t.Context(), b.name, map[string]string{"dsn": dsn, "table_prefix": a.cfg.tablePrefix})
			if err != nil {
				t.Fatal(err)
			}
			defer other.Close()
			ctx := t.Context()
			w, err := a.Watch(ctx, "", 0)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			const perWriter = 25
			var (
				mu   sync.Mutex
				revs = map[int64]string{}
				wins int
				wg   sync.WaitGroup
			)
			for i, st := range []store.Store{a, other, a, other} {
				wg.Go(func() {
					for j := range perWriter {
						key := fmt.Sprintf("w%d/%d", i, j)
						rev, err := st.Put(ctx, key, []byte("v"))
						if err != nil {
							t.Errorf("Put: %v", err)
							return
						}
						_, ok, err := st.CompareAndSet(ctx, "lock", 0, []byte(key))
						if err != nil {
							t.Errorf("CompareAndSet: %v", err)
							return
						}
						mu.Lock()
						if prev, dup := revs[rev]; dup {
							t.Errorf("revision %d returned for %s and %s", rev, prev, key)
						}
						revs[rev] = key
						if ok {
							wins++
						}
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			if t.Failed() {
				return
			}
			if wins != 1 {
				t.Fatalf("%d CompareAndSet(lock, 0) succeeded across two stores, want 1", wins)
			}
			total := int64(len(revs) + 1) // the puts and the one CompareAndSet
			for want := int64(1); want <= total; want++ {
				ev := nextEvent(t, w)
				if ev.KV.ModRevision != want {
					t.Fatalf("watcher got revision %d (%q), want %d", ev.KV.ModRevision, ev.KV.Key, want)
				}
				if key, ok := revs[want]; ok && ev.KV.Key != key {
					t.Fatalf("revision %d is %q in the watch, %q for its writer", want, ev.KV.Key, key)
				}
			}
			// A write of the other store alone reaches the watcher too
			// (the feed polls: no commit of its own store wakes it).
			r, err := other.Put(ctx, "from-other", []byte("x"))
			if err != nil {
				t.Fatal(err)
			}
			if ev := nextEvent(t, w); ev.KV.Key != "from-other" || ev.KV.ModRevision != r {
				t.Fatalf("watcher got %q at %d, want from-other at %d", ev.KV.Key, ev.KV.ModRevision, r)
			}
		})
	}
}
