package migrate

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// at is where a record sits: its topic partition, offset and timestamp
// (milliseconds).
type at struct {
	Partition int32
	Offset    int64
	Timestamp int64
}

// newer tells whether a was written after b, each the latest record of
// one logical source partition in its topic partition. Records with the
// same key bytes always land in one topic partition, where the offset
// orders them exactly (offsetRecord keeps the latest of each). But one
// logical partition written with different key bytes (another client's
// JSON key order or spacing) hashes to different topic partitions, and
// across those only the record timestamps order records: the writers'
// clocks (CreateTime), which may be a little off. The topic partition
// breaks a tie so that the outcome does not depend on the read order.
func (a at) newer(b at) bool {
	if a.Timestamp != b.Timestamp {
		return a.Timestamp > b.Timestamp
	}
	return a.Partition > b.Partition
}

// accumulator folds the records of the three internal topics, one at a
// time, into a Cluster. It keeps the state Kafka Connect's own readers keep
// (one entry per connector, task, source partition and status key), never
// the records. Records of one topic partition must come in offset order;
// topics and partitions may interleave.
type accumulator struct {
	topics  Topics
	include func(string) bool

	configs  map[string]*configState
	targets  map[string]string
	deferred map[string]map[int]map[string]*string // task configs since the last commit

	offsets map[string]map[string][]*offsetEntry // connector → canonical partition → latest of each topic partition
	status  map[string]*statusState

	problems []Problem
	recorded int             // problems kept that problem() added
	leftOut  int             // problem()'s past MaxProblems, counted only
	noted    map[string]bool // one note per kind of skipped record
}

// MaxProblems bounds the problems about single records a read keeps, the
// first it meets: the rest are only counted (Cluster.ProblemsLeftOut).
// What it notes about topics and partitions is always kept.
const MaxProblems = 1000

type configState struct {
	config       map[string]*string
	tasks        []map[string]string
	taskNulls    []string // keys with null values in tasks, dropped
	taskCount    int
	inconsistent bool
}

type offsetEntry struct {
	at        at
	partition map[string]any
	offset    map[string]any // nil: deleted
	key       []byte
}

type statusState struct {
	connector *StatusRecord
	tasks     map[int]*StatusRecord
}

func newAccumulator(topics Topics, include func(string) bool) *accumulator {
	return &accumulator{
		topics:   topics,
		include:  include,
		configs:  map[string]*configState{},
		targets:  map[string]string{},
		deferred: map[string]map[int]map[string]*string{},
		offsets:  map[string]map[string][]*offsetEntry{},
		status:   map[string]*statusState{},
		noted:    map[string]bool{},
	}
}

func (a *accumulator) wanted(name string) bool { return a.include == nil || a.include(name) }

func (a *accumulator) problem(topic string, where at, key []byte, connector, reason string) {
	if connector != "" && !a.wanted(connector) {
		return
	}
	if a.recorded >= MaxProblems {
		a.leftOut++
		return
	}
	a.recorded++
	a.problems = append(a.problems, Problem{Topic: topic, Partition: where.Partition, Offset: where.Offset,
		Key: printable(key), Connector: connector, Reason: reason})
}

// note records a topic-level problem once per kind.
func (a *accumulator) note(topic, kind, reason string) {
	if a.noted[topic+"\x00"+kind] {
		return
	}
	a.noted[topic+"\x00"+kind] = true
	a.problems = append(a.problems, Problem{Topic: topic, Partition: -1, Offset: -1, Reason: reason})
}

// configRecord applies one record of the config topic, as Kafka Connect's
// KafkaConfigBackingStore does.
func (a *accumulator) configRecord(where at, key, value []byte) {
	topic := a.topics.Config
	rec, err := DecodeConfigRecord(string(key), value)
	if err != nil {
		a.problem(topic, where, key, rec.Connector, err.Error())
		return
	}
	name := rec.Connector
	if name != "" && !a.wanted(name) {
		return
	}
	switch rec.Kind {
	case KindConnector:
		if rec.Tombstone {
			// A deleted connector: Kafka Connect forgets its config, task
			// count, task configs and deferred task configs, not its target state.
			delete(a.configs, name)
			delete(a.deferred, name)
			return
		}
		st := a.configs[name]
		if st == nil {
			st = &configState{}
			a.configs[name] = st
		}
		st.config = rec.Properties
	case KindTask:
		if rec.Tombstone {
			a.note(topic, "task-tombstone", "skipped: tombstones of task configs (Kafka Connect ignores them)")
			return
		}
		d := a.deferred[name]
		if d == nil {
			d = map[int]map[string]*string{}
			a.deferred[name] = d
		}
		d[rec.Task] = rec.Properties
	case KindCommit:
		if rec.Tombstone {
			a.problem(topic, where, key, name, "commit record without a task count (null value): ignored")
			return
		}
		d := a.deferred[name]
		delete(a.deferred, name)
		st := a.configs[name]
		if st == nil {
			return // a commit of a deleted connector whose config compaction removed
		}
		st.taskCount = rec.TaskCount
		for i := range rec.TaskCount {
			if _, ok := d[i]; !ok {
				st.inconsistent, st.tasks, st.taskNulls = true, nil, nil
				return
			}
		}
		st.inconsistent, st.taskNulls = false, nil
		st.tasks = make([]map[string]string, rec.TaskCount)
		for i := range rec.TaskCount {
			st.tasks[i] = withoutNulls(d[i])
			for k, v := range d[i] {
				if v == nil && !slices.Contains(st.taskNulls, k) {
					st.taskNulls = append(st.taskNulls, k)
				}
			}
		}
		sort.Strings(st.taskNulls)
	case KindTargetState:
		if rec.Tombstone {
			delete(a.targets, name) // back to STARTED
			return
		}
		a.targets[name] = rec.TargetState
	case KindSessionKey:
		a.note(topic, "session-key", "skipped: session key of the old cluster, not carried over")
	case KindRestart:
		a.note(topic, "restart", "skipped: restart requests (restart-connector-…), not carried over")
	case KindTasksFencing:
		a.note(topic, "tasks-fencing", "skipped: exactly-once task fencing records (tasks-fencing-…), not carried over")
	case KindLoggerLevel:
		a.note(topic, "logger", "skipped: cluster-wide logger levels (logger-cluster-…), not carried over")
	}
}

// offsetRecord applies one record of the offsets topic: the latest record
// of each logical source partition wins, whatever key bytes wrote it.
func (a *accumulator) offsetRecord(where at, key, value []byte) {
	topic := a.topics.Offset
	if key == nil {
		a.problem(topic, where, nil, "", "offset record without a key")
		return
	}
	rec, err := DecodeOffsetRecord(key, value)
	if err != nil {
		a.problem(topic, where, key, rec.Connector, err.Error())
		return
	}
	if !a.wanted(rec.Connector) {
		return
	}
	canon, err := canonicalJSON(rec.Partition)
	if err != nil {
		a.problem(topic, where, key, rec.Connector, "source partition: "+err.Error())
		return
	}
	byPart := a.offsets[rec.Connector]
	if byPart == nil {
		byPart = map[string][]*offsetEntry{}
		a.offsets[rec.Connector] = byPart
	}
	e := &offsetEntry{at: where, partition: rec.Partition, offset: rec.Offset, key: slices.Clone(key)}
	// Keep the latest record of each topic partition (records of one come
	// in offset order); the winner among them is chosen at the end, as
	// topic partitions interleave in any order.
	for i, old := range byPart[canon] {
		if old.at.Partition == where.Partition {
			byPart[canon][i] = e
			return
		}
	}
	byPart[canon] = append(byPart[canon], e)
}

// statusRecord applies one record of the status topic; the latest record
// of each key wins (a key always lands in one partition).
func (a *accumulator) statusRecord(where at, key, value []byte) {
	topic := a.topics.Status
	rec, err := DecodeStatusRecord(string(key), value)
	if err != nil {
		a.problem(topic, where, key, rec.Connector, err.Error())
		return
	}
	if !a.wanted(rec.Connector) {
		return
	}
	if rec.IsTopic {
		a.note(topic, "topic-tracking", "skipped: active topics of connectors (status-topic-…), not carried over: GET /connectors/NAME/topics starts empty in kcd and fills again as the tasks run")
		return
	}
	st := a.status[rec.Connector]
	if st == nil {
		st = &statusState{tasks: map[int]*StatusRecord{}}
		a.status[rec.Connector] = st
	}
	switch {
	case rec.Task < 0 && rec.Tombstone:
		st.connector = nil
	case rec.Task < 0:
		st.connector = &rec
	case rec.Tombstone:
		delete(st.tasks, rec.Task)
	default:
		st.tasks[rec.Task] = &rec
	}
}

// cluster returns what the records said: the live connectors kept by
// include, in name order, with their offsets and statuses.
func (a *accumulator) cluster() *Cluster {
	c := &Cluster{}
	for name, st := range a.configs {
		if !a.wanted(name) {
			continue
		}
		conn := &Connector{
			Name:         name,
			Config:       withoutNulls(st.config),
			Target:       "STARTED",
			Tasks:        st.tasks,
			TaskCount:    st.taskCount,
			Inconsistent: st.inconsistent,
			TaskNullKeys: st.taskNulls,
		}
		for k, v := range st.config {
			if v == nil {
				conn.NullKeys = append(conn.NullKeys, k)
			}
		}
		sort.Strings(conn.NullKeys)
		if t, ok := a.targets[name]; ok {
			conn.Target = t
		}
		if conn.Tasks == nil {
			conn.Tasks = []map[string]string{}
		}
		conn.Status = a.statusOf(name)
		conn.SourceOffsets = a.sourceOffsets(name)
		c.Connectors = append(c.Connectors, conn)
	}
	sort.Slice(c.Connectors, func(i, j int) bool { return c.Connectors[i].Name < c.Connectors[j].Name })
	for name := range a.offsets {
		if a.configs[name] != nil {
			continue
		}
		if n := len(a.sourceOffsets(name)); n > 0 {
			if c.Orphans == nil {
				c.Orphans = map[string]int{}
			}
			c.Orphans[name] = n
		}
	}
	for _, p := range a.problems {
		if p.Connector == "" || a.wanted(p.Connector) {
			c.Problems = append(c.Problems, p)
		}
	}
	c.ProblemsLeftOut = a.leftOut
	// In topic order, then where they are (a topic's own first): not in
	// the order the partitions happened to be read in.
	order := map[string]int{a.topics.Config: 0, a.topics.Offset: 1, a.topics.Status: 2}
	sort.SliceStable(c.Problems, func(i, j int) bool {
		p, q := c.Problems[i], c.Problems[j]
		if order[p.Topic] != order[q.Topic] {
			return order[p.Topic] < order[q.Topic]
		}
		if p.Partition != q.Partition {
			return p.Partition < q.Partition
		}
		return p.Offset < q.Offset
	})
	return c
}

func (a *accumulator) statusOf(name string) *ConnectorStatus {
	st := a.status[name]
	if st == nil || (st.connector == nil && len(st.tasks) == 0) {
		return nil
	}
	cs := &ConnectorStatus{}
	if r := st.connector; r != nil {
		cs.State, cs.WorkerID, cs.Trace = r.State, r.WorkerID, r.Trace
	}
	for id, r := range st.tasks {
		cs.Tasks = append(cs.Tasks, TaskStatus{ID: id, State: r.State, WorkerID: r.WorkerID, Trace: r.Trace})
	}
	sort.Slice(cs.Tasks, func(i, j int) bool { return cs.Tasks[i].ID < cs.Tasks[j].ID })
	return cs
}

func (a *accumulator) sourceOffsets(name string) []SourceOffset {
	byPart := a.offsets[name]
	latest := make(map[string]*offsetEntry, len(byPart))
	canons := make([]string, 0, len(byPart))
	for canon, es := range byPart {
		w := es[0]
		for _, e := range es[1:] {
			if e.at.newer(w.at) {
				w = e
			}
		}
		if w.offset != nil {
			latest[canon] = w
			canons = append(canons, canon)
		}
	}
	sort.Strings(canons)
	var out []SourceOffset
	for _, canon := range canons {
		e := latest[canon]
		out = append(out, SourceOffset{Partition: e.partition, Offset: e.offset, Key: e.key})
	}
	return out
}

// canonicalJSON is v encoded with sorted keys and no spaces: one form for
// every encoding of the same source partition. Numbers stay as written
// (json.Number), so 1 and 1.0 remain two partitions, as they are to Kafka
// Connect's JSON converter (a long and a double).
func canonicalJSON(v any) (string, error) {
	b, err := json.Marshal(v) // sorts map keys
	if err != nil {
		return "", err
	}
	return string(b), nil
}

func withoutNulls(m map[string]*string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		if v != nil {
			out[k] = *v
		}
	}
	return out
}

// printable renders a record key for a Problem: valid UTF-8 without
// control characters as is, anything else quoted; at most 200 bytes.
func printable(key []byte) string {
	s := string(key)
	if !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		s = strconv.Quote(s)
	}
	if len(s) > 200 {
		cut := 200
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// truncated is the Problem of a topic partition whose log starts after 0.
func truncated(topic string, partition int32, start int64) Problem {
	return Problem{Topic: topic, Partition: partition, Offset: -1,
		Reason: fmt.Sprintf("truncated: records before offset %d are gone (retention or delete-records); what they held is lost", start)}
}
