package rafttest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/kcd-project/kcd/raft"
	"github.com/kcd-project/kcd/store"
)

// History records client operations on store.Store implementations, for a
// linearizability check with porcupine against KVModel.
//
// Every operation gets its call and return time from one monotonic clock.
// A write that fails in a way that leaves its outcome unknown (a timeout, a
// node stopped under it) is kept with an unknown output and an open-ended
// return time (math.MaxInt64): porcupine may then linearize it anywhere
// after its call, which covers "it happened" and "it never did" (linearized
// last). A write that certainly did not happen (see Definite), and a read
// that failed, are left out: they had no effect.
//
// Values written through a History should be unique, so that a read
// identifies the write it saw.
type History struct {
	start time.Time

	// Definite tells whether a write's error means it certainly did not
	// happen. The default knows raftstore's errors: a proposal raft dropped
	// (raft.ErrNoLeader), a closed store, an invalid request.
	Definite func(error) bool

	mu      sync.Mutex
	ops     []porcupine.Operation
	notes   []porcupine.Annotation
	clients int
	stats   HistoryStats
}

// HistoryStats counts what a History recorded.
type HistoryStats struct {
	Gets, Puts, CASes int // recorded operations, unknown outcomes included
	CASOK             int // compare-and-sets that returned ok
	Unknown           int // writes recorded with an unknown outcome
	FailedWrites      int // writes that certainly failed (not recorded)
	FailedReads       int // reads that failed (not recorded)
}

// Ops is the number of recorded operations.
func (s HistoryStats) Ops() int { return s.Gets + s.Puts + s.CASes }

func (s HistoryStats) String() string {
	return fmt.Sprintf("%d operations (%d get, %d put, %d cas of which %d ok), %d writes of unknown outcome; left out: %d failed writes, %d failed reads",
		s.Ops(), s.Gets, s.Puts, s.CASes, s.CASOK, s.Unknown, s.FailedWrites, s.FailedReads)
}

// NewHistory starts an empty history; its clock starts now.
func NewHistory() *History {
	return &History{start: time.Now(), Definite: definiteRaftStoreError}
}

func definiteRaftStoreError(err error) bool {
	return errors.Is(err, raft.ErrNoLeader) || errors.Is(err, store.ErrClosed) || errors.Is(err, store.ErrInvalid)
}

func (h *History) now() int64 { return int64(time.Since(h.start)) }

// Stats counts what was recorded so far.
func (h *History) Stats() HistoryStats {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.stats
}

// Operations returns a copy of the recorded operations.
func (h *History) Operations() []porcupine.Operation {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]porcupine.Operation(nil), h.ops...)
}

func (h *History) newClientID() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.clients++
	return h.clients - 1
}

// Fault marks the start of a fault, for the visualization; calling the
// returned function marks its end and says what it was.
func (h *History) Fault() (end func(desc string)) {
	start := h.now()
	var once sync.Once
	return func(desc string) {
		once.Do(func() {
			end := h.now()
			h.mu.Lock()
			defer h.mu.Unlock()
			h.notes = append(h.notes, porcupine.Annotation{
				Tag: "nemesis", Start: start, End: end, Description: desc,
				BackgroundColor: "#f6d2d2",
			})
		})
	}
}

// HistoryClient records the operations of one client: one at a time, as
// porcupine requires of a client id. After a write of unknown outcome (which
// never returns, as far as the history is concerned) it continues under a
// new client id.
type HistoryClient struct {
	h  *History
	id int
}

// NewClient returns a recorder for one sequential client.
func (h *History) NewClient() *HistoryClient { return &HistoryClient{h: h, id: h.newClientID()} }

func (c *HistoryClient) record(in KVInput, out KVOutput, call, ret int64, via string) {
	h := c.h
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ops = append(h.ops, porcupine.Operation{ClientId: c.id, Input: in, Call: call, Output: out, Return: ret, Metadata: via})
	switch in.Op {
	case OpGet:
		h.stats.Gets++
	case OpPut:
		h.stats.Puts++
	case OpCAS:
		h.stats.CASes++
		if out.OK && !out.Unknown {
			h.stats.CASOK++
		}
	}
	if out.Unknown {
		h.stats.Unknown++
	}
}

// writeDone records a write's outcome: known, certainly failed, or unknown.
func (c *HistoryClient) writeDone(in KVInput, out KVOutput, call int64, err error, via string) {
	if err == nil {
		c.record(in, out, call, c.h.now(), via)
		return
	}
	if c.h.Definite != nil && c.h.Definite(err) {
		c.h.mu.Lock()
		c.h.stats.FailedWrites++
		c.h.mu.Unlock()
		return
	}
	c.record(in, KVOutput{Unknown: true}, call, math.MaxInt64, fmt.Sprintf("%s: %v", via, err))
	c.id = c.h.newClientID()
}

// Get reads key from s and records the read (a failed read is not
// recorded). via describes s for the visualization.
func (c *HistoryClient) Get(ctx context.Context, s store.Store, via, key string) (store.KV, bool, error) {
	call := c.h.now()
	kv, found, err := s.Get(ctx, key)
	if err != nil {
		c.h.mu.Lock()
		c.h.stats.FailedReads++
		c.h.mu.Unlock()
		return kv, found, err
	}
	out := KVOutput{Found: found}
	if found {
		out.Value, out.Rev = string(kv.Value), kv.ModRevision
	}
	c.record(KVInput{Op: OpGet, Key: key}, out, call, c.h.now(), via)
	return kv, found, nil
}

// Put writes key=value to s and records the write.
func (c *HistoryClient) Put(ctx context.Context, s store.Store, via, key, value string) (int64, error) {
	call := c.h.now()
	rev, err := s.Put(ctx, key, []byte(value))
	c.writeDone(KVInput{Op: OpPut, Key: key, Value: value}, KVOutput{Rev: rev}, call, err, via)
	return rev, err
}

// CompareAndSet sets key to value in s if its ModRevision is expect (0: if
// it does not exist) and records the attempt.
func (c *HistoryClient) CompareAndSet(ctx context.Context, s store.Store, via, key string, expect int64, value string) (int64, bool, error) {
	call := c.h.now()
	rev, ok, err := s.CompareAndSet(ctx, key, expect, []byte(value))
	c.writeDone(KVInput{Op: OpCAS, Key: key, Value: value, Expect: expect}, KVOutput{Rev: rev, OK: ok}, call, err, via)
	return rev, ok, err
}

// Check runs porcupine on the history (bounded by timeout) and fails t when
// it is not linearizable, writing the visualization to t.ArtifactDir() (go
// test -artifacts keeps it). A check that timed out is logged, not failed.
func (h *History) Check(t testing.TB, timeout time.Duration) porcupine.CheckResult {
	t.Helper()
	ops := h.Operations()
	model := KVModel()
	began := time.Now()
	res := porcupine.CheckOperationsTimeout(model, ops, timeout)
	t.Logf("porcupine: %s for %d operations in %v", res, len(ops), time.Since(began).Round(time.Millisecond))
	switch res {
	case porcupine.Ok:
	case porcupine.Unknown:
		t.Logf("porcupine could not decide within %v: not counted as a failure", timeout)
	default:
		t.Errorf("the history is not linearizable (%s)", h.Stats())
		_, info := porcupine.CheckOperationsVerbose(model, ops, timeout)
		h.mu.Lock()
		info.AddAnnotations(h.notes)
		h.mu.Unlock()
		path := filepath.Join(t.ArtifactDir(), "linearizability.html")
		if err := porcupine.VisualizePath(model, info, path); err != nil {
			t.Errorf("write the visualization: %v", err)
		} else {
			t.Errorf("visualization: %s (kept with go test -artifacts)", path)
		}
		for _, part := range info.PartialLinearizationsOperations() {
			h.explain(t, model, part)
		}
	}
	return res
}

// explain logs, for one key, where the longest linearization found stops:
// the state it reached and the operations it could not place next.
func (h *History) explain(t testing.TB, model porcupine.Model, partials [][]porcupine.Operation) {
	t.Helper()
	var longest []porcupine.Operation
	for _, p := range partials {
		if len(p) > len(longest) {
			longest = p
		}
	}
	if len(longest) == 0 {
		return
	}
	key := longest[0].Input.(KVInput).Key
	var all []porcupine.Operation
	for _, op := range h.Operations() {
		if op.Input.(KVInput).Key == key {
			all = append(all, op)
		}
	}
	if len(longest) == len(all) {
		return // this key is fine
	}
	placed := map[int64]bool{} // by call time (unique per key in practice)
	state := model.Init()
	for _, op := range longest {
		placed[op.Call] = true
		_, state = model.Step(state, op.Input, op.Output)
	}
	describe := func(op porcupine.Operation) string {
		ret := "never"
		if op.Return != math.MaxInt64 {
			ret = time.Duration(op.Return).String()
		}
		return fmt.Sprintf("[%v – %s] client %d %s: %s", time.Duration(op.Call), ret, op.ClientId, op.Metadata,
			model.DescribeOperation(op.Input, op.Output))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "key %s: %d of %d operations linearized; the last ones:\n", key, len(longest), len(all))
	for _, op := range longest[max(0, len(longest)-8):] {
		fmt.Fprintf(&b, "  %s\n", describe(op))
	}
	fmt.Fprintf(&b, "state then: %s; operations not placed that had started by the first unplaced return:\n", model.DescribeState(state))
	firstReturn := int64(math.MaxInt64)
	for _, op := range all {
		if !placed[op.Call] {
			firstReturn = min(firstReturn, op.Return)
		}
	}
	for _, op := range all {
		if !placed[op.Call] && op.Call <= firstReturn {
			fmt.Fprintf(&b, "  %s\n", describe(op))
		}
	}
	t.Log(b.String())
}

// KVOp is the kind of a recorded operation.
type KVOp int

// The operations KVModel knows.
const (
	OpGet KVOp = iota + 1
	OpPut
	OpCAS
)

// KVInput is the input of a recorded operation.
type KVInput struct {
	Op     KVOp
	Key    string
	Value  string // put, cas: the new value
	Expect int64  // cas: the expected ModRevision (0: absent)
}

// KVOutput is the output of a recorded operation.
type KVOutput struct {
	Unknown bool   // a write whose outcome is unknown
	Found   bool   // get
	Value   string // get, when found
	// Rev is, for a get, the key's ModRevision; for a put and a successful
	// cas, the revision the write made.
	Rev int64
	OK  bool // cas
}

// kvState is one key's state in KVModel. ModRev 0 on an existing key means
// "not known": the key was written by a write of unknown outcome, whose
// revision nobody was told; a later read pins it.
type kvState struct {
	Exists bool
	Value  string
	ModRev int64
}

// KVModel is the sequential specification of store.Store's Get, Put and
// CompareAndSet, partitioned by key. Besides values it checks revisions: a
// read returns the ModRevision of the write it sees, a write's revision
// exceeds the key's previous one, and a compare-and-set succeeds exactly
// when the key's ModRevision is the expected one (or it is absent, for 0).
func KVModel() porcupine.Model {
	return porcupine.Model{
		Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
			byKey := map[string][]porcupine.Operation{}
			var keys []string
			for _, op := range history {
				k := op.Input.(KVInput).Key
				if _, ok := byKey[k]; !ok {
					keys = append(keys, k)
				}
				byKey[k] = append(byKey[k], op)
			}
			out := make([][]porcupine.Operation, 0, len(keys))
			for _, k := range keys {
				out = append(out, byKey[k])
			}
			return out
		},
		Init: func() any { return kvState{} },
		Step: func(state, input, output any) (bool, any) {
			return kvStep(state.(kvState), input.(KVInput), output.(KVOutput))
		},
		DescribeOperation: func(input, output any) string {
			in, out := input.(KVInput), output.(KVOutput)
			var res string
			switch {
			case out.Unknown:
				res = "unknown"
			case in.Op == OpGet && !out.Found:
				res = "absent"
			case in.Op == OpGet:
				res = fmt.Sprintf("%q@%d", out.Value, out.Rev)
			case in.Op == OpCAS && !out.OK:
				res = "failed"
			default:
				res = fmt.Sprintf("ok@%d", out.Rev)
			}
			switch in.Op {
			case OpGet:
				return fmt.Sprintf("get(%s) -> %s", in.Key, res)
			case OpPut:
				return fmt.Sprintf("put(%s, %q) -> %s", in.Key, in.Value, res)
			default:
				return fmt.Sprintf("cas(%s, @%d, %q) -> %s", in.Key, in.Expect, in.Value, res)
			}
		},
		DescribeState: func(state any) string {
			s := state.(kvState)
			switch {
			case !s.Exists:
				return "absent"
			case s.ModRev == 0:
				return fmt.Sprintf("%q@?", s.Value)
			default:
				return fmt.Sprintf("%q@%d", s.Value, s.ModRev)
			}
		},
		DescribeOperationMetadata: func(info any) string {
			if info == nil {
				return ""
			}
			return fmt.Sprint(info)
		},
	}
}

func kvStep(s kvState, in KVInput, out KVOutput) (bool, kvState) {
	revKnown := s.Exists && s.ModRev != 0
	// newer: a write's revision must exceed the key's current one.
	newer := func(rev int64) bool { return !revKnown || rev > s.ModRev }
	switch in.Op {
	case OpGet:
		if !out.Found {
			return !s.Exists, s
		}
		if !s.Exists || s.Value != out.Value || (revKnown && s.ModRev != out.Rev) {
			return false, s
		}
		s.ModRev = out.Rev
		return true, s
	case OpPut:
		if out.Unknown {
			return true, kvState{Exists: true, Value: in.Value}
		}
		return newer(out.Rev), kvState{Exists: true, Value: in.Value, ModRev: out.Rev}
	case OpCAS:
		var must, may bool // the condition certainly / possibly holds
		if in.Expect == 0 {
			must, may = !s.Exists, !s.Exists
		} else {
			must = revKnown && s.ModRev == in.Expect
			may = must || (s.Exists && !revKnown)
		}
		switch {
		case out.Unknown:
			// Failing changes nothing, like being linearized after
			// everything else, which porcupine tries as well.
			if may {
				return true, kvState{Exists: true, Value: in.Value}
			}
			return true, s
		case out.OK:
			return may && newer(out.Rev) && out.Rev > in.Expect, kvState{Exists: true, Value: in.Value, ModRev: out.Rev}
		default:
			return !must, s
		}
	}
	return false, s
}
