package connectstore

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kcd-project/kcd/internal/testenv"
	"github.com/kcd-project/kcd/raft/fsm"
	"github.com/kcd-project/kcd/store"

	_ "github.com/kcd-project/kcd/daemon/store/sqlstore" // the mysql backend
)

const sealCanary = "kcd-canary-secret-seal"

func newKeyHex(t *testing.T) string {
	t.Helper()
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func keyring(t *testing.T, lines ...string) *Keyring {
	t.Helper()
	k, err := ParseKeyring([]byte(strings.Join(lines, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// sealScenario writes a connector with secrets through a sealed store over
// backend and checks what it reads back; it returns the secrets written.
func sealScenario(t *testing.T, backend store.Store) []string {
	t.Helper()
	ctx := context.Background()
	k := keyring(t, newKeyHex(t))
	cs := New(Seal(backend, k))
	pw, taskPw := sealCanary+"-config", sealCanary+"-task"
	cfg := map[string]string{"connector.class": "X", "connection.password": pw, "file": "${file:/etc/kcd/p:out}"}
	if created, err := cs.CreateConnector(ctx, "enc", cfg, TargetStarted); err != nil || !created {
		t.Fatalf("create: %v %v", created, err)
	}
	if _, err := cs.SetTasks(ctx, "enc", []map[string]string{{"connection.password": taskPw}}, nil); err != nil {
		t.Fatal(err)
	}
	got, _, err := cs.Config(ctx, "enc")
	if err != nil || got["connection.password"] != pw || got["file"] != cfg["file"] {
		t.Fatalf("config read back: %v", err)
	}
	tc, err := cs.Tasks(ctx, "enc")
	if err != nil || len(tc.Tasks) != 1 || tc.Tasks[0]["connection.password"] != taskPw {
		t.Fatalf("task configs read back: %v", err)
	}
	all, err := cs.Configs(ctx)
	if err != nil || all["enc"].Config["connection.password"] != pw {
		t.Fatalf("configs read back: %v", err)
	}
	// The export (kcctl migrate to-kafka) reads them plain.
	exp, _, _, err := cs.Export(ctx, "", 10)
	if err != nil || len(exp) != 1 || exp[0].Config["connection.password"] != pw || len(exp[0].Tasks) != 1 || exp[0].Tasks[0]["connection.password"] != taskPw {
		t.Fatalf("export: %d connectors, %v", len(exp), err)
	}
	// The backend holds envelopes under readable keys.
	kvs, _, err := backend.Scan(ctx, Prefix, 0)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, kv := range kvs {
		if bytes.Contains(kv.Value, []byte(sealCanary)) {
			t.Errorf("%s is stored in plain text", kv.Key)
		}
		if kv.Key == configKey("enc") || kv.Key == tasksKey("enc") {
			seen++
			if !Sealed(kv.Value) {
				t.Errorf("%s is not an envelope", kv.Key)
			}
		}
	}
	if seen != 2 {
		t.Fatalf("found %d of the 2 sealed keys", seen)
	}
	return []string{pw, taskPw}
}

// Raft backend: the replicated state machine's bbolt file holds no secret.
func TestSealRaftBackend(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	l, err := fsm.OpenLocal(path, fsm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sealScenario(t, l)
	l.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte(sealCanary)) {
		t.Fatal("the bbolt file holds a secret in plain text")
	}
	if !bytes.Contains(b, []byte("connect/config/enc")) {
		t.Fatal("the bbolt file does not hold the key in plain text: the check above proves nothing")
	}
}

// MariaDB backend: no table row holds a secret.
func TestIntegrationSealMySQL(t *testing.T) {
	dsn := testenv.Require(t, testenv.MySQLDSN)
	prefix := fmt.Sprintf("tseal%d_", time.Now().UnixNano()%1e9)
	s, err := store.Open(t.Context(), "mysql", map[string]string{"dsn": dsn, "table_prefix": prefix})
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Close()
		for _, table := range []string{"kv", "meta", "history", "schema"} {
			_, _ = db.Exec("DROP TABLE IF EXISTS " + prefix + table)
		}
		db.Close()
	})
	sealScenario(t, s)
	rows := 0
	for _, table := range []string{"kv", "history"} {
		r, err := db.QueryContext(t.Context(), "SELECT k, val FROM "+prefix+table)
		if err != nil {
			t.Fatal(err)
		}
		for r.Next() {
			var k, v []byte
			if err := r.Scan(&k, &v); err != nil {
				t.Fatal(err)
			}
			rows++
			if bytes.Contains(v, []byte(sealCanary)) {
				t.Errorf("table %s, key %s holds a secret in plain text", table, k)
			}
		}
		if err := r.Err(); err != nil {
			t.Fatal(err)
		}
		r.Close()
	}
	if rows == 0 {
		t.Fatal("no rows read: the check proves nothing")
	}
}

func openLocal(t *testing.T) store.Store {
	t.Helper()
	l, err := fsm.OpenLocal(filepath.Join(t.TempDir(), "state.db"), fsm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// Plain values written before a key was set stay readable and are sealed
// at their next write; a second key rotates in; a node without the key
// fails clearly; an envelope moved to another key does not open.
func TestSealKeyLifecycle(t *testing.T) {
	ctx := context.Background()
	backend := openLocal(t)
	plain := New(Seal(backend, nil))
	cfg := map[string]string{"connector.class": "X", "connection.password": sealCanary}
	if _, err := plain.CreateConnector(ctx, "c", cfg, TargetStarted); err != nil {
		t.Fatal(err)
	}
	oldKey, newKey := newKeyHex(t), newKeyHex(t)
	kOld := keyring(t, oldKey)
	sealed := New(Seal(backend, kOld))
	got, rev, err := sealed.Config(ctx, "c")
	if err != nil || got["connection.password"] != sealCanary {
		t.Fatalf("plain value through a sealed store: %v", err)
	}
	if ok, err := sealed.UpdateConfig(ctx, "c", cfg, rev); err != nil || !ok {
		t.Fatalf("update: %v %v", ok, err)
	}
	raw, _, _ := backend.Get(ctx, configKey("c"))
	if !Sealed(raw.Value) || !strings.Contains(string(raw.Value), kOld.IDs()[0]) {
		t.Fatalf("not sealed with the key at its next write: %.40q", raw.Value)
	}

	// Without the key: a clear error, no panic, and no value.
	for _, k := range []*Keyring{nil, keyring(t, newKey)} {
		_, _, err := New(Seal(backend, k)).Config(ctx, "c")
		if !errors.Is(err, ErrNoKey) || !strings.Contains(err.Error(), kOld.IDs()[0]) || !strings.Contains(err.Error(), "--config-encryption-key-file") {
			t.Fatalf("read without the key: %v", err)
		}
		if _, err := New(Seal(backend, k)).Configs(ctx); !errors.Is(err, ErrNoKey) {
			t.Fatalf("scan without the key: %v", err)
		}
	}

	// Rotation: the new key first, the old one second.
	kBoth := keyring(t, "# rotated in", newKey, base64.StdEncoding.EncodeToString(mustHex(t, oldKey)))
	rotated := New(Seal(backend, kBoth))
	got, rev, err = rotated.Config(ctx, "c")
	if err != nil || got["connection.password"] != sealCanary {
		t.Fatalf("old envelope with the rotated keyring: %v", err)
	}
	if ok, err := rotated.UpdateConfig(ctx, "c", cfg, rev); err != nil || !ok {
		t.Fatalf("update: %v %v", ok, err)
	}
	if _, _, err := New(Seal(backend, keyring(t, newKey))).Config(ctx, "c"); err != nil {
		t.Fatalf("after a write, the new key alone reads it: %v", err)
	}

	// An envelope copied to another key does not open.
	raw, _, _ = backend.Get(ctx, configKey("c"))
	if _, err := backend.Put(ctx, configKey("d"), raw.Value); err != nil {
		t.Fatal(err)
	}
	if _, _, err := rotated.Config(ctx, "d"); err == nil || errors.Is(err, ErrNoKey) {
		t.Fatalf("a moved envelope: %v", err)
	}
}

func mustHex(t *testing.T, s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseKeyring(t *testing.T) {
	secret := "kcd-canary-secret-32-bytes-long!" // 32 bytes, not hex or base64 of 32
	for _, text := range []string{"", "# only a comment\n", "abcd", secret, newKeyHex(t)[:62]} {
		_, err := ParseKeyring([]byte(text))
		if err == nil {
			t.Errorf("%q: accepted", text)
		} else if strings.Contains(err.Error(), secret) || (len(text) > 8 && strings.Contains(err.Error(), text)) {
			t.Errorf("error shows the key: %v", err)
		}
	}
	k := newKeyHex(t)
	if _, err := ParseKeyring([]byte(k + "\n" + k)); err == nil {
		t.Error("the same key twice was accepted")
	}
	if _, err := LoadKeyring(filepath.Join(t.TempDir(), "none")); err == nil {
		t.Error("a missing key file was accepted")
	}
}

func TestSealedKeys(t *testing.T) {
	for key, want := range map[string]bool{
		"connect/config/a":              true,
		"connect/tasks/a":               true,
		"connect/target/a":              false,
		"connect/status/a/connector":    false,
		"connect/offset/a/x":            false,
		"kcd/imports/data/i1/c/a":       true,
		"kcd/imports/data/i1/o/a/x":     false,
		"kcd/imports/i1":                false,
		"kcd/assign/a":                  false,
		"connect/sinkoffset/a/t/0":      false,
		"kcd/imports/data/i1/connector": false,
	} {
		if got := sealedKey(key); got != want {
			t.Errorf("sealedKey(%q) = %v, want %v", key, got, want)
		}
	}
}
