package top

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
)

// line is the frame's first line containing sub ("" when none does).
func line(f, sub string) string {
	for _, l := range strings.Split(f, "\n") {
		if strings.Contains(l, sub) {
			return l
		}
	}
	return ""
}

// row is the frame's first line starting with prefix.
func rowOf(f, prefix string) string {
	for _, l := range strings.Split(f, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

// selectedRow is the frame's row marked as selected.
func selectedRow(f string) string {
	for _, l := range strings.Split(f, "\n") {
		if strings.HasPrefix(l, "> ") {
			return l
		}
	}
	return ""
}

// statusLine is the line above the help line.
func statusLine(f string) string {
	ls := strings.Split(f, "\n")
	return ls[len(ls)-2]
}

func TestFocusMoves(t *testing.T) {
	m, _ := started(t, 80, 24, Options{NoColor: true})
	steps := []struct {
		key   string
		focus pane
		title string
	}{
		{"", paneConnectors, "━━ Connectors"},
		{"tab", paneJournal, "━━ Rebalances"},
		{"tab", paneMembers, "━━ Members"},
		{"tab", paneWorkers, "━━ Workers"},
		{"shift+tab", paneMembers, "━━ Members"},
		{"h", paneJournal, "━━ Rebalances"},
		{"l", paneMembers, "━━ Members"},
		{"right", paneWorkers, "━━ Workers"},
		{"left", paneMembers, "━━ Members"},
	}
	for _, s := range steps {
		if s.key != "" {
			m, _ = press(t, m, s.key)
		}
		f := frame(m)
		if m.focus != s.focus || !strings.Contains(f, s.title) {
			t.Fatalf("after %q: focus %d, want %d with title %q in\n%s", s.key, m.focus, s.focus, s.title, f)
		}
		if n := strings.Count(f, "━━ "); n != 1 {
			t.Fatalf("after %q: %d focused panes", s.key, n)
		}
	}
	// The focused pane's selection moves with j/k and G/g and scrolls.
	m, _ = press(t, m, "j")
	if got := selectedRow(frame(m)); !strings.Contains(got, "kcd-2:8083") {
		t.Fatalf("members after j: selected %q", got)
	}
	m, _ = press(t, m, "G")
	f := frame(m)
	if got := selectedRow(f); !strings.Contains(got, "kcd-4:8083") || !strings.Contains(f, "Members 4 · 2-4") {
		t.Fatalf("members after G: selected %q in\n%s", got, f)
	}
	m, _ = press(t, m, "g", "k")
	if got := selectedRow(frame(m)); !strings.Contains(got, " 1 raft,worker") {
		t.Fatalf("members after g k: selected %q", got)
	}
}

func TestDrillInAndBack(t *testing.T) {
	m, b := started(t, 80, 24, Options{NoColor: true})
	m, cmd := press(t, m, "enter")
	f := frame(m)
	if !strings.Contains(f, "Connector billing-source") || !strings.Contains(f, "loading…") {
		t.Fatalf("drill-in shows\n%s", f)
	}
	// The failed task is selected, its trace shown.
	if got := selectedRow(f); !strings.Contains(got, "2 FAILED") || !strings.Contains(f, "Caused by: java.net.ConnectException") {
		t.Fatalf("drill-in selects %q, frame\n%s", got, f)
	}
	// An answer for another connector is not this one's.
	m = send(m, OffsetsMsg{Connector: "audit-sink", Offsets: []Offset{{Partition: "other", Offset: "1"}}})
	if f := frame(m); strings.Contains(f, "other") || !strings.Contains(f, "loading…") {
		t.Fatalf("offsets of another connector shown:\n%s", f)
	}
	m = do(t, m, cmd)
	if got := b.recorded(); !reflect.DeepEqual(got, []call{{Op: "offsets", Name: "billing-source", Task: -1}}) {
		t.Fatalf("backend calls %+v", got)
	}
	if f := frame(m); !strings.Contains(f, `{"id":48120}`) || strings.Contains(f, "loading…") {
		t.Fatalf("offsets not shown:\n%s", f)
	}
	m, _ = press(t, m, "k")
	if f := frame(m); !strings.Contains(selectedRow(f), "1 RUNNING") || !strings.Contains(f, "Trace of task 1") || !strings.Contains(f, "no trace") {
		t.Fatalf("after k:\n%s", f)
	}
	// tab does nothing in a drill-in; esc goes back to the list.
	m, _ = press(t, m, "tab", "esc")
	if f := frame(m); !strings.Contains(f, "━━ Connectors 8") || strings.Contains(f, "Connector billing-source") || m.focus != paneConnectors {
		t.Fatalf("after esc:\n%s", f)
	}
	// h goes back too; an offsets error is shown.
	b.err = errBoom
	m, cmd = press(t, m, "enter")
	m = do(t, m, cmd)
	if f := frame(m); !strings.Contains(f, "offsets: boom") {
		t.Fatalf("offsets error not shown:\n%s", f)
	}
	m, _ = press(t, m, "h")
	if m.drill != "" {
		t.Fatal("h did not leave the drill-in")
	}
	// A connector deleted while drilled into says so.
	m, _ = press(t, m, "enter")
	m = send(m, StatusMsg{Connector: "billing-source", Deleted: true})
	if f := frame(m); !strings.Contains(f, "connector billing-source no longer exists") {
		t.Fatalf("deleted connector:\n%s", f)
	}
}

func TestFilter(t *testing.T) {
	m, _ := started(t, 80, 24, Options{NoColor: true})
	m, _ = press(t, m, "tab", "/") // / focuses the connectors
	m, _ = press(t, m, "S", "i", "n", "k")
	f := frame(m)
	if m.focus != paneConnectors || !strings.Contains(statusLine(f), "filter: Sink") {
		t.Fatalf("filter typing:\n%s", f)
	}
	for _, name := range []string{"audit-sink", "clicks-sink", "orders-sink", "search-indexer"} {
		if strings.Contains(name, "sink") != strings.Contains(f, name) {
			t.Errorf("filter sink: %s shown %v", name, strings.Contains(f, name))
		}
	}
	if !strings.Contains(f, "/Sink: 3 match") || strings.Contains(f, "billing-source") {
		t.Fatalf("filter sink:\n%s", f)
	}
	// The failing match lists first and is selected.
	if got := selectedRow(f); !strings.Contains(got, "orders-sink") {
		t.Fatalf("selected %q", got)
	}
	m, _ = press(t, m, "backspace", "backspace", "backspace", "backspace", "a", "u", "enter")
	f = frame(m)
	if m.editing || !strings.Contains(f, "/au: 1 match") || !strings.Contains(selectedRow(f), "audit-sink") ||
		!strings.Contains(statusLine(f), `filter "au": 1 of 8 connectors`) {
		t.Fatalf("filter au:\n%s", f)
	}
	// Keys work again after enter; esc clears the filter and keeps the selection.
	m, _ = press(t, m, "esc")
	f = frame(m)
	if m.filter != "" || !strings.Contains(f, "Connectors 8 · 2 failing · 4/8") || !strings.Contains(selectedRow(f), "audit-sink") {
		t.Fatalf("after esc:\n%s", f)
	}
	m, _ = press(t, m, "/", "z", "z", "z")
	f = frame(m)
	if !strings.Contains(f, "no connector matches the filter") {
		t.Fatalf("no match:\n%s", f)
	}
	// The panes below keep their place.
	lineNo := func(f string) int { return strings.Count(f[:strings.Index(f, "── Rebalances")], "\n") }
	if a, b := lineNo(f), lineNo(frame(send(m, keyMsg("esc")))); a != b {
		t.Fatalf("the rebalances pane moved from line %d to %d when filtering:\n%s", b, a, f)
	}
	m, _ = press(t, m, "esc")
	if f := frame(m); m.editing || m.filter != "" || !strings.Contains(f, "billing-source") {
		t.Fatalf("esc while typing:\n%s", f)
	}
}

func TestConfirmRestartAndPause(t *testing.T) {
	m, b := started(t, 80, 24, Options{NoColor: true})

	m, cmd := press(t, m, "r")
	if cmd != nil || !strings.Contains(statusLine(frame(m)), "restart connector billing-source and its tasks? (y/n)") {
		t.Fatalf("r asks:\n%s", frame(m))
	}
	m, cmd = press(t, m, "j") // other keys wait for the answer
	if cmd != nil || !strings.Contains(selectedRow(frame(m)), "billing-source") || m.confirm == nil {
		t.Fatal("a key other than y/n acted during the confirmation")
	}
	m, cmd = press(t, m, "n")
	if cmd != nil || len(b.recorded()) != 0 || !strings.Contains(statusLine(frame(m)), "restart billing-source: cancelled") {
		t.Fatalf("n: calls %+v, frame\n%s", b.recorded(), frame(m))
	}

	m, _ = press(t, m, "r")
	m, cmd = press(t, m, "y")
	if len(b.recorded()) != 0 {
		t.Fatal("the backend was called from Update, not from the command")
	}
	if !strings.Contains(statusLine(frame(m)), "restart billing-source…") {
		t.Fatalf("in flight:\n%s", frame(m))
	}
	m = do(t, m, cmd)
	want := []call{{Op: "restart", Name: "billing-source", Task: -1, Tasks: true}}
	if got := b.recorded(); !reflect.DeepEqual(got, want) {
		t.Fatalf("calls %+v, want %+v", got, want)
	}
	if got := statusLine(frame(m)); !strings.Contains(got, "restart billing-source: done") {
		t.Fatalf("status %q", got)
	}

	// In the drill-in r restarts the selected task; p pauses the connector.
	m, cmd = press(t, m, "enter")
	m = do(t, m, cmd)
	m, _ = press(t, m, "r")
	if got := statusLine(frame(m)); !strings.Contains(got, "restart task billing-source/2? (y/n)") {
		t.Fatalf("status %q", got)
	}
	m, cmd = press(t, m, "y")
	m = do(t, m, cmd)
	m, _ = press(t, m, "p")
	if got := statusLine(frame(m)); !strings.Contains(got, "pause connector billing-source? (y/n)") {
		t.Fatalf("status %q", got)
	}
	m, cmd = press(t, m, "y")
	m = do(t, m, cmd)

	// On a paused connector p resumes; a failure is shown.
	m, _ = press(t, m, "esc", "/", "c", "l", "i", "c", "k", "enter")
	b.err = errBoom
	m, _ = press(t, m, "p")
	if got := statusLine(frame(m)); !strings.Contains(got, "resume connector clicks-sink? (y/n)") {
		t.Fatalf("status %q", got)
	}
	m, cmd = press(t, m, "y")
	m = do(t, m, cmd)
	if got := statusLine(frame(m)); !strings.Contains(got, "resume clicks-sink failed: boom") {
		t.Fatalf("status %q", got)
	}
	want = append(want,
		call{Op: "offsets", Name: "billing-source", Task: -1},
		call{Op: "restart-task", Name: "billing-source", Task: 2},
		call{Op: "pause", Name: "billing-source", Task: -1},
		call{Op: "resume", Name: "clicks-sink", Task: -1})
	if got := b.recorded(); !reflect.DeepEqual(got, want) {
		t.Fatalf("calls\n%+v\nwant\n%+v", got, want)
	}

	// r and p act on connectors only.
	m, _ = press(t, m, "tab", "r")
	if m.confirm != nil || !strings.Contains(statusLine(frame(m)), "select a connector first") {
		t.Fatalf("r on the rebalances pane:\n%s", frame(m))
	}
}

func TestReadOnlyRefuses(t *testing.T) {
	m, b := started(t, 80, 24, Options{NoColor: true, ReadOnly: true})
	f := frame(m)
	help := f[strings.LastIndexByte(f, '\n')+1:]
	if strings.Contains(help, "restart") || strings.Contains(help, "pause") || !strings.Contains(help, "q quit") {
		t.Fatalf("help line under read-only: %q", help)
	}
	if !strings.Contains(line(f, "cluster "), "read-only") {
		t.Fatalf("header does not say read-only:\n%s", f)
	}
	for _, k := range []string{"r", "p"} {
		var cmd tea.Cmd
		m, cmd = press(t, m, k)
		if cmd != nil || m.confirm != nil || !strings.Contains(statusLine(frame(m)), "read-only (--readonly)") {
			t.Fatalf("%s under read-only:\n%s", k, frame(m))
		}
		m, cmd = press(t, m, "y")
		if cmd != nil {
			t.Fatalf("y after %s under read-only returned a command", k)
		}
	}
	m, cmd := press(t, m, "enter") // the drill-in still reads
	m = do(t, m, cmd)
	m, cmd = press(t, m, "r")
	m, cmd2 := press(t, m, "y")
	if cmd != nil || cmd2 != nil {
		t.Fatal("r y in a drill-in under read-only returned a command")
	}
	if got := b.recorded(); !reflect.DeepEqual(got, []call{{Op: "offsets", Name: "billing-source", Task: -1}}) {
		t.Fatalf("backend calls under read-only: %+v", got)
	}
	m, _ = press(t, m, "?")
	f = frame(m)
	if body := f[:strings.Index(f, "read-only (--readonly): restart")]; strings.Contains(body, "restart") ||
		strings.Contains(body, "pause") || !strings.Contains(body, "no key changes the cluster") {
		t.Fatalf("full help under read-only:\n%s", f)
	}
}

func TestStaleSnapshotDropped(t *testing.T) {
	m, _ := started(t, 80, 24, Options{NoColor: true})
	m = send(m, SnapshotMsg{Seq: 1, Snapshot: before()}) // seq 2 is shown
	f := frame(m)
	if !strings.Contains(f, "Rebalances 3") || !strings.Contains(line(f, "   2 raft,worker"), "leader") {
		t.Fatalf("an older snapshot replaced a newer one:\n%s", f)
	}
	s := cluster()
	s.Connectors = s.Connectors[:3]
	m = send(m, SnapshotMsg{Seq: 3, Snapshot: s})
	if f := frame(m); !strings.Contains(f, "Connectors 3") {
		t.Fatalf("a newer snapshot was not shown:\n%s", f)
	}
}

func TestStatusUpdatesInPlace(t *testing.T) {
	m, _ := started(t, 80, 24, Options{NoColor: true})
	m = send(m, StatusMsg{Connector: "audit-sink", Task: 1, State: "FAILED", WorkerID: "kcd-3:8083", Trace: "boom"})
	f := frame(m)
	if !strings.Contains(f, "Connectors 8 · 3 failing") {
		t.Fatalf("failed task not counted:\n%s", f)
	}
	// Failures first, by name: audit-sink now leads; the selection stays.
	lines := strings.Split(f, "\n")
	i := strings.Index(f, "  NAME")
	if i < 0 || !strings.Contains(lines[strings.Count(f[:i], "\n")+1], "audit-sink") {
		t.Fatalf("audit-sink does not list first:\n%s", f)
	}
	if !strings.Contains(selectedRow(f), "billing-source") {
		t.Fatalf("selection moved: %q", selectedRow(f))
	}
	if got := rowOf(f, "  kcd-3:8083"); !strings.Contains(got, "6 run 1 restart 1 failed") {
		t.Fatalf("worker counts not moved: %q", got)
	}
	// A connector's own state, a new connector, a deleted one.
	m = send(m, StatusMsg{Connector: "clicks-sink", Task: -1, State: "RUNNING", WorkerID: "kcd-2:8083"})
	m = send(m, StatusMsg{Connector: "zz-new", Task: 0, State: "RUNNING", WorkerID: "kcd-1:8083"})
	m = send(m, StatusMsg{Connector: "orders-sink", Deleted: true})
	m, _ = press(t, m, "G")
	f = frame(m)
	if !strings.Contains(line(f, "clicks-sink"), "RUNNING") || !strings.Contains(f, "Connectors 8 · 2 failing · 8/8") ||
		!strings.Contains(selectedRow(f), "zz-new") || strings.Contains(f, "orders-sink") {
		t.Fatalf("after status changes:\n%s", f)
	}
	if got := rowOf(f, "  kcd-1:8083"); !strings.Contains(got, "7 run 1 failed") {
		t.Fatalf("new task not counted on its worker: %q", got)
	}
	// Before any snapshot, status is dropped.
	n := send(New(Options{NoColor: true, Now: clock}), StatusMsg{Connector: "x", Task: -1, State: "RUNNING"})
	if f := frame(n); !strings.Contains(f, "waiting for the first snapshot") {
		t.Fatalf("before a snapshot:\n%s", f)
	}
}

func TestSelectionKeptAcrossSnapshots(t *testing.T) {
	m, _ := started(t, 80, 24, Options{NoColor: true})
	m, _ = press(t, m, "j", "j", "j", "j") // billing, orders, a-connector, audit, clicks
	if got := selectedRow(frame(m)); !strings.Contains(got, "clicks-sink") {
		t.Fatalf("selected %q", got)
	}
	s := cluster()
	s.Connectors[4].State = "FAILED" // inventory-cdc fails: it lists above clicks-sink now
	m = send(m, SnapshotMsg{Seq: 3, Snapshot: s})
	if got := selectedRow(frame(m)); !strings.Contains(got, "clicks-sink") {
		t.Fatalf("after a snapshot selected %q", got)
	}
}

func TestTooSmall(t *testing.T) {
	for _, sz := range [][2]int{{79, 24}, {80, 23}, {40, 10}, {200, 12}} {
		m, _ := started(t, sz[0], sz[1], Options{NoColor: true})
		f := frame(m)
		if strings.Contains(f, "\n") || !strings.Contains(f, "needs at least 80x24") && sz[0] >= 60 {
			t.Errorf("%v: %q", sz, f)
		}
		checkShape(t, f, sz[0], 1)
	}
	m, _ := started(t, 80, 24, Options{NoColor: true})
	if f := frame(m); strings.Contains(f, "too small") {
		t.Errorf("80x24 is too small: %q", f)
	}
}

// TestLongListsScroll: 100 connectors at 80x24 scroll with the selection
// and the frame keeps its size.
func TestLongListsScroll(t *testing.T) {
	m, _ := started(t, 80, 24, Options{NoColor: true})
	s := cluster()
	for i := range 100 {
		s.Connectors = append(s.Connectors, Connector{Name: fmt.Sprintf("zz-bulk-%03d", i), State: "RUNNING", RecordsPerSec: -1, SinkLag: -1})
	}
	m = send(m, SnapshotMsg{Seq: 3, Snapshot: s})
	m, _ = press(t, m, "G")
	f := frame(m)
	checkShape(t, f, 80, 24)
	if !strings.Contains(selectedRow(f), "bulk-099") || strings.Contains(f, "billing-source") || !strings.Contains(f, "108/108") {
		t.Fatalf("after G:\n%s", f)
	}
	m, _ = press(t, m, "pgup")
	if got := selectedRow(frame(m)); !strings.Contains(got, "bulk-093") {
		t.Fatalf("after pgup selected %q", got)
	}
	m, _ = press(t, m, "g")
	f = frame(m)
	if !strings.Contains(selectedRow(f), "billing-source") || strings.Contains(f, "bulk-099") {
		t.Fatalf("after g:\n%s", f)
	}
	m, _ = press(t, m, "pgdown", "down", "down")
	if got := selectedRow(frame(m)); !strings.Contains(got, "bulk-000") {
		t.Fatalf("after pgdown down selected %q", got)
	}
	checkShape(t, frame(m), 80, 24)
	// A smaller terminal keeps the selection on screen.
	m = send(m, tea.WindowSizeMsg{Width: 160, Height: 48})
	m, _ = press(t, m, "G")
	m = send(m, tea.WindowSizeMsg{Width: 80, Height: 24})
	if f := frame(m); !strings.Contains(selectedRow(f), "zz-bulk-099") {
		t.Fatalf("after shrinking:\n%s", f)
	}
}

func TestLeaderFlash(t *testing.T) {
	cur := now
	m, _ := started(t, 80, 24, Options{NoColor: true, Now: func() time.Time { return cur }})
	if got := line(frame(m), "cluster "); !strings.Contains(got, "NEW LEADER 2 (was 1) term 7") {
		t.Fatalf("no flash after the leader moved between polls: %q", got)
	}
	cur = cur.Add(flashFor + time.Second)
	m = send(m, flashEndMsg{})
	if got := line(frame(m), "cluster "); strings.Contains(got, "NEW LEADER") || !strings.Contains(got, "leader 2 term 7") {
		t.Fatalf("flash did not end: %q", got)
	}
	next, cmd := m.Update(LeaderMsg{Leader: 3, Term: 8})
	m = next.(Model)
	if cmd == nil {
		t.Fatal("a leader change schedules no end of its flash")
	}
	f := frame(m)
	if got := line(f, "cluster "); !strings.Contains(got, "NEW LEADER 3 (was 2) term 8") {
		t.Fatalf("LeaderMsg did not flash: %q", got)
	}
	if !strings.Contains(line(f, "    3 raft,worker"), "leader") || strings.Contains(line(f, "    2 raft,worker"), "leader") {
		t.Fatalf("members do not mark the new leader:\n%s", f)
	}
	// A poll that saw the old term does not bring the old leader back.
	m = send(m, SnapshotMsg{Seq: 3, Snapshot: cluster()})
	if got := line(frame(m), "cluster "); !strings.Contains(got, "3 (was 2) term 8") {
		t.Fatalf("an older term's leader came back: %q", got)
	}
	cur = cur.Add(flashFor + time.Second)
	m = send(m, LeaderMsg{Leader: 0, Term: 9})
	if got := line(frame(m), "cluster "); !strings.Contains(got, "NO LEADER term 9") {
		t.Fatalf("no leader: %q", got)
	}
}

func TestFeedState(t *testing.T) {
	m, _ := started(t, 80, 24, Options{NoColor: true})
	for _, c := range []struct {
		msg  FeedStateMsg
		want string
	}{
		{FeedStateMsg{Live: true, Server: "http://a:1"}, "live a:1"},
		{FeedStateMsg{Polling: true, Server: "http://b:2"}, "polling b:2 (events down)"},
		{FeedStateMsg{Err: errBoom, Server: "http://c:3"}, "feed error: boom (last tried c:3)"},
	} {
		m = send(m, c.msg)
		if got := line(frame(m), "voters up"); !strings.Contains(got, c.want) {
			t.Errorf("%+v: header %q", c.msg, got)
		}
	}
}

func TestQuit(t *testing.T) {
	m, _ := started(t, 80, 24, Options{NoColor: true})
	for _, keys := range [][]string{{"q"}, {"ctrl+c"}, {"/", "ctrl+c"}, {"?", "q"}} {
		_, cmd := press(t, m, keys...)
		if cmd == nil {
			t.Fatalf("%v: no command", keys)
		}
		if _, ok := cmd().(tea.QuitMsg); !ok {
			t.Fatalf("%v does not quit", keys)
		}
	}
	// q while typing a filter is a letter.
	m, cmd := press(t, m, "/", "q")
	if cmd != nil || m.filter != "q" {
		t.Fatalf("q in the filter: %v %q", cmd, m.filter)
	}
}

// TestServerTextCannotDriveTheTerminal: control characters in names and
// traces from the server never reach the terminal.
func TestServerTextCannotDriveTheTerminal(t *testing.T) {
	m, _ := started(t, 80, 24, Options{NoColor: true})
	s := cluster()
	s.Connectors[0].Name = "evil\x1b[2J\x07name"
	s.Connectors[2].Tasks[2].Trace = "bad\x1b]0;title\x07\n\tat x"
	m = send(m, SnapshotMsg{Seq: 3, Snapshot: s})
	m, cmd := press(t, m, "enter")
	m = do(t, m, cmd)
	for _, f := range []string{frame(m), frame(send(m, keyMsg("esc")))} {
		if strings.ContainsAny(f, "\x1b\x07") {
			t.Fatalf("control characters reached the frame: %q", f)
		}
	}
}

// TestFramesFitEverySize: at every size from 80x24 up each view is exactly
// the terminal's height and no line is wider than it, with wide characters
// and long ids in the data.
func TestFramesFitEverySize(t *testing.T) {
	s := cluster()
	s.Connectors = append(s.Connectors, Connector{Name: "数据连接器-一个很长很长的名字-用来测试截断", State: "RUNNING", WorkerID: "worker-with-a-very-long-identifier:18083",
		Tasks: []Task{{ID: 0, State: "FAILED", WorkerID: "worker-with-a-very-long-identifier:18083", Trace: strings.Repeat("超长的错误信息 ", 40)}}, RecordsPerSec: -1, SinkLag: -1})
	s.Workers[3].Tasks["STOPPED"] = 12345
	s.Workers[3].Tasks["UNASSIGNED"] = 678
	s.Workers[3].Tasks["RESTARTING"] = 9
	s.Cluster.Alarms = []string{"NOSPACE", "CORRUPT"}
	for w := 80; w <= 200; w += 7 {
		for _, h := range []int{24, 31, 48} {
			m, _ := started(t, w, h, Options{NoColor: true})
			m = send(m, SnapshotMsg{Seq: 3, Snapshot: s})
			checkShape(t, frame(m), w, h)
			d, _ := press(t, m, "enter")
			checkShape(t, frame(d), w, h)
			d, _ = press(t, m, "j", "j", "enter") // the wide-character connector, failing
			if f := frame(d); !strings.Contains(f, "Connector 数据") {
				t.Fatalf("not the wide connector:\n%s", f)
			}
			checkShape(t, frame(d), w, h)
			d, _ = press(t, m, "?")
			checkShape(t, frame(d), w, h)
			if t.Failed() {
				t.Fatalf("at %dx%d", w, h)
			}
		}
	}
}

func TestHealth(t *testing.T) {
	m, _ := started(t, 80, 24, Options{NoColor: true})
	for _, c := range []struct {
		up, quorum int
		ok         bool
		alarms     []string
		want       string
	}{
		{3, 2, true, nil, "healthy 3/3 voters up, quorum 2 · no alarms"},
		{2, 2, true, nil, "degraded 2/3 voters up, quorum 2 · no alarms"},
		{1, 2, false, []string{"NOSPACE"}, "NO QUORUM 1/3 voters up, quorum 2 · alarms NOSPACE"},
	} {
		s := cluster()
		s.Cluster.VotersUp, s.Cluster.Quorum, s.Cluster.QuorumOK, s.Cluster.Alarms = c.up, c.quorum, c.ok, c.alarms
		m = send(m, SnapshotMsg{Seq: m.seq + 1, Snapshot: s})
		if got := line(frame(m), "voters up"); !strings.HasPrefix(got, c.want) {
			t.Errorf("header %q, want it to start with %q", got, c.want)
		}
	}
}
