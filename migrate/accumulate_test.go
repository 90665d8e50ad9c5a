package migrate

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// feed is a test's sequence of records for an accumulator.
type feed struct {
	acc    *accumulator
	offset map[string]int64 // next offset per topic/partition
	clock  int64
}

func newFeed(include func(string) bool) *feed {
	return &feed{acc: newAccumulator(DefaultTopics(), include), offset: map[string]int64{}, clock: 1000}
}

func (f *feed) next(topic string, p int32) at {
	k := fmt.Sprint(topic, p)
	o := f.offset[k]
	f.offset[k]++
	f.clock++
	return at{Partition: p, Offset: o, Timestamp: f.clock}
}

func bytesOrNil(v string) []byte {
	if v == "null" {
		return nil
	}
	return []byte(v)
}

func (f *feed) config(key, value string) *feed {
	f.acc.configRecord(f.next("c", 0), []byte(key), bytesOrNil(value))
	return f
}

func (f *feed) offsetIn(p int32, key, value string) *feed {
	f.acc.offsetRecord(f.next("o", p), []byte(key), bytesOrNil(value))
	return f
}

func (f *feed) status(key, value string) *feed {
	f.acc.statusRecord(f.next("s", 0), []byte(key), bytesOrNil(value))
	return f
}

func (f *feed) connector(t *testing.T, name string) *Connector {
	t.Helper()
	for _, c := range f.acc.cluster().Connectors {
		if c.Name == name {
			return c
		}
	}
	return nil
}

func TestAccumulateConfigs(t *testing.T) {
	f := newFeed(nil).
		config("connector-a", `{"properties":{"name":"a","connector.class":"X","tasks.max":"2","secret":null}}`).
		config("task-a-0", `{"properties":{"task.class":"T","n":"0"}}`).
		config("task-a-1", `{"properties":{"task.class":"T","n":"1"}}`).
		config("commit-a", `{"tasks":2}`).
		config("connector-b", `{"properties":{"name":"b"}}`)
	c := f.acc.cluster()
	if len(c.Connectors) != 2 || c.Connectors[0].Name != "a" || c.Connectors[1].Name != "b" {
		t.Fatalf("connectors %s", jsonOf(t, c.Connectors))
	}
	a := c.Connectors[0]
	want := &Connector{Name: "a", Config: map[string]string{"name": "a", "connector.class": "X", "tasks.max": "2"},
		NullKeys: []string{"secret"}, Target: "STARTED", TaskCount: 2,
		Tasks: []map[string]string{{"task.class": "T", "n": "0"}, {"task.class": "T", "n": "1"}}}
	if !reflect.DeepEqual(a, want) {
		t.Fatalf("a:\n got %s\nwant %s", jsonOf(t, a), jsonOf(t, want))
	}
	if b := c.Connectors[1]; b.Target != "STARTED" || len(b.Tasks) != 0 || b.Tasks == nil || b.TaskCount != 0 {
		t.Fatalf("b, created but no commit yet: %s", jsonOf(t, b))
	}
}

func TestAccumulateCommitRules(t *testing.T) {
	// The task count changes 2 → 1: only the latest commit's tasks count.
	f := newFeed(nil).config("connector-a", `{"properties":{}}`).
		config("task-a-0", `{"properties":{"v":"old0"}}`).
		config("task-a-1", `{"properties":{"v":"old1"}}`).
		config("commit-a", `{"tasks":2}`).
		config("task-a-0", `{"properties":{"v":"new0"}}`).
		config("commit-a", `{"tasks":1}`)
	if a := f.connector(t, "a"); a.TaskCount != 1 || len(a.Tasks) != 1 || a.Tasks[0]["v"] != "new0" || a.Inconsistent {
		t.Fatalf("after 2 → 1: %s", jsonOf(t, a))
	}
	// Task records not followed by a commit are never applied.
	f.config("task-a-0", `{"properties":{"v":"uncommitted"}}`)
	if a := f.connector(t, "a"); a.Tasks[0]["v"] != "new0" {
		t.Fatalf("uncommitted task applied: %s", jsonOf(t, a))
	}
	// A commit naming a task that was not written since the last commit
	// (compaction took it, or the writer died): inconsistent, no tasks.
	f.config("commit-a", `{"tasks":2}`)
	if a := f.connector(t, "a"); !a.Inconsistent || len(a.Tasks) != 0 || a.TaskCount != 2 {
		t.Fatalf("commit of 2 with only task 0 buffered: %s", jsonOf(t, a))
	}
	// The buffer was cleared by that commit: task 1 alone does not complete it.
	f.config("task-a-1", `{"properties":{"v":"x"}}`).config("commit-a", `{"tasks":2}`)
	if a := f.connector(t, "a"); !a.Inconsistent {
		t.Fatalf("buffer kept across a commit: %s", jsonOf(t, a))
	}
	// Written again in full: consistent again. Extra higher ids are tolerated.
	f.config("task-a-0", `{"properties":{"v":"r0"}}`).config("task-a-1", `{"properties":{"v":"r1"}}`).
		config("task-a-2", `{"properties":{"v":"extra"}}`).config("commit-a", `{"tasks":2}`)
	if a := f.connector(t, "a"); a.Inconsistent || len(a.Tasks) != 2 || a.Tasks[1]["v"] != "r1" {
		t.Fatalf("rewritten: %s", jsonOf(t, a))
	}
	// Stop writes an empty task set.
	f.config("commit-a", `{"tasks":0}`)
	if a := f.connector(t, "a"); len(a.Tasks) != 0 || a.TaskCount != 0 || a.Inconsistent {
		t.Fatalf("empty task set: %s", jsonOf(t, a))
	}
	// A commit of a connector without a config is ignored, and drops its buffer.
	f.config("task-gone-0", `{"properties":{}}`).config("commit-gone", `{"tasks":1}`).
		config("connector-gone", `{"properties":{}}`).config("commit-gone", `{"tasks":1}`)
	if g := f.connector(t, "gone"); !g.Inconsistent || len(g.Tasks) != 0 {
		t.Fatalf("commit before the config kept its tasks: %s", jsonOf(t, g))
	}
}

func TestAccumulateTombstonesAndTargets(t *testing.T) {
	f := newFeed(nil).
		config("target-state-a", `{"state":"PAUSED","state.v2":"STOPPED"}`).
		config("connector-a", `{"properties":{"k":"1"}}`).
		config("task-a-0", `{"properties":{}}`).config("commit-a", `{"tasks":1}`).
		config("connector-p", `{"properties":{}}`).config("target-state-p", `{"state":"PAUSED"}`).
		config("connector-v1", `{"properties":{}}`).config("target-state-v1", `{"state":"PAUSED","state.v2":"STARTED"}`)
	if a := f.connector(t, "a"); a.Target != "STOPPED" {
		t.Fatalf("STOPPED written as PAUSED+STOPPED: %s", a.Target)
	}
	if p := f.connector(t, "p"); p.Target != "PAUSED" {
		t.Fatalf("pre-3.5 PAUSED: %s", p.Target)
	}
	if v := f.connector(t, "v1"); v.Target != "STARTED" {
		t.Fatalf("state.v2 preferred: %s", v.Target)
	}
	// A target-state tombstone falls back to STARTED.
	f.config("target-state-p", "null")
	if p := f.connector(t, "p"); p.Target != "STARTED" {
		t.Fatalf("after a target-state tombstone: %s", p.Target)
	}
	// Deleted: the connector and its tasks are gone; a buffered task
	// of before the delete is not applied by a commit after a re-create.
	f.config("task-a-0", `{"properties":{"v":"before delete"}}`).
		config("connector-a", "null").config("target-state-a", "null")
	if a := f.connector(t, "a"); a != nil {
		t.Fatalf("deleted connector still there: %s", jsonOf(t, a))
	}
	f.config("connector-a", `{"properties":{"k":"2"}}`).config("commit-a", `{"tasks":1}`)
	a := f.connector(t, "a")
	if a.Config["k"] != "2" || !a.Inconsistent || a.Target != "STARTED" {
		t.Fatalf("re-created: %s", jsonOf(t, a))
	}
}

func TestAccumulateSkipsWithOneNotePerKind(t *testing.T) {
	f := newFeed(nil).config("connector-a", `{"properties":{}}`)
	for range 3 {
		f.config("session-key", `{"key":"c2VjcmV0","algorithm":"HmacSHA256","creation-timestamp":1}`).
			config("restart-connector-a", `{"include-tasks":true,"only-failed":false}`).
			config("tasks-fencing-a", `{"task-count":1}`).
			config("logger-cluster-org.apache", `{"level":"DEBUG"}`)
	}
	c := f.acc.cluster()
	if len(c.Problems) != 4 {
		t.Fatalf("problems %s", jsonOf(t, c.Problems))
	}
	if !strings.Contains(c.Problems[0].Reason, "session key of the old cluster, not carried over") {
		t.Fatalf("session key note: %s", c.Problems[0].Reason)
	}
	for _, p := range c.Problems {
		if p.Topic != "connect-configs" || p.Offset != -1 || !strings.HasPrefix(p.Reason, "skipped: ") {
			t.Fatalf("note %+v", p)
		}
	}
}

func TestAccumulateBadRecordsAreProblems(t *testing.T) {
	f := newFeed(nil).
		config("connector-a", `{"properties":{}}`).
		config("connector-a", `{"properties":`). // malformed: a's config stays
		config("nonsense-key", `{}`)
	f.acc.offsetRecord(at{Partition: 3, Offset: 7}, []byte(`["a",{"f":1}`), []byte(`{"p":1}`))
	f.acc.offsetRecord(at{Partition: 3, Offset: 8}, []byte("\x00\x01bin"), []byte(`{"p":1}`))
	f.acc.offsetRecord(at{Partition: 3, Offset: 9}, []byte(`["a",{"f":1}]`), []byte(`[1]`))
	f.acc.statusRecord(at{Partition: 1, Offset: 4}, []byte("status-connector-a"), []byte(`{"state":"NAPPING"}`))
	c := f.acc.cluster()
	if a := f.connector(t, "a"); a == nil {
		t.Fatal("a lost to a malformed record")
	}
	want := []struct {
		topic     string
		partition int32
		offset    int64
		key       string
	}{
		{"connect-configs", 0, 1, "connector-a"},
		{"connect-configs", 0, 2, "nonsense-key"},
		{"connect-offsets", 3, 7, `["a",{"f":1}`},
		{"connect-offsets", 3, 8, `"\x00\x01bin"`},
		{"connect-offsets", 3, 9, `["a",{"f":1}]`},
		{"connect-status", 1, 4, "status-connector-a"},
	}
	if len(c.Problems) != len(want) {
		t.Fatalf("problems %s", jsonOf(t, c.Problems))
	}
	for i, w := range want {
		p := c.Problems[i]
		if p.Topic != w.topic || p.Partition != w.partition || p.Offset != w.offset || p.Key != w.key || p.Reason == "" {
			t.Errorf("problem %d: %+v, want %+v", i, p, w)
		}
	}
	if len(a(c)) != 0 {
		t.Fatalf("an undecodable offset was kept: %s", jsonOf(t, a(c)))
	}
}

func a(c *Cluster) []SourceOffset { return c.Connectors[0].SourceOffsets }

func TestAccumulateOffsetsLatestWinsAcrossKeyBytes(t *testing.T) {
	f := newFeed(nil).config("connector-src", `{"properties":{}}`)
	// The same logical partition, written by two clients with different
	// key bytes that hash to different topic partitions.
	f.offsetIn(4, `["src",{"file":"/a","n":1}]`, `{"pos":10}`)
	f.offsetIn(9, `["src", {"n":1, "file":"/a"}]`, `{"pos":20}`)
	f.offsetIn(4, `["src",{"file":"/b"}]`, `{"pos":5}`)
	f.offsetIn(4, `["src",{"file":"/b"}]`, `{"pos":6}`)
	got := f.connector(t, "src").SourceOffsets
	if len(got) != 2 {
		t.Fatalf("offsets %s", jsonOf(t, got))
	}
	if o := got[0]; o.Offset["pos"] != json.Number("20") || string(o.Key) != `["src", {"n":1, "file":"/a"}]` {
		t.Fatalf("/a: %s key %s", jsonOf(t, o), o.Key)
	}
	if o := got[1]; o.Offset["pos"] != json.Number("6") || o.Partition["file"] != "/b" {
		t.Fatalf("/b: %s", jsonOf(t, o))
	}
	// A tombstone written with the other key bytes deletes it.
	f.offsetIn(4, `["src",{"file":"/a","n":1}]`, "null")
	if got := f.connector(t, "src").SourceOffsets; len(got) != 1 || got[0].Partition["file"] != "/b" {
		t.Fatalf("after the tombstone: %s", jsonOf(t, got))
	}
}

// The winner does not depend on the order the topic partitions are read in.
func TestAccumulateOffsetsOrderIndependent(t *testing.T) {
	type rec struct {
		at         at
		key, value string
	}
	recs := []rec{
		{at{Partition: 1, Offset: 0, Timestamp: 100}, `["s",{"f":"x"}]`, `{"pos":1}`},
		{at{Partition: 1, Offset: 1, Timestamp: 90}, `["s",{"f":"x"}]`, `{"pos":2}`}, // same partition: the offset decides, not the clock
		{at{Partition: 2, Offset: 0, Timestamp: 95}, `["s", {"f":"x"}]`, `{"pos":3}`},
		{at{Partition: 3, Offset: 0, Timestamp: 80}, `["s",{"f" : "x"}]`, `{"pos":4}`},
	}
	// Partition 1's latest (pos 2, ts 90) against partition 2's (ts 95)
	// and partition 3's (ts 80): partition 2 wins on the clock.
	for _, order := range [][]int{{0, 1, 2, 3}, {2, 3, 0, 1}, {3, 0, 2, 1}, {2, 0, 3, 1}} {
		acc := newAccumulator(DefaultTopics(), nil)
		acc.configRecord(at{}, []byte("connector-s"), []byte(`{"properties":{}}`))
		for _, i := range order {
			acc.offsetRecord(recs[i].at, []byte(recs[i].key), []byte(recs[i].value))
		}
		got := acc.cluster().Connectors[0].SourceOffsets
		if len(got) != 1 || got[0].Offset["pos"] != json.Number("3") {
			t.Fatalf("order %v: %s", order, jsonOf(t, got))
		}
	}
}

func TestAccumulateOrphansAndInclude(t *testing.T) {
	f := newFeed(func(n string) bool { return n != "skip" }).
		config("connector-live", `{"properties":{}}`).
		config("connector-dead", `{"properties":{}}`).
		config("connector-skip", `{"properties":{}}`).
		config("connector-dead", "null")
	f.offsetIn(0, `["dead",{"p":1}]`, `{"o":1}`)
	f.offsetIn(0, `["dead",{"p":2}]`, `{"o":1}`)
	f.offsetIn(0, `["dead",{"p":3}]`, `{"o":1}`)
	f.offsetIn(0, `["dead",{"p":3}]`, "null")
	f.offsetIn(0, `["never",{"p":1}]`, `{"o":1}`)
	f.offsetIn(0, `["skip",{"p":1}]`, `{"o":1}`)
	f.offsetIn(0, `["live",{"n":1.50,"big":12345678901234567890}]`, `{"o":9007199254740993}`)
	f.status("status-connector-skip", `{"state":"RUNNING","trace":null,"worker_id":"w","generation":1}`)
	c := f.acc.cluster()
	if len(c.Connectors) != 1 || c.Connectors[0].Name != "live" {
		t.Fatalf("connectors %s", jsonOf(t, c.Connectors))
	}
	if !reflect.DeepEqual(c.Orphans, map[string]int{"dead": 2, "never": 1}) {
		t.Fatalf("orphans %v", c.Orphans)
	}
	o := c.Connectors[0].SourceOffsets
	if len(o) != 1 || o[0].Offset["o"] != json.Number("9007199254740993") ||
		o[0].Partition["n"] != json.Number("1.50") || o[0].Partition["big"] != json.Number("12345678901234567890") {
		t.Fatalf("numbers not kept exactly: %s", jsonOf(t, o))
	}
}

func TestAccumulateStatus(t *testing.T) {
	f := newFeed(nil).config("connector-a", `{"properties":{}}`).
		status("status-connector-a", `{"state":"RUNNING","trace":null,"worker_id":"w1","generation":1}`).
		status("status-task-a-1", `{"state":"FAILED","trace":"boom","worker_id":"w2","generation":1}`).
		status("status-task-a-0", `{"state":"RUNNING","trace":null,"worker_id":"w1","generation":1}`).
		status("status-task-a-2", `{"state":"RUNNING","trace":null,"worker_id":"w1","generation":1}`).
		status("status-task-a-2", "null").
		status("status-connector-a", `{"state":"PAUSED","trace":null,"worker_id":"w3","generation":2}`).
		status("status-topic-t1:connector-a", `{"topic":{"name":"t1","connector":"a","task":0,"discoverTimestamp":1}}`)
	want := &ConnectorStatus{State: "PAUSED", WorkerID: "w3", Tasks: []TaskStatus{
		{ID: 0, State: "RUNNING", WorkerID: "w1"}, {ID: 1, State: "FAILED", WorkerID: "w2", Trace: "boom"}}}
	if got := f.connector(t, "a").Status; !reflect.DeepEqual(got, want) {
		t.Fatalf("status\n got %s\nwant %s", jsonOf(t, got), jsonOf(t, want))
	}
	// The topic-tracking record is skipped, with one note.
	f.status("status-topic-t2:connector-a", `{"topic":{"name":"t2","connector":"a","task":0,"discoverTimestamp":1}}`)
	if p := f.acc.cluster().Problems; len(p) != 1 || p[0].Topic != "connect-status" || p[0].Partition != -1 ||
		!strings.Contains(p[0].Reason, "status-topic-") || !strings.Contains(p[0].Reason, "GET /connectors/NAME/topics starts empty") {
		t.Fatalf("problems %s", jsonOf(t, p))
	}
	f.status("status-connector-a", "null").status("status-task-a-0", "null").status("status-task-a-1", "null")
	if got := f.connector(t, "a").Status; got != nil {
		t.Fatalf("status after tombstones: %s", jsonOf(t, got))
	}
}

// A connector that include leaves out gets no note for its topic-tracking
// records.
func TestAccumulateTopicTrackingOfOthers(t *testing.T) {
	f := newFeed(func(n string) bool { return n == "a" }).config("connector-a", `{"properties":{}}`).
		status("status-topic-t1:connector-b", `{"topic":{"name":"t1","connector":"b","task":0,"discoverTimestamp":1}}`)
	if p := f.acc.cluster().Problems; len(p) != 0 {
		t.Fatalf("problems %s", jsonOf(t, p))
	}
}

// Past MaxProblems, problems about records are counted, not kept; notes
// about topics still are.
func TestAccumulateProblemsCapped(t *testing.T) {
	f := newFeed(nil).config("connector-a", `{"properties":{}}`)
	for range MaxProblems + 7 {
		f.offsetIn(0, "not json", `{}`)
	}
	f.config("session-key", `{"key":"c2VjcmV0","algorithm":"HmacSHA256","creation-timestamp":1}`)
	c := f.acc.cluster()
	if len(c.Problems) != MaxProblems+1 || c.ProblemsLeftOut != 7 {
		t.Fatalf("%d problems, %d left out; want %d and 7", len(c.Problems), c.ProblemsLeftOut, MaxProblems+1)
	}
	if !strings.Contains(c.Problems[0].Reason, "session key") || c.Problems[1].Offset != 0 || c.Problems[MaxProblems].Offset != MaxProblems-1 {
		t.Fatalf("kept: first %+v, second %+v, last %+v", c.Problems[0], c.Problems[1], c.Problems[MaxProblems])
	}
	p := BuildPlan(c, Catalogue{})
	if b, _ := json.Marshal(p); !strings.Contains(string(b), `"problems_left_out":7`) {
		t.Fatalf("the plan's json does not count them: %.200s", b)
	}
}

// Null values of task configs are dropped, and the plan says so.
func TestAccumulateTaskNullsNoted(t *testing.T) {
	f := newFeed(nil).config("connector-a", `{"properties":{"connector.class":"FileStreamSource"}}`).
		config("task-a-0", `{"properties":{"x":null,"y":"1"}}`).
		config("task-a-1", `{"properties":{"w":null,"x":null}}`).
		config("commit-a", `{"tasks":2}`)
	a := f.connector(t, "a")
	if !reflect.DeepEqual(a.Tasks, []map[string]string{{"y": "1"}, {}}) || !reflect.DeepEqual(a.TaskNullKeys, []string{"w", "x"}) {
		t.Fatalf("tasks %s, null keys %v", jsonOf(t, a.Tasks), a.TaskNullKeys)
	}
	pc := BuildPlan(&Cluster{Connectors: []*Connector{a}}, testCatalogue()).Connectors[0]
	if !slices.Contains(pc.Notes, "null values dropped from the task configs: w, x") {
		t.Fatalf("notes %q", pc.Notes)
	}
	// A later commit without nulls clears them.
	f.config("task-a-0", `{"properties":{"y":"2"}}`).config("commit-a", `{"tasks":1}`)
	if a := f.connector(t, "a"); a.TaskNullKeys != nil {
		t.Fatalf("null keys after a clean commit: %v", a.TaskNullKeys)
	}
}

func TestPrintable(t *testing.T) {
	if got := printable([]byte("connector-a")); got != "connector-a" {
		t.Fatal(got)
	}
	if got := printable([]byte("a\nb")); got != `"a\nb"` {
		t.Fatal(got)
	}
	long := printable([]byte(strings.Repeat("é", 300)))
	if len(long) > 203 || !strings.HasSuffix(long, "…") {
		t.Fatalf("%d %q", len(long), long)
	}
}
