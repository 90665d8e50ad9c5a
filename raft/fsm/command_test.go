package fsm_test

import (
	"bytes"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kcd-project/kcd/raft/fsm"
	"github.com/kcd-project/kcd/store"
)

func sampleCommands() []fsm.Command {
	return []fsm.Command{
		{ID: 1, Kind: fsm.KindPut, Key: "connectors/a/config", Value: []byte(`{"x":1}`)},
		{ID: 0, Kind: fsm.KindPut, Key: "k"},
		{ID: 1<<64 - 1, Kind: fsm.KindPut, Key: "\x00\xff", Value: bytes.Repeat([]byte{0}, 300)},
		{ID: 2, Kind: fsm.KindDelete, Key: "k"},
		{ID: 3, Kind: fsm.KindCompareAndSet, Key: "k", ExpectModRev: 0, Value: []byte("v")},
		{ID: 4, Kind: fsm.KindCompareAndSet, Key: "k", ExpectModRev: 1 << 40, Value: nil},
		{ID: 5, Kind: fsm.KindCompareAndSet, Key: "k", ExpectModRev: -1}, // invalid, but representable
		{ID: 6, Kind: fsm.KindBatch},
		{ID: 7, Kind: fsm.KindBatch,
			Conds: []store.Cond{{Key: "a", ModRevision: 0}, {Key: "b", ModRevision: 17}},
			Ops:   []store.Op{store.Put("a", []byte("1")), store.Delete("b"), store.Put("c", nil)}},
		{ID: 8, Kind: fsm.KindBatch, Ops: []store.Op{store.Delete("x")}},
		{ID: 9, Kind: fsm.KindCompact, Rev: 12345},
		{ID: 10, Kind: fsm.KindPut, Key: "", Value: []byte("empty key is invalid but representable")},
		{ID: 11, Kind: fsm.KindLoad, Rev: 40, KVs: []store.KV{
			{Key: "a", Value: []byte("1"), CreateRevision: 3, ModRevision: 39},
			{Key: "b", CreateRevision: 40, ModRevision: 40},
		}, Keys: []string{"c", "d"}},
		{ID: 12, Kind: fsm.KindLoad},
		{ID: 13, Kind: fsm.KindLoad, Rev: -1, KVs: []store.KV{{Key: "a", CreateRevision: -2, ModRevision: -3}}}, // invalid
		{ID: 14, Kind: fsm.KindClear, Prefixes: []string{"kcd/cluster/", "kcd/members/"}},
		{ID: 15, Kind: fsm.KindClear},
		{ID: 16, Kind: fsm.KindFreeze, Frozen: true, Prefixes: []string{"kcd/cluster/"}},
		{ID: 17, Kind: fsm.KindFreeze, Frozen: true},
		{ID: 18, Kind: fsm.KindFreeze},
	}
}

func mustEncode(t testing.TB, c fsm.Command) []byte {
	t.Helper()
	b, err := fsm.EncodeCommand(c)
	if err != nil {
		t.Fatalf("EncodeCommand(%+v): %v", c, err)
	}
	return b
}

// sameCommand compares two commands, taking nil and empty values as equal
// (the encoding does not tell them apart).
func sameCommand(a, b fsm.Command) bool {
	if a.ID != b.ID || a.Kind != b.Kind || a.Key != b.Key || !bytes.Equal(a.Value, b.Value) ||
		a.ExpectModRev != b.ExpectModRev || a.Rev != b.Rev || !slices.Equal(a.Conds, b.Conds) ||
		len(a.Ops) != len(b.Ops) || len(a.KVs) != len(b.KVs) || !slices.Equal(a.Keys, b.Keys) ||
		!slices.Equal(a.Prefixes, b.Prefixes) || a.Frozen != b.Frozen {
		return false
	}
	for i := range a.KVs {
		x, y := a.KVs[i], b.KVs[i]
		if x.Key != y.Key || !bytes.Equal(x.Value, y.Value) || x.CreateRevision != y.CreateRevision || x.ModRevision != y.ModRevision {
			return false
		}
	}
	for i := range a.Ops {
		if a.Ops[i].Type != b.Ops[i].Type || a.Ops[i].Key != b.Ops[i].Key || !bytes.Equal(a.Ops[i].Value, b.Ops[i].Value) {
			return false
		}
	}
	return true
}

func TestCommandRoundTrip(t *testing.T) {
	for _, c := range sampleCommands() {
		data := mustEncode(t, c)
		got, err := fsm.DecodeCommand(data)
		if err != nil {
			t.Fatalf("DecodeCommand(EncodeCommand(%+v)): %v", c, err)
		}
		if !sameCommand(got, c) {
			t.Fatalf("round trip of %+v gave %+v", c, got)
		}
		if again := mustEncode(t, got); !bytes.Equal(again, data) {
			t.Fatalf("re-encoding %+v gave %x, want %x", c, again, data)
		}
		// The decoded command owns its memory.
		if len(got.Value) > 0 {
			data[len(data)-1] ^= 0xff
			if !bytes.Equal(got.Value, c.Value) {
				t.Fatalf("decoded value aliases the input")
			}
		}
	}
}

func TestEncodeIsCompact(t *testing.T) {
	// version, kind, id, key length, key, value length, value
	data := mustEncode(t, fsm.Command{ID: 1, Kind: fsm.KindPut, Key: "key", Value: []byte("value")})
	if len(data) != 1+1+1+1+3+1+5 {
		t.Fatalf("a small put encodes to %d bytes: %x", len(data), data)
	}
}

func TestEncodeRejectsUnrepresentable(t *testing.T) {
	for _, c := range []fsm.Command{
		{Kind: 0},
		{Kind: 99},
		{Kind: fsm.KindBatch, Ops: []store.Op{{Type: 0, Key: "k"}}},
		{Kind: fsm.KindBatch, Ops: []store.Op{store.Put("k", nil), {Type: 300, Key: "k"}}},
	} {
		if _, err := fsm.EncodeCommand(c); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("EncodeCommand(%+v): error %v, want store.ErrInvalid", c, err)
		}
	}
}

func TestDecodeCommandRejectsMalformed(t *testing.T) {
	for _, c := range sampleCommands() {
		data := mustEncode(t, c)
		for n := range len(data) {
			if _, err := fsm.DecodeCommand(data[:n]); err == nil {
				t.Fatalf("DecodeCommand accepted %x, a truncation of %x", data[:n], data)
			}
		}
		if _, err := fsm.DecodeCommand(append(slices.Clone(data), 0)); err == nil {
			t.Fatalf("DecodeCommand accepted %x with a trailing byte", data)
		}
	}
	for name, data := range map[string][]byte{
		"empty":              nil,
		"unknown version":    {2, 1, 0, 1, 'k', 0},
		"version zero":       {0, 1, 0, 1, 'k', 0},
		"unknown kind":       {1, 9, 0},
		"kind zero":          {1, 0, 0},
		"non-minimal varint": {1, 1, 0x80, 0x00, 1, 'k', 0},
		"varint overflow":    {1, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
		"key past the end":   {1, 1, 0, 5, 'k'},
		"huge key length":    {1, 1, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f},
		"huge cond count":    {1, 4, 0, 0xff, 0xff, 0xff, 0xff, 0x0f, 0},
		"huge op count":      {1, 4, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f},
		"unknown op type":    {1, 4, 0, 0, 1, 7, 1, 'k'},
		"huge kv count":      {1, 6, 0, 5, 0xff, 0xff, 0xff, 0xff, 0x0f, 0},
		"huge prefix count":  {1, 7, 0, 0xff, 0xff, 0xff, 0xff, 0x0f},
		"frozen flag 2":      {1, 8, 0, 2, 0},
	} {
		if c, err := fsm.DecodeCommand(data); err == nil {
			t.Errorf("%s: DecodeCommand(%x) = %+v, want an error", name, data, c)
		}
	}
}

func TestValidate(t *testing.T) {
	long := strings.Repeat("k", store.MaxKeySize+1)
	big := make([]byte, store.MaxValueSize+1)
	ok := []fsm.Command{
		{Kind: fsm.KindPut, Key: strings.Repeat("k", store.MaxKeySize), Value: make([]byte, store.MaxValueSize)},
		{Kind: fsm.KindDelete, Key: "k"},
		{Kind: fsm.KindCompareAndSet, Key: "k"},
		{Kind: fsm.KindBatch},
		{Kind: fsm.KindBatch, Ops: make([]store.Op, store.MaxBatchOps)[:0]},
		{Kind: fsm.KindCompact},
		{Kind: fsm.KindLoad},
		{Kind: fsm.KindLoad, Rev: 5, KVs: []store.KV{{Key: "k", Value: make([]byte, store.MaxValueSize), CreateRevision: 1, ModRevision: 5}}},
		{Kind: fsm.KindClear, Prefixes: make([]string, fsm.MaxPrefixes)},
		{Kind: fsm.KindFreeze, Frozen: true, Prefixes: []string{strings.Repeat("p", store.MaxKeySize)}},
	}
	for _, c := range ok {
		if err := c.Validate(); err != nil {
			t.Errorf("Validate(%v %q): %v", c.Kind, c.Key, err)
		}
	}
	tooMany := make([]store.Op, store.MaxBatchOps+1)
	for i := range tooMany {
		tooMany[i] = store.Delete("k")
	}
	bad := []fsm.Command{
		{Kind: 0},
		{Kind: fsm.KindPut},
		{Kind: fsm.KindPut, Key: long},
		{Kind: fsm.KindPut, Key: "k", Value: big},
		{Kind: fsm.KindDelete},
		{Kind: fsm.KindCompareAndSet, Key: "k", ExpectModRev: -1},
		{Kind: fsm.KindBatch, Ops: tooMany},
		{Kind: fsm.KindBatch, Conds: make([]store.Cond, store.MaxBatchOps+1)},
		{Kind: fsm.KindBatch, Conds: []store.Cond{{Key: "k", ModRevision: -2}}},
		{Kind: fsm.KindBatch, Ops: []store.Op{{Type: 3, Key: "k"}}},
		{Kind: fsm.KindCompact, Rev: -1},
		{Kind: fsm.KindLoad, Rev: -1},
		{Kind: fsm.KindLoad, Rev: 5, KVs: []store.KV{{Key: "k", CreateRevision: 1, ModRevision: 6}}},
		{Kind: fsm.KindLoad, Rev: 5, KVs: []store.KV{{Key: "k", CreateRevision: 0, ModRevision: 5}}},
		{Kind: fsm.KindLoad, Rev: 5, KVs: []store.KV{{Key: "k", CreateRevision: 1, ModRevision: 5}, {Key: "l", Value: make([]byte, store.MaxLoadBytes), CreateRevision: 1, ModRevision: 5}}},
		{Kind: fsm.KindLoad, Keys: []string{""}},
		{Kind: fsm.KindLoad, Keys: make([]string, store.MaxBatchOps+1)},
		{Kind: fsm.KindClear, Prefixes: make([]string, fsm.MaxPrefixes+1)},
		{Kind: fsm.KindFreeze, Prefixes: []string{long}},
	}
	for _, c := range bad {
		if err := c.Validate(); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("Validate(%v %q): %v, want store.ErrInvalid", c.Kind, c.Key, err)
		}
	}
}

// FuzzDecodeCommand checks that decoding never panics and that whatever it
// accepts encodes back to the same bytes (the encoding is one-to-one).
func FuzzDecodeCommand(f *testing.F) {
	for _, c := range sampleCommands() {
		data, err := fsm.EncodeCommand(c)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
		f.Add(data[:len(data)/2])
	}
	f.Add([]byte{})
	f.Add([]byte{1, 4, 0, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Add([]byte{1, 1, 0x80, 0x00, 1, 'k', 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := fsm.DecodeCommand(data)
		if err != nil {
			return
		}
		again, err := fsm.EncodeCommand(c)
		if err != nil {
			t.Fatalf("EncodeCommand of a decoded command: %v", err)
		}
		if !bytes.Equal(again, data) {
			t.Fatalf("decode+encode of %x gave %x", data, again)
		}
		_ = c.Validate() // must not panic either
	})
}

// FuzzApply feeds arbitrary entry data to Apply: whatever it holds, Apply
// must not fail or panic, the index must advance, and only well-formed
// commands may succeed.
func FuzzApply(f *testing.F) {
	for _, c := range sampleCommands() {
		data, err := fsm.EncodeCommand(c)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte{})
	f.Add([]byte{1, 4, 0, 1, 1, 'a', 0, 1, 1, 1, 'a', 0})
	sm, err := fsm.Open(filepath.Join(f.TempDir(), "state.db"), fsm.Options{HistoryRetain: 5})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { sm.Close() })
	f.Fuzz(func(t *testing.T, data []byte) {
		index := sm.AppliedIndex() + 1
		res, err := sm.Apply([]fsm.Entry{{Index: index, Term: 1, Data: data}})
		if err != nil {
			t.Fatalf("Apply: %v", err)
		}
		if sm.AppliedIndex() != index {
			t.Fatalf("AppliedIndex = %d, want %d", sm.AppliedIndex(), index)
		}
		if len(data) == 0 {
			if len(res) != 0 {
				t.Fatalf("an empty entry gave results %+v", res)
			}
			return
		}
		for _, r := range res {
			if r.Index > index {
				t.Fatalf("result %+v of entry %d is from a later entry", r, index)
			}
		}
		if data[0] == 0x80 {
			return // a group: a result per command it holds
		}
		if len(res) != 1 {
			t.Fatalf("results %+v for entry %d", res, index)
		}
		if res[0].Index != index {
			return // an id applied before: answered with its first result
		}
		c, derr := fsm.DecodeCommand(data)
		if derr != nil && res[0].Err == nil {
			t.Fatalf("an undecodable entry was applied without error")
		}
		if derr == nil && c.Validate() != nil && res[0].Err == nil {
			t.Fatalf("an invalid command was applied without error")
		}
		if rev, err := sm.Revision(); err != nil || rev != res[0].Rev {
			t.Fatalf("Revision = %d (%v), result says %d", rev, err, res[0].Rev)
		}
	})
}
