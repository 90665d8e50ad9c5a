package fsm_test

import (
	"path/filepath"
	"testing"

	"github.com/kcd-project/kcd/raft/fsm"
	"github.com/kcd-project/kcd/store"
	"github.com/kcd-project/kcd/store/storetest"
)

// Local offers compaction, so the suite's ErrCompacted subtest runs.
var _ storetest.Compacter = (*fsm.Local)(nil)

func TestLocalConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := fsm.OpenLocal(filepath.Join(t.TempDir(), "state.db"), fsm.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestLocalLoaderConformance(t *testing.T) {
	for name, opts := range map[string]fsm.Options{"Default": {}, "OpenTransaction": held} {
		t.Run(name, func(t *testing.T) {
			storetest.RunLoader(t, func(t *testing.T) store.Loader {
				s, err := fsm.OpenLocal(filepath.Join(t.TempDir(), "state.db"), opts)
				if err != nil {
					t.Fatal(err)
				}
				return s
			})
		})
	}
}
