package fsm_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/kcd-project/kcd/raft/fsm"
)

// A damaged page of the state file makes Open fail with an error that names
// the file, never a panic of bbolt's (which, at Open, comes from a goroutine
// of bbolt's own and takes the process down).
func TestOpenRefusesDamagedPages(t *testing.T) {
	src := filepath.Join(t.TempDir(), "state.db")
	f := openFSM(t, src, fsm.Options{})
	b := &logBuilder{t: t}
	for i := range 3000 {
		b.add(put(fmt.Sprintf("connectors/c%05d/config", i), strings.Repeat("v", 40)))
	}
	mustApply(t, f, b.entries)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	pageSize, leaf, branch := pagesOf(t, src)

	cases := []struct {
		name   string
		damage func(page []byte)
		id     int
	}{
		{"zeroed leaf page", func(p []byte) { clear(p) }, leaf},
		{"zeroed branch page", func(p []byte) { clear(p) }, branch},
		{"leaf page id changed", func(p []byte) { p[0] ^= 0x5a }, leaf},
		{"leaf elements overwritten", func(p []byte) { copy(p[16:], bytes.Repeat([]byte{0xff}, 256)) }, leaf},
		{"branch child out of the file", func(p []byte) { copy(p[16+8:], bytes.Repeat([]byte{0x7f}, 8)) }, branch},
		{"element count too large", func(p []byte) { p[10], p[11] = 0xfe, 0xff }, leaf},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state.db")
			data, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			tc.damage(data[tc.id*pageSize : (tc.id+1)*pageSize])
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			f, err := fsm.Open(path, fsm.Options{})
			if err == nil {
				f.Close()
				t.Fatal("Open took a damaged file")
			}
			if !errors.Is(err, fsm.ErrDamaged) || !strings.Contains(err.Error(), path) {
				t.Fatalf("Open: %v; want an error wrapping ErrDamaged that names %s", err, path)
			}
		})
	}
}

// pagesOf returns the page size of the bbolt file at path, and the id of
// one of its leaf pages and one of its branch pages.
func pagesOf(t *testing.T, path string) (pageSize, leaf, branch int) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		for id := 2; ; id++ {
			p, err := tx.Page(id)
			if err != nil {
				return err
			}
			if p == nil {
				break
			}
			switch {
			case p.Type == "leaf" && leaf == 0 && p.Count > 10:
				leaf = id
			case p.Type == "branch" && branch == 0:
				branch = id
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if leaf == 0 || branch == 0 {
		t.Fatalf("no leaf (%d) or branch (%d) page found", leaf, branch)
	}
	return db.Info().PageSize, leaf, branch
}
