package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kcd-project/kcd/api"
)

// connectorsWide is the header of get connectors -o wide.
var connectorsWide = regexp.MustCompile(`(?m)^NAME\s+TYPE\s+STATE\s+TASKS\s+WORKER\s+CLASS\s+TOPICS$`)

// -o wide of the commands that change something prints the table's lines,
// then what the change left in the wide table of the matching get; -o name
// prints kind/name lines.
func TestWideAndNameOfChangeCommands(t *testing.T) {
	url := startNode(t)
	s := []string{"--server", url}
	datagen(t, url, "orders-a")
	datagen(t, url, "orders-b")
	file := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(file, []byte("name: orders-c\nconnector.class: Datagen\ntopic: orders-c\ntasks.max: '1'\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	worker := waitState(t, url, "orders-a", "RUNNING").Connector.WorkerID

	for _, tc := range []struct {
		args  []string
		table string         // the table form's output (first line of the wide one)
		after *regexp.Regexp // what wide adds
		name  string         // -o name
	}{
		{[]string{"pause", "connector", "-e", "^orders-[ab]$"}, "connector/orders-a paused\nconnector/orders-b paused\n", connectorsWide, "connector/orders-a\nconnector/orders-b\n"},
		{[]string{"resume", "connector", "orders-a"}, "connector/orders-a resumed\n", connectorsWide, "connector/orders-a\n"},
		{[]string{"restart", "connector", "orders-a"}, "connector/orders-a restarted\n", connectorsWide, "connector/orders-a\n"},
		{[]string{"patch", "connector", "orders-b", "-s", "rate=3"}, "connector/orders-b patched\n", connectorsWide, "connector/orders-b\n"},
		{[]string{"restart", "task", "orders-a/0"}, "task/orders-a/0 restarted\n", regexp.MustCompile(`(?m)^CONNECTOR\s+TASK\s+STATE\s+WORKER\s+TRACE\norders-a\s+0\s+`), "task/orders-a/0\n"},
		{[]string{"worker", "weight", worker, "2"}, "worker/" + worker + " weight set to 2\n", regexp.MustCompile(`(?m)^ID\s+STATE.*REST-URL\s+GONE\n` + regexp.QuoteMeta(worker) + `\s+alive\s+\d+\s+2\s`), "worker/" + worker + "\n"},
		{[]string{"worker", "undrain", worker}, "worker/" + worker + " undrained\n", regexp.MustCompile(`(?m)^ID\s+STATE.*REST-URL\s+GONE\n` + regexp.QuoteMeta(worker) + `\s+alive\s`), "worker/" + worker + "\n"},
		{[]string{"set", "logger", "rest", "DEBUG"}, "logger/rest set to DEBUG on this node\n", regexp.MustCompile(`(?m)^NAME\s+LEVEL\s+MODIFIED\s+MODIFIED-AT\nrest\s+DEBUG\s+\d+s\s+\d{4}-`), "logger/rest\n"},
		{[]string{"apply", "-f", file}, "connector/orders-c created\n", connectorsWide, "connector/orders-c\n"},
		{[]string{"delete", "connector", "orders-c"}, "connector/orders-c deleted\n", regexp.MustCompile(`(?m)^\(no connector left\)$`), "connector/orders-c\n"},
	} {
		code, out, errOut := kcctl(t, append(s, tc.args...)...)
		if code != 0 || out != tc.table {
			t.Errorf("%v: exit %d, %q, want %q (%s)", tc.args, code, out, tc.table, errOut)
		}
		if tc.args[0] == "apply" || tc.args[0] == "delete" {
			// Not idempotent: the wide run acts on a connector anew.
			if tc.args[0] == "apply" {
				mustKcctl(t, append(s, "delete", "connector", "orders-c")...)
			} else {
				mustKcctl(t, append(s, "apply", "-f", file)...)
			}
		}
		code, out, errOut = kcctl(t, append(append(s, tc.args...), "-o", "wide")...)
		if code != 0 || !strings.HasPrefix(out, tc.table) || !tc.after.MatchString(out[len(tc.table):]) {
			t.Errorf("%v -o wide: exit %d, want %q then %s:\n%s%s", tc.args, code, tc.table, tc.after, out, errOut)
		}
		if tc.args[0] == "delete" {
			mustKcctl(t, append(s, "apply", "-f", file)...)
		}
		if tc.args[0] == "apply" {
			mustKcctl(t, append(s, "delete", "connector", "orders-c")...)
		}
		code, out, errOut = kcctl(t, append(append(s, tc.args...), "-o", "name")...)
		if code != 0 || out != tc.name {
			t.Errorf("%v -o name: exit %d, %q, want %q (%s)", tc.args, code, out, tc.name, errOut)
		}
	}

	// get offsets -o wide says whose offsets they are.
	mustKcctl(t, append(s, "stop", "connector", "orders-a")...)
	waitOffsetsChangeable(t, url, "orders-a")
	table := mustKcctl(t, append(s, "get", "offsets", "orders-a")...)
	wide := mustKcctl(t, append(s, "get", "offsets", "orders-a", "-o", "wide")...)
	if table == wide || !regexp.MustCompile(`(?m)^PARTITION\s+OFFSET\s+KIND\n\{"task":\d\}\s+\{"seq":\d+\}\s+source$`).MatchString(wide) {
		t.Errorf("get offsets -o wide:\n%s\ntable:\n%s", wide, table)
	}
}

// store status -o wide adds full times, the switch's phase and warnings.
func TestStoreStatusWide(t *testing.T) {
	sw := runningSwitch(api.PhaseDone, 10)
	sw.StartedAt = time.Date(2026, 12, 4, 3, 0, 0, 0, time.UTC)
	sw.State, sw.EndedAt, sw.Warnings = api.SwitchDone, sw.StartedAt.Add(1500*time.Millisecond), []string{"the target held 3 keys (--force)"}
	st := switchStatus("mysql", sw)
	st.Since = sw.EndedAt
	url := (&fakeStore{statuses: []api.StoreStatus{st}}).start(t)
	table := ok(t, url, "store", "status")
	wide := ok(t, url, "store", "status", "-o", "wide")
	for _, want := range []string{"  Phase:", "  Started:", "  Ended:", "  Warning:      the target held 3 keys (--force)\n", "Checked at:"} {
		if !strings.Contains(wide, want) {
			t.Errorf("wide lacks %q:\n%s", want, wide)
		}
		if strings.Contains(table, want) {
			t.Errorf("table has %q:\n%s", want, table)
		}
	}
	if !regexp.MustCompile(`(?m)^  Ended:\s+\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`).MatchString(wide) {
		t.Errorf("end time:\n%s", wide)
	}
}

// store switch -o wide adds the store as store status -o wide shows it
// after the switch (a dry run, one started with --no-wait, one followed to
// its end).
func TestStoreSwitchWide(t *testing.T) {
	done := runningSwitch(api.PhaseDone, 1000)
	done.State, done.StartedAt = api.SwitchDone, time.Date(2026, 12, 4, 3, 0, 0, 0, time.UTC)
	done.EndedAt = done.StartedAt.Add(2 * time.Second)
	f := &fakeStore{
		switchAnswer: api.StoreSwitch{ID: "dry", From: "raft", To: "mysql", State: api.SwitchDryRun, Total: 42},
		statuses:     []api.StoreStatus{switchStatus("mysql", done)},
	}
	url := f.start(t)
	for _, args := range [][]string{{"--dry-run"}, {"--no-wait"}, nil} {
		if args != nil && args[0] == "--no-wait" {
			f.switchAnswer = runningSwitch(api.PhaseCheck, 0)
		}
		if args == nil {
			f.switchAnswer = done
		}
		base := append([]string{"--server", url, "store", "switch", "--to", "mysql"}, args...)
		table := ok(t, url, base[2:]...)
		wide := ok(t, url, append(base[2:], "-o", "wide")...)
		if !strings.HasPrefix(wide, table) || !regexp.MustCompile(`(?m)^Backend:\s+mysql\n(.|\n)*^  Ended:\s+2026-12-04T03:00:02\.000Z$`).MatchString(wide[len(table):]) {
			t.Errorf("%v -o wide: want %q, then the store's wide status:\n%s", args, table, wide)
		}
	}
}
