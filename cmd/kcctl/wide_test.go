package main

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kcd-project/kcd/api"
	"github.com/kcd-project/kcd/daemon"
	"github.com/kcd-project/kcd/daemon/config"
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
		table string         // the table form's output (first line of the wide one); "": as printed
		after *regexp.Regexp // what wide adds
		name  string         // -o name
	}{
		{[]string{"pause", "connector", "-e", "^orders-[ab]$"}, "connector/orders-a paused\nconnector/orders-b paused\n", connectorsWide, "connector/orders-a\nconnector/orders-b\n"},
		{[]string{"resume", "connector", "orders-a"}, "connector/orders-a resumed\n", connectorsWide, "connector/orders-a\n"},
		{[]string{"restart", "connector", "orders-a"}, "connector/orders-a restarted\n", connectorsWide, "connector/orders-a\n"},
		{[]string{"patch", "connector", "orders-b", "-s", "rate=3"}, "connector/orders-b patched\n", connectorsWide, "connector/orders-b\n"},
		{[]string{"restart", "task", "orders-a/0"}, "task/orders-a/0 restarted\n", regexp.MustCompile(`(?m)^CONNECTOR\s+TASK\s+STATE\s+WORKER\s+TRACE\norders-a\s+0\s+`), "task/orders-a/0\n"},
		{[]string{"worker", "weight", worker, "2"}, "worker/" + worker + " weight set to 2\n", regexp.MustCompile(`(?m)^ID\s+STATE.*REST-URL\s+GONE\n` + regexp.QuoteMeta(worker) + `\s+alive\s+\d+\s+2\s`), "worker/" + worker + "\n"},
		{[]string{"worker", "drain", worker, "--dry-run"}, "", regexp.MustCompile(`(?m)^worker/` + regexp.QuoteMeta(worker) + ` not changed \(dry run\)\nID\s+STATE.*REST-URL\s+GONE\n` + regexp.QuoteMeta(worker) + `\s+alive\s`), "worker/" + worker + "\n"},
		{[]string{"worker", "undrain", worker}, "worker/" + worker + " undrained\n", regexp.MustCompile(`(?m)^ID\s+STATE.*REST-URL\s+GONE\n` + regexp.QuoteMeta(worker) + `\s+alive\s`), "worker/" + worker + "\n"},
		{[]string{"set", "logger", "rest", "DEBUG"}, "logger/rest set to DEBUG on this node\n", regexp.MustCompile(`(?m)^NAME\s+LEVEL\s+MODIFIED\s+MODIFIED-AT\nrest\s+DEBUG\s+\d+s\s+\d{4}-`), "logger/rest\n"},
		{[]string{"apply", "-f", file}, "connector/orders-c created\n", connectorsWide, "connector/orders-c\n"},
		{[]string{"delete", "connector", "orders-c"}, "connector/orders-c deleted\n", regexp.MustCompile(`(?m)^\(no connector left\)$`), "connector/orders-c\n"},
	} {
		code, out, errOut := kcctl(t, append(s, tc.args...)...)
		if tc.table == "" && !tc.after.MatchString(out) { // drain: its table varies
			tc.table = out
		}
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
		rest, prefixed := strings.CutPrefix(out, tc.table)
		if tc.args[1] == "drain" { // its moves table gets a column too
			rest, prefixed = out, out != tc.table
		}
		if code != 0 || !prefixed || !tc.after.MatchString(rest) {
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

// cluster transfer-leader, remove and add -o wide print the members after
// the change, in cluster status -o wide's table.
func TestClusterChangesWide(t *testing.T) {
	var urls []string
	var nodes []*daemon.Node
	for id := uint64(1); id <= 2; id++ {
		cfg := config.Default()
		cfg.NodeID = id
		cfg.DataDir = t.TempDir()
		cfg.RESTAddr = "127.0.0.1:0"
		cfg.DevKafka = true
		cfg.DevKafkaPort = 0
		cfg.PeerAddr = "127.0.0.1:0"
		cfg.JoinToken = "kcctl-test-join-token"
		if id == 2 {
			cfg.Join = urls[0]
		}
		n := daemon.New(cfg, slog.New(slog.DiscardHandler))
		if err := n.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { n.Close() })
		nodes = append(nodes, n)
		urls = append(urls, n.RESTURL())
	}
	waitUntil(t, func() (bool, string) {
		st := nodes[0].Raft().Status()
		return len(st.Members) == 2 && st.Members[1].Raft == "voter", fmt.Sprintf("node 2 is no voter: %+v", st.Members)
	})
	members := regexp.MustCompile(`(?m)^ID\s+RAFT\s.*PEER\s+LAST-CONTACT$`)

	// A transfer can time out while node 2 catches up: try again until
	// one takes.
	var out string
	waitUntil(t, func() (bool, string) {
		code, o, errOut := kcctl(t, "--server", urls[0], "cluster", "transfer-leader", "--to", "2", "-o", "wide")
		out = o
		return code == 0, fmt.Sprintf("transfer-leader: exit %d: %s", code, errOut)
	})
	if !strings.HasPrefix(out, "member/2 is now the leader\n") || !members.MatchString(out) || !regexp.MustCompile(`(?m)^1\s`).MatchString(out) {
		t.Errorf("transfer-leader -o wide:\n%s", out)
	}
	out = ok(t, urls[1], "cluster", "remove", "1", "-o", "wide")
	if !strings.HasPrefix(out, "member/1 removed\n") || !members.MatchString(out) || regexp.MustCompile(`(?m)^1\s`).MatchString(out) || !regexp.MustCompile(`(?m)^2\s`).MatchString(out) {
		t.Errorf("remove -o wide:\n%s", out)
	}
	// A learner that never starts: added, and listed.
	out = ok(t, urls[1], "cluster", "add", "3", "--peer-url", "http://127.0.0.1:1", "--join-token", "kcctl-test-join-token", "-o", "wide")
	if !strings.HasPrefix(out, "member/3 added as a learner\n") || !members.MatchString(out) || !regexp.MustCompile(`(?m)^3\s+learner\s`).MatchString(out) {
		t.Errorf("add -o wide:\n%s", out)
	}
}
