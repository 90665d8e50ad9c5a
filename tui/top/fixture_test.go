package top

import (
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

var update = flag.Bool("update", false, "rewrite the golden frames in testdata")

// now is the fixed clock of every test.
var now = time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)

func clock() time.Time { return now }

// cluster is three raft+worker nodes (node 2 leads, after node 1 did) and a
// draining worker-only node; billing-source has a failed task, orders-sink
// failed as a whole, the latest rebalance followed the leader change.
func cluster() Snapshot {
	tasks := func(spec ...string) []Task { // "STATE@worker"
		var ts []Task
		for i, s := range spec {
			st, w, _ := strings.Cut(s, "@")
			ts = append(ts, Task{ID: i, State: st, WorkerID: w})
		}
		return ts
	}
	cs := []Connector{
		{Name: "a-connector-name-much-too-long-for-any-column-of-the-table", Type: "source", State: "RUNNING", WorkerID: "kcd-3:8083",
			Tasks: tasks("RUNNING@kcd-3:8083"), RecordsPerSec: 3.25, SinkLag: -1},
		{Name: "audit-sink", Type: "sink", State: "RUNNING", WorkerID: "kcd-3:8083",
			Tasks: tasks("RUNNING@kcd-1:8083", "RUNNING@kcd-3:8083", "RUNNING@kcd-4:8083"), RecordsPerSec: 1520.5, SinkLag: 12000},
		{Name: "billing-source", Type: "source", State: "RUNNING", WorkerID: "kcd-1:8083",
			Tasks: tasks("RUNNING@kcd-1:8083", "RUNNING@kcd-3:8083", "FAILED@kcd-1:8083", "RUNNING@kcd-4:8083"), RecordsPerSec: 230, SinkLag: -1},
		{Name: "clicks-sink", Type: "sink", State: "PAUSED", WorkerID: "kcd-2:8083",
			Tasks: tasks("PAUSED@kcd-2:8083", "PAUSED@kcd-2:8083"), RecordsPerSec: 0, SinkLag: 48213},
		{Name: "inventory-cdc", Type: "source", State: "RUNNING", WorkerID: "kcd-2:8083",
			Tasks: tasks("RUNNING@kcd-2:8083", "RUNNING@kcd-3:8083", "RUNNING@kcd-1:8083"), RecordsPerSec: 88.2, SinkLag: -1},
		{Name: "orders-sink", Type: "sink", State: "FAILED", WorkerID: "kcd-3:8083",
			Trace: "org.apache.kafka.connect.errors.ConnectException: topic orders does not exist\n\tat io.kcd.sink.Start(Sink.java:41)", RecordsPerSec: -1, SinkLag: -1},
		{Name: "payments-mirror", Type: "source", State: "RUNNING", WorkerID: "kcd-4:8083",
			Tasks: tasks("RUNNING@kcd-1:8083", "RUNNING@kcd-3:8083", "RUNNING@kcd-4:8083", "RESTARTING@kcd-3:8083"), RecordsPerSec: 12000, SinkLag: -1},
		{Name: "search-indexer", Type: "sink", State: "RUNNING", WorkerID: "kcd-1:8083",
			Tasks: tasks("RUNNING@kcd-1:8083", "RUNNING@kcd-3:8083", "RUNNING@kcd-1:8083", "RUNNING@kcd-3:8083", "UNASSIGNED@"), RecordsPerSec: -1, SinkLag: -1},
	}
	cs[2].Tasks[2].Trace = "org.apache.kafka.connect.errors.ConnectException: connection refused: billing-db:5432\n" +
		"\tat io.kcd.jdbc.Source.poll(Source.java:88)\n\tat io.kcd.runtime.WorkerSourceTask.run(WorkerSourceTask.java:212)\n" +
		"Caused by: java.net.ConnectException: Connection refused"
	ws := []Worker{
		{ID: "kcd-1:8083", NodeID: 1, Weight: 1, Alive: true},
		{ID: "kcd-2:8083", NodeID: 2, Weight: 1, Alive: true, Leader: true},
		{ID: "kcd-3:8083", NodeID: 3, Weight: 1, Alive: true},
		{ID: "kcd-4:8083", Weight: 0.5, Alive: true, Draining: true},
	}
	for i := range ws {
		ws[i].Tasks = map[string]int{}
	}
	for _, c := range cs {
		for _, t := range c.Tasks {
			for i := range ws {
				if ws[i].ID == t.WorkerID {
					ws[i].Tasks[t.State]++
				}
			}
		}
		for i := range ws {
			if ws[i].ID == c.WorkerID {
				ws[i].Connectors++
			}
		}
	}
	return Snapshot{
		At:     now.Add(-2 * time.Second),
		Server: "http://127.0.0.1:8083",
		Cluster: Cluster{ID: "kcd-7f3a9c", Leader: 2, Term: 7, Store: "raft",
			Voters: 3, VotersUp: 3, Quorum: 2, QuorumOK: true},
		Members: []Member{
			{ID: 1, RESTURL: "http://kcd-1:8083", Roles: []string{"raft", "worker"}, Raft: "voter", Reachable: true, WorkerID: "kcd-1:8083"},
			{ID: 2, RESTURL: "http://kcd-2:8083", Roles: []string{"raft", "worker"}, Raft: "voter", Reachable: true, Leader: true, WorkerID: "kcd-2:8083"},
			{ID: 3, RESTURL: "http://kcd-3:8083", Roles: []string{"raft", "worker"}, Raft: "voter", Reachable: true, WorkerID: "kcd-3:8083"},
			{ID: 4, RESTURL: "http://kcd-4:8083", Roles: []string{"worker"}, Raft: "none", Reachable: true, WorkerID: "kcd-4:8083"},
		},
		Workers:    ws,
		Connectors: cs,
		Rebalances: []Rebalance{
			{At: now.Add(-20 * time.Second), Epoch: "7.1", Leader: 2, Triggers: []string{"leader-changed"}, Moves: 6, Units: 27, Workers: 4, Took: 140 * time.Millisecond},
			{At: now.Add(-9 * time.Minute), Epoch: "6.4", Leader: 1, Triggers: []string{"connector-created"}, Moves: 1, Units: 26, Workers: 4, Took: 35 * time.Millisecond},
			{At: now.Add(-3 * time.Hour), Epoch: "6.1", Leader: 1, Triggers: []string{"worker-joined", "config-changed"}, Moves: 8, Units: 22, Workers: 4, Took: 1200 * time.Millisecond},
		},
	}
}

// before is the same cluster one poll earlier, when node 1 still led.
func before() Snapshot {
	s := cluster()
	s.Cluster.Leader, s.Cluster.Term = 1, 6
	s.Members[0].Leader, s.Members[1].Leader = true, false
	s.Workers[0].Leader, s.Workers[1].Leader = true, false
	s.Rebalances = s.Rebalances[1:]
	return s
}

// call is one Backend call the fake recorded.
type call struct {
	Op    string
	Name  string
	Task  int
	Tasks bool
}

type fakeBackend struct {
	mu      sync.Mutex
	calls   []call
	offsets []Offset
	err     error
}

func (b *fakeBackend) add(c call) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls = append(b.calls, c)
	return b.err
}

func (b *fakeBackend) RestartConnector(_ context.Context, name string, tasks bool) error {
	return b.add(call{Op: "restart", Name: name, Task: -1, Tasks: tasks})
}
func (b *fakeBackend) RestartTask(_ context.Context, name string, task int) error {
	return b.add(call{Op: "restart-task", Name: name, Task: task})
}
func (b *fakeBackend) PauseConnector(_ context.Context, name string) error {
	return b.add(call{Op: "pause", Name: name, Task: -1})
}
func (b *fakeBackend) ResumeConnector(_ context.Context, name string) error {
	return b.add(call{Op: "resume", Name: name, Task: -1})
}
func (b *fakeBackend) Offsets(_ context.Context, name string) ([]Offset, error) {
	if err := b.add(call{Op: "offsets", Name: name, Task: -1}); err != nil {
		return nil, err
	}
	return b.offsets, nil
}

func (b *fakeBackend) recorded() []call {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]call(nil), b.calls...)
}

var errBoom = errors.New("boom")

func billingOffsets() []Offset {
	return []Offset{
		{Partition: `{"table":"invoices"}`, Offset: `{"id":48120}`},
		{Partition: `{"table":"payments"}`, Offset: `{"id":9921}`},
	}
}

// started is a model of the fixture at w x h: two polls (the leader moved
// from 1 to 2 between them, so the header flashes) and a live feed.
func started(t testing.TB, w, h int, o Options) (Model, *fakeBackend) {
	t.Helper()
	b := &fakeBackend{offsets: billingOffsets()}
	if o.Backend == nil {
		o.Backend = b
	}
	if o.Now == nil {
		o.Now = clock
	}
	if o.Context == "" {
		o.Context = "prod"
	}
	m := New(o)
	m = send(m, tea.WindowSizeMsg{Width: w, Height: h})
	m = send(m, SnapshotMsg{Seq: 1, Snapshot: before()})
	m = send(m, FeedStateMsg{Live: true, Server: "http://127.0.0.1:8083"})
	m = send(m, SnapshotMsg{Seq: 2, Snapshot: cluster()})
	return m, b
}

// send updates m with msg and drops the command.
func send(m Model, msg tea.Msg) Model {
	next, _ := m.Update(msg)
	return next.(Model)
}

// keyMsg is the key press a terminal sends for name.
func keyMsg(name string) tea.KeyPressMsg {
	switch name {
	case "tab":
		return tea.KeyPressMsg{Code: tea.KeyTab}
	case "shift+tab":
		return tea.KeyPressMsg{Code: tea.KeyTab, Mod: tea.ModShift}
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "backspace":
		return tea.KeyPressMsg{Code: tea.KeyBackspace}
	case "up":
		return tea.KeyPressMsg{Code: tea.KeyUp}
	case "down":
		return tea.KeyPressMsg{Code: tea.KeyDown}
	case "left":
		return tea.KeyPressMsg{Code: tea.KeyLeft}
	case "right":
		return tea.KeyPressMsg{Code: tea.KeyRight}
	case "ctrl+c":
		return tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl}
	}
	r := []rune(name)
	return tea.KeyPressMsg{Code: r[0], Text: name}
}

// press presses keys in turn and returns the last key's command.
func press(t testing.TB, m Model, keys ...string) (Model, tea.Cmd) {
	t.Helper()
	var cmd tea.Cmd
	for _, k := range keys {
		if got := keyMsg(k).String(); got != k {
			t.Fatalf("key %q reads as %q", k, got)
		}
		var next tea.Model
		next, cmd = m.Update(keyMsg(k))
		m = next.(Model)
	}
	return m, cmd
}

// do runs cmd, as the program would, and feeds its message back.
func do(t testing.TB, m Model, cmd tea.Cmd) Model {
	t.Helper()
	if cmd == nil {
		t.Fatal("no command to run")
	}
	return send(m, cmd())
}

func frame(m Model) string { return m.View().Content }

// checkShape fails unless the frame is exactly h lines of at most w cells.
func checkShape(t *testing.T, f string, w, h int) {
	t.Helper()
	lines := strings.Split(f, "\n")
	if len(lines) != h {
		t.Errorf("frame has %d lines, want %d", len(lines), h)
	}
	for i, l := range lines {
		if n := ansi.StringWidth(l); n > w {
			t.Errorf("line %d is %d cells wide, more than %d: %q", i+1, n, w, l)
		}
	}
}

// golden compares a frame with testdata/name.golden (-update rewrites it).
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run %s -update to write it)", err, t.Name())
	}
	if got+"\n" != string(want) {
		t.Errorf("frame differs from %s (go test -update rewrites it)\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}
