package worker

import (
	"context"
	"fmt"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcd-project/kcd/daemon/connectstore"
)

func TestIntegrationSourceTaskRegained(t *testing.T) {
	t.Parallel()
	scenarioRegained(kafkaEnv(t))
}

// claims is an Assignment a test sets, with claims as the coordinator's
// Member makes them: the revision of an owner key in the store, which
// changes whenever the task is given to a worker.
type claims struct {
	conn    bool
	key     string
	rev     atomic.Int64 // of the owner key when given to this worker; 0: not owned
	changed chan struct{}
}

func newClaims(conn bool, key string) *claims {
	return &claims{conn: conn, key: key, changed: make(chan struct{}, 1)}
}

func (c *claims) Connector(string) bool    { return c.conn }
func (c *claims) Task(string, int) bool    { return c.rev.Load() != 0 }
func (c *claims) Changed() <-chan struct{} { return c.changed }
func (c *claims) Fence(_ string, task int) connectstore.Fence {
	if task < 0 {
		return nil
	}
	rev := c.rev.Load()
	if rev == 0 {
		rev = math.MaxInt64 // never holds, as Member's for a unit not ours
	}
	return connectstore.Fence{{Key: c.key, ModRevision: rev}}
}

// set gives the task to this worker under claim rev (0: takes it away).
func (c *claims) set(rev int64) {
	c.rev.Store(rev)
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

// claimTask writes the owner key of a task, as the coordinator does when it
// gives the task to a worker, and returns the claim: its new revision.
func (e *env) claimTask(owner string) int64 {
	e.t.Helper()
	rev, err := e.cs.Raw().Put(context.Background(), owner, []byte(owner))
	if err != nil {
		e.t.Fatal(err)
	}
	return rev
}

// counted counts the records a worker's producers wrote (a kgo hook).
type counted struct{ n atomic.Int64 }

func (c *counted) OnProduceRecordUnbuffered(_ *kgo.Record, err error) {
	if err == nil {
		c.n.Add(1)
	}
}

// A source task runs on w1; w1 is cut off without knowing it (as a frozen
// process is) and the task is given to w2, whose producer fences w1's run.
// Then the task is given back to w1 under a new claim: w1 starts it again
// at once, although its last run was fenced and its restart backoff is a
// minute. The backoff holds while the claim stays the one the fenced run
// had. w2 is never fenced while it owns the task.
func scenarioRegained(e *env) {
	t := e.t
	topic, src := e.name("regain"), e.name("regain")
	e.createTopic(topic, 1)
	e.create(src, map[string]string{"connector.class": "Datagen", "topic": topic, "rate.per.task": "2000", "batch.size": "20",
		"value.converter": StringConverter})
	owner := "kcd-test/owner/" + src
	give := func(c *claims) { c.set(e.claimTask(owner)) }
	a1, a2 := newClaims(true, owner), newClaims(false, owner)
	c1, c2 := &counted{}, &counted{}
	long := Backoff{Initial: time.Minute, Max: time.Minute}
	give(a1)
	w1 := e.start(func(c *Config) {
		c.WorkerID, c.Assignment, c.RestartBackoff = "w1:8083", a1, long
		c.KafkaOpts = []kgo.Opt{kgo.WithHooks(c1)}
	})
	waitFor(t, 20*time.Second, "w1 producing", func() (bool, string) {
		return c1.n.Load() >= 200, fmt.Sprint(c1.n.Load(), " records")
	})

	// w1 believes it still owns the task under its first claim.
	give(a2)
	w2 := e.start(func(c *Config) {
		c.WorkerID, c.Assignment, c.RestartBackoff = "w2:8083", a2, long
		c.KafkaOpts = []kgo.Opt{kgo.WithHooks(c2)}
	})
	waitFor(t, 20*time.Second, "w2 producing", func() (bool, string) {
		return c2.n.Load() >= 200, fmt.Sprint(c2.n.Load(), " records")
	})
	waitFor(t, 20*time.Second, "w1's run fenced", func() (bool, string) { return !w1.runs(src, 0), "" })
	// Under the claim its fenced run had, w1 waits out its backoff.
	for n := c2.n.Load(); c2.n.Load() < n+400; time.Sleep(20 * time.Millisecond) {
		if w1.runs(src, 0) {
			t.Fatal("w1 started the task again under the claim its fenced run had, before its backoff")
		}
		if !w2.runs(src, 0) {
			t.Fatal("w2 stopped running the task while it owns it")
		}
	}

	// The task moves back to w1: w2 stops it first, as on a revoke.
	a2.set(0)
	waitFor(t, 20*time.Second, "w2 stopping the task", func() (bool, string) { return !w2.runs(src, 0), "" })
	give(a1)
	from := c1.n.Load()
	waitFor(t, 20*time.Second, "w1 producing again", func() (bool, string) {
		return c1.n.Load() >= from+200, fmt.Sprintf("%d records since; w1 runs %v", c1.n.Load()-from, w1.Running())
	})
	st := e.waitState(src, 0, connectstore.StateRunning)
	if st.WorkerID != "w1:8083" {
		t.Errorf("task status %+v, want RUNNING on w1:8083", st)
	}
	w2.stop()
	w1.stop()
}

func TestIntegrationSourceRunResumedUnderNewClaim(t *testing.T) {
	t.Parallel()
	scenarioResumedUnderNewClaim(kafkaEnv(t))
}

// As after a freeze: w1's run finds the task not its own any more and
// waits, before its supervisor hears of it; w2 takes the task over, then
// the task comes back to w1 under a new claim. The waiting run must not go
// on with its producer (fenced meanwhile, which would cost a fenced
// restart's backoff): it gives way at once to a new run, which produces.
func scenarioResumedUnderNewClaim(e *env) {
	t := e.t
	topic, src := e.name("resumed"), e.name("resumed")
	e.createTopic(topic, 1)
	e.create(src, map[string]string{"connector.class": "Datagen", "topic": topic, "rate.per.task": "2000", "batch.size": "20",
		"value.converter": StringConverter})
	owner := "kcd-test/owner/" + src
	give := func(c *claims) { c.set(e.claimTask(owner)) }
	a1, a2 := newClaims(true, owner), newClaims(false, owner)
	c1, c2 := &counted{}, &counted{}
	long := Backoff{Initial: time.Minute, Max: time.Minute}
	give(a1)
	w1 := e.start(func(c *Config) {
		c.WorkerID, c.Assignment, c.RestartBackoff = "w1:8083", a1, long
		c.KafkaOpts = []kgo.Opt{kgo.WithHooks(c1)}
	})
	waitFor(t, 20*time.Second, "w1 producing", func() (bool, string) {
		return c1.n.Load() >= 200, fmt.Sprint(c1.n.Load(), " records")
	})

	// The run sees the task is not its own (by its clock) and waits; its
	// supervisor is not told (no Changed), so the run stays.
	a1.rev.Store(0)
	waitFor(t, 10*time.Second, "w1's run waiting", func() (bool, string) {
		n := c1.n.Load()
		time.Sleep(300 * time.Millisecond)
		return c1.n.Load() == n, ""
	})
	give(a2)
	w2 := e.start(func(c *Config) {
		c.WorkerID, c.Assignment, c.RestartBackoff = "w2:8083", a2, long
		c.KafkaOpts = []kgo.Opt{kgo.WithHooks(c2)}
	})
	waitFor(t, 20*time.Second, "w2 producing", func() (bool, string) {
		return c2.n.Load() >= 400, fmt.Sprint(c2.n.Load(), " records")
	})
	a2.set(0)
	waitFor(t, 20*time.Second, "w2 stopping the task", func() (bool, string) { return !w2.runs(src, 0), "" })

	from := c1.n.Load()
	give(a1)
	waitFor(t, 20*time.Second, "w1 producing again", func() (bool, string) {
		return c1.n.Load() >= from+200, fmt.Sprintf("%d records since; w1 runs %v", c1.n.Load()-from, w1.Running())
	})
	if st := e.waitState(src, 0, connectstore.StateRunning); st.WorkerID != "w1:8083" {
		t.Errorf("task status %+v, want RUNNING on w1:8083", st)
	}
	w2.stop()
	w1.stop()
}

func TestIntegrationSourceRevokeCommits(t *testing.T) {
	t.Parallel()
	scenarioRevokeCommits(kafkaEnv(t))
}

// releasingClaims is claims whose task can be revoked: it stays this
// worker's, under the same claim, until the run has stopped, as the
// coordinator's Member has it between a revoke and the owner's change.
type releasingClaims struct {
	*claims
	revoked atomic.Bool
}

func (c *releasingClaims) Task(name string, id int) bool {
	return !c.revoked.Load() && c.claims.Task(name, id)
}

func (c *releasingClaims) Releasing(name string, id int) bool {
	return c.revoked.Load() && c.claims.Task(name, id)
}

// A task revoked from its worker (a move to another worker, not a lost
// session) still belongs to it until its run has stopped: the run commits
// its open transaction, so that what it produced is visible and the next
// owner resumes after it, instead of abandoning the transaction (its
// records aborted, produced again by the next owner).
func scenarioRevokeCommits(e *env) {
	t := e.t
	topic, src := e.name("revoke"), e.name("revoke")
	e.createTopic(topic, 1)
	// One long transaction: open until the run stops.
	e.create(src, map[string]string{"connector.class": "Datagen", "topic": topic, "rate.per.task": "2000", "batch.size": "20",
		"transaction.boundary": "interval", "transaction.boundary.interval.ms": "300000", "value.converter": StringConverter})
	owner := "kcd-test/owner/" + src
	rev := e.claimTask(owner)
	a := &releasingClaims{claims: newClaims(true, owner)}
	a.set(rev)
	c := &counted{}
	w := e.start(func(cfg *Config) {
		cfg.WorkerID, cfg.Assignment = "w1:8083", a
		cfg.KafkaOpts = []kgo.Opt{kgo.WithHooks(c)}
	})
	waitFor(t, 20*time.Second, "w1 producing", func() (bool, string) {
		return c.n.Load() >= 200, fmt.Sprint(c.n.Load(), " records")
	})
	a.revoked.Store(true)
	a.set(rev)
	waitFor(t, 20*time.Second, "w1 stopping the revoked task", func() (bool, string) { return !w.runs(src, 0), "" })
	produced := c.n.Load()
	got := e.consume(topic, 20*time.Second, func(rs []*kgo.Record) bool { return int64(len(rs)) >= produced })
	if int64(len(got)) < produced {
		t.Fatalf("%d of the %d records the revoked run produced are committed: its transaction was not", len(got), produced)
	}
	w.stop()
}
