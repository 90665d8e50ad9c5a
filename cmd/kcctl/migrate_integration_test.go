package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcd-project/kcd/api"
	"github.com/kcd-project/kcd/daemon"
	"github.com/kcd-project/kcd/daemon/config"
	"github.com/kcd-project/kcd/internal/testenv"
	"github.com/kcd-project/kcd/migrate"
)

const (
	fileSource = "org.apache.kafka.connect.file.FileStreamSourceConnector"
	fileSink   = "org.apache.kafka.connect.file.FileStreamSinkConnector"
	strConv    = "org.apache.kafka.connect.storage.StringConverter"
	// A transform the test worker has (Debezium's, on its plugin path) and
	// kcd, without a connector host, has not: kcd runs Kafka Connect's own.
	missingTr = "io.debezium.transforms.ExtractNewRecordState"
	jsonConv  = "org.apache.kafka.connect.json.JsonConverter"
)

// TestIntegrationMigrateFromKafka drives the test environment's real Kafka
// Connect worker into every state a migration meets — a FileStream source
// with committed offsets, a sink that has consumed (its group's offsets), a
// paused, a stopped and a deleted connector, one whose task count changed,
// one with a transform kcd lacks and one with transforms kcd has — then
// runs kcctl migrate from-kafka against a kcd node on the same Kafka: dry
// runs change nothing and warn about the connectors still running there;
// a run that kcd refuses (--overwrite of a connector running in kcd) stops
// nothing; the import stops the connectors on Kafka Connect (--stop-source)
// while their source file grows, and brings them into kcd with the same
// configs, target states and offsets as the worker's own GET
// /connectors/{name}/offsets after the stop; kcd's source continues where
// the stop committed and its sink at the group's offset (no line lost,
// none repeated beyond what Kafka Connect had not committed); the
// connector with transforms runs in kcd with the same output; re-running
// the import changes nothing.
func TestIntegrationMigrateFromKafka(t *testing.T) {
	brokers := testenv.Require(t, testenv.Kafka)
	kc := restAPI{t: t, base: testenv.Require(t, testenv.ConnectURL)}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()

	adm := kafkaAdmin(t, brokers)

	prefix := fmt.Sprintf("kcd-mig-%08x-", rand.Uint32())
	name := func(s string) string { return prefix + s }
	var (
		src, sink, paused, stopped = name("src"), name("sink"), name("paused"), name("stopped")
		deleted, retasked, smt     = name("deleted"), name("retasked"), name("smt")
		smtOK                      = name("smtok")
		lines, pausedTopic, other  = name("lines"), name("paused"), name("other")
		deletedTopic, smtTopic     = name("deleted"), name("smt")
		smtOKTopic                 = name("smtok")
	)
	topics := []string{lines, pausedTopic, other, deletedTopic, smtTopic, smtOKTopic}
	if _, err := adm.CreateTopics(ctx, 1, 1, nil, topics...); err != nil {
		t.Fatalf("create topics: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_, _ = adm.DeleteTopics(ctx, topics...)
		groups := []string{"connect-" + sink, "connect-" + stopped, "connect-" + retasked}
		_, _ = adm.DeleteGroups(ctx, groups...)
	})

	// The worker runs as another process: it reads and writes these files.
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	in, sinkOut, stoppedOut := filepath.Join(dir, "in.txt"), filepath.Join(dir, "sink.txt"), filepath.Join(dir, "stopped.txt")
	writeLines(t, in, 1, 10)
	pausedIn, deletedIn, empty := filepath.Join(dir, "paused.txt"), filepath.Join(dir, "deleted.txt"), filepath.Join(dir, "empty.txt")
	writeLines(t, pausedIn, 1, 3)
	writeLines(t, deletedIn, 1, 2)
	writeLines(t, empty, 1, 0)
	smtIn := filepath.Join(dir, "smtok.txt")
	writeLines(t, smtIn, 1, 3)

	conv := map[string]string{"key.converter": strConv, "value.converter": strConv}
	with := func(m map[string]string) map[string]string {
		for k, v := range conv {
			m[k] = v
		}
		return m
	}
	create := func(n string, cfg map[string]string) {
		t.Helper()
		if code, body := kc.call("POST", "/connectors", map[string]any{"name": n, "config": cfg}, nil); code != http.StatusCreated {
			t.Fatalf("create %s on Kafka Connect: %d %s", n, code, body)
		}
		t.Cleanup(func() { kc.try("DELETE", "/connectors/"+n) })
	}
	create(src, with(map[string]string{"connector.class": fileSource, "tasks.max": "1", "file": in, "topic": lines}))
	create(sink, with(map[string]string{"connector.class": fileSink, "tasks.max": "1", "file": sinkOut, "topics": lines}))
	create(stopped, with(map[string]string{"connector.class": fileSink, "tasks.max": "1", "file": stoppedOut, "topics": lines}))
	create(paused, with(map[string]string{"connector.class": fileSource, "tasks.max": "1", "file": pausedIn, "topic": pausedTopic}))
	create(deleted, with(map[string]string{"connector.class": fileSource, "tasks.max": "1", "file": deletedIn, "topic": deletedTopic}))
	retaskedCfg := with(map[string]string{"connector.class": fileSink, "tasks.max": "2", "file": filepath.Join(dir, "retasked.txt"), "topics": other})
	create(retasked, retaskedCfg)
	create(smt, with(map[string]string{"connector.class": fileSource, "tasks.max": "1", "file": empty, "topic": smtTopic,
		"transforms": "ins", "transforms.ins.type": missingTr}))
	// Transforms kcd has: each line becomes {"line":…,"origin":"kc"}.
	smtOKCfg := with(map[string]string{"connector.class": fileSource, "tasks.max": "1", "file": smtIn, "topic": smtOKTopic})
	maps.Copy(smtOKCfg, map[string]string{
		"transforms":                  "hoist,ins",
		"transforms.hoist.type":       "org.apache.kafka.connect.transforms.HoistField$Value",
		"transforms.hoist.field":      "line",
		"transforms.ins.type":         "org.apache.kafka.connect.transforms.InsertField$Value",
		"transforms.ins.static.field": "origin",
		"transforms.ins.static.value": "kc",
	})
	smtOKCfg["value.converter"], smtOKCfg["value.converter.schemas.enable"] = jsonConv, "false"
	create(smtOK, smtOKCfg)

	// Wait for each to reach the state the migration is to find.
	waitFor(ctx, t, src+": offsets cover 10 lines", func() (bool, any) {
		o := kc.offsets(src)
		return positionIs(o, in, fileSize(t, in)), o
	})
	for _, n := range []string{sink, stopped} {
		waitFor(ctx, t, n+": group at offset 10", func() (bool, any) {
			o := kc.offsets(n)
			return sinkOffsetIs(o, lines, 10), o
		})
	}
	waitFor(ctx, t, sink+": wrote 10 lines", func() (bool, any) {
		got := readLines(sinkOut)
		return slices.Equal(got, lineRange(1, 10)), got
	})
	waitFor(ctx, t, smtOK+": offsets cover 3 lines", func() (bool, any) {
		o := kc.offsets(smtOK)
		return positionIs(o, smtIn, fileSize(t, smtIn)), o
	})
	waitFor(ctx, t, paused+": offsets cover 3 lines", func() (bool, any) {
		o := kc.offsets(paused)
		return positionIs(o, pausedIn, fileSize(t, pausedIn)), o
	})
	waitFor(ctx, t, deleted+": offsets cover 2 lines", func() (bool, any) {
		o := kc.offsets(deleted)
		return positionIs(o, deletedIn, fileSize(t, deletedIn)), o
	})
	waitFor(ctx, t, retasked+": 2 tasks", func() (bool, any) {
		var tasks []any
		kc.call("GET", "/connectors/"+retasked+"/tasks", nil, &tasks)
		return len(tasks) == 2, tasks
	})
	kc.must("PUT", "/connectors/"+paused+"/pause", nil)
	kc.must("PUT", "/connectors/"+stopped+"/stop", nil)
	kc.must("DELETE", "/connectors/"+deleted, nil)
	retaskedCfg["tasks.max"] = "1"
	kc.must("PUT", "/connectors/"+retasked+"/config", retaskedCfg)
	waitFor(ctx, t, retasked+": 1 task", func() (bool, any) {
		var tasks []any
		kc.call("GET", "/connectors/"+retasked+"/tasks", nil, &tasks)
		return len(tasks) == 1, tasks
	})
	waitFor(ctx, t, "Kafka Connect: every connector in its state", func() (bool, any) {
		st := kc.statuses(prefix)
		want := map[string]string{src: "RUNNING", sink: "RUNNING", retasked: "RUNNING", smt: "RUNNING", smtOK: "RUNNING", paused: "PAUSED", stopped: "STOPPED"}
		return reflect.DeepEqual(st, want), st
	})
	names := []string{paused, retasked, sink, smt, smtOK, src, stopped} // sorted
	running := []string{retasked, sink, smt, smtOK, src}                // sorted
	before := map[string]offsets{}
	for _, n := range names {
		before[n] = kc.offsets(n)
	}

	kcdURL := startNodeOnKafka(t, brokers)
	kcd := restAPI{t: t, base: kcdURL}
	args := []string{"--server", kcdURL, "migrate", "from-kafka", "--bootstrap-servers", brokers,
		"--include", "^" + prefix, "--connect-url", kc.base, "--stop-source"}

	// The dry run: the plan, and nothing changes on either side; the
	// connectors still running on Kafka Connect are named.
	code, out, errOut := kcctl(t, append(args, "--dry-run", "-o", "json")...)
	if code != 0 {
		t.Fatalf("dry run: exit %d\n%s\n%s", code, out, errOut)
	}
	warning := fmt.Sprintf("Warning: %d connector(s) still run on Kafka Connect (%s)", len(running), strings.Join(running, ", "))
	if !strings.Contains(errOut, warning) || !strings.Contains(errOut, "--stop-source stops them when run without --dry-run") ||
		strings.Contains(errOut, "or pass --stop-source") || strings.Contains(errOut, "stopping") {
		t.Errorf("dry run with --stop-source: stderr %q, want %q and what --stop-source will do", errOut, warning)
	}
	var plan migrate.Plan
	if err := json.Unmarshal([]byte(out), &plan); err != nil {
		t.Fatalf("dry run: %v\n%s", err, out)
	}
	type row struct {
		Type, From, Target, Action string
		Tasks, Source, Sink        int
	}
	got := map[string]row{}
	for _, pc := range plan.Connectors {
		got[pc.Name] = row{pc.Type, pc.From, pc.Target, pc.Action, pc.Tasks, pc.SourceOffsets, pc.SinkOffsets}
	}
	want := map[string]row{
		src:      {"source", "STARTED", "STARTED", api.ImportCreate, 1, 1, 0},
		sink:     {"sink", "STARTED", "STARTED", api.ImportCreate, 1, 0, 1},
		paused:   {"source", "PAUSED", "PAUSED", api.ImportCreate, 1, 1, 0},
		stopped:  {"sink", "STOPPED", "STOPPED", api.ImportCreate, 0, 0, 1},
		retasked: {"sink", "STARTED", "STARTED", api.ImportCreate, 1, 0, 0},
		smt:      {"source", "STARTED", "STOPPED", api.ImportCreate, 0, 0, 0},
		smtOK:    {"source", "STARTED", "STARTED", api.ImportCreate, 1, 1, 0},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("plan:\n got %+v\nwant %+v", got, want)
	}
	for _, pc := range plan.Connectors {
		missing := strings.Join(pc.Missing, "; ")
		if pc.Name == smt && (!strings.Contains(missing, missingTr) || !strings.Contains(missing, "(ins)")) {
			t.Errorf("plan of %s does not name its transform: missing %q, notes %q", smt, pc.Missing, pc.Notes)
		}
		if pc.Name != smt && missing != "" {
			t.Errorf("plan of %s: kcd lacks %q", pc.Name, missing)
		}
	}
	if plan.Orphans[deleted] != 1 {
		t.Errorf("plan: orphan offsets %v, want 1 of %s", plan.Orphans, deleted)
	}
	if cs := kcd.connectors(); len(cs) != 0 {
		t.Fatalf("the dry run created connectors in kcd: %v", cs)
	}
	allRunning := func(what string) {
		t.Helper()
		st := kc.statuses(prefix)
		for _, n := range running {
			if st[n] != "RUNNING" {
				t.Fatalf("%s stopped connectors on Kafka Connect: %v", what, st)
			}
		}
	}
	allRunning("the dry run")

	// Without --stop-source, a warning names them and nothing is stopped.
	noStop := slices.DeleteFunc(slices.Clone(args), func(a string) bool { return a == "--stop-source" })
	code, out, errOut = kcctl(t, append(noStop, "--dry-run")...)
	if code != 0 {
		t.Fatalf("dry run without --stop-source: exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(errOut, warning) || !strings.Contains(errOut, "Stop them first, or pass --stop-source.") || strings.Contains(errOut, "stopping") {
		t.Errorf("dry run without --stop-source: stderr %q, want %q and the advice to stop them", errOut, warning)
	}
	allRunning("a run without --stop-source")

	// A run that kcd refuses (--overwrite of a connector that runs in
	// kcd) stops nothing on Kafka Connect, --stop-source or not. The one
	// in kcd consumes an empty topic: it leaves no offsets behind.
	kcd.must("POST", "/connectors", map[string]any{"name": retasked, "config": with(map[string]string{
		"connector.class": fileSink, "tasks.max": "1", "file": filepath.Join(dir, "blocker.txt"), "topics": other})})
	waitFor(ctx, t, "kcd: "+retasked+" runs", func() (bool, any) {
		st := kcd.statuses(prefix)
		return st[retasked] == "RUNNING", st
	})
	code, out, errOut = kcctl(t, append(args, "--overwrite")...)
	if code == 0 || !strings.Contains(out+errOut, "still run in kcd: "+retasked) {
		t.Fatalf("--overwrite of a connector running in kcd: exit %d, want it refused\n%s\n%s", code, out, errOut)
	}
	if strings.Contains(errOut, "stopping") {
		t.Errorf("the refused run stopped connectors: %s", errOut)
	}
	allRunning("the refused run")
	kcd.must("DELETE", "/connectors/"+retasked, nil)
	waitFor(ctx, t, "kcd: "+retasked+" deleted", func() (bool, any) {
		cs := kcd.connectors()
		return len(cs) == 0, cs
	})

	// The import, while the source file grows: the stop commits what
	// Kafka Connect read of it, and kcd continues from there.
	appendLines(t, in, 11, 15)
	code, out, errOut = kcctl(t, args...)
	if code != 0 {
		t.Fatalf("import: exit %d\n%s\n%s", code, out, errOut)
	}
	t.Logf("import:\n%s%s", out, errOut)
	if want := fmt.Sprintf("stopping %d connector(s) on Kafka Connect: %s", len(running), strings.Join(running, ", ")); !strings.Contains(errOut, want) || strings.Contains(errOut, "Warning") {
		t.Errorf("import: stderr %q, want %q and no warning", errOut, want)
	}
	// --stop-source stopped the running ones on Kafka Connect, which
	// committed their offsets.
	if st, want := kc.statuses(prefix), map[string]string{src: "STOPPED", sink: "STOPPED", retasked: "STOPPED", smt: "STOPPED", smtOK: "STOPPED", paused: "PAUSED", stopped: "STOPPED"}; !reflect.DeepEqual(st, want) {
		t.Errorf("Kafka Connect after --stop-source: %v, want %v", st, want)
	}
	after := map[string]offsets{}
	for _, n := range names {
		after[n] = kc.offsets(n)
		if n != src && n != sink && !reflect.DeepEqual(after[n], before[n]) {
			t.Errorf("%s: Kafka Connect's offsets moved while it stopped: %v, then %v", n, before[n], after[n])
		}
	}

	if got := kcd.connectors(); !slices.Equal(got, names) {
		t.Fatalf("kcd's connectors: %v, want %v", got, names)
	}
	for _, n := range names {
		var kcCfg, kcdCfg map[string]string
		kc.call("GET", "/connectors/"+n+"/config", nil, &kcCfg)
		kcd.call("GET", "/connectors/"+n+"/config", nil, &kcdCfg)
		if !reflect.DeepEqual(kcdCfg, kcCfg) {
			t.Errorf("%s: config in kcd %v, on Kafka Connect %v", n, kcdCfg, kcCfg)
		}
		// A connector running in kcd may be past what was imported at
		// once; where src and sink continue from is checked below.
		if o := kcd.offsets(n); !reflect.DeepEqual(o, after[n]) && !(slices.Contains(running, n) && notBehind(o, after[n])) {
			t.Errorf("%s: offsets in kcd %v, Kafka Connect's after the stop %v", n, o, after[n])
		}
	}
	wantStates := map[string]string{src: "RUNNING", sink: "RUNNING", retasked: "RUNNING", smtOK: "RUNNING", paused: "PAUSED", stopped: "STOPPED", smt: "STOPPED"}
	waitFor(ctx, t, "kcd: every connector in its state", func() (bool, any) {
		st := kcd.statuses(prefix)
		return reflect.DeepEqual(st, wantStates), st
	})
	var tasks []any
	kcd.call("GET", "/connectors/"+retasked+"/tasks", nil, &tasks)
	if len(tasks) != 1 {
		t.Errorf("%s: %d tasks in kcd, want 1: %v", retasked, len(tasks), tasks)
	}
	// The paused connector keeps the task configs it has on Kafka Connect
	// (the running ones lost theirs there to --stop-source: kcd makes them).
	var kcTasks, kcdTasks []struct {
		Config map[string]string `json:"config"`
	}
	kc.call("GET", "/connectors/"+paused+"/tasks", nil, &kcTasks)
	kcd.call("GET", "/connectors/"+paused+"/tasks", nil, &kcdTasks)
	if len(kcTasks) != 1 || !reflect.DeepEqual(kcdTasks, kcTasks) {
		t.Errorf("%s: task configs in kcd %v, on Kafka Connect %v", paused, kcdTasks, kcTasks)
	}

	// kcd's source continues after the last line whose offset Kafka
	// Connect committed (c): the topic holds lines 1 to p from Kafka
	// Connect (p >= c: it may have sent lines it did not commit), then
	// c+1 to 20 from kcd.
	appendLines(t, in, 16, 20)
	waitFor(ctx, t, "kcd's "+src+": offsets cover 20 lines", func() (bool, any) {
		o := kcd.offsets(src)
		return positionIs(o, in, fileSize(t, in)), o
	})
	committed := linesBefore(t, in, after[src].Offsets[0].Offset["position"])
	topic := readTopic(ctx, t, brokers, lines)
	if p := len(topic) - (20 - committed); p < committed || p > 15 || !slices.Equal(topic, append(lineRange(1, p), lineRange(committed+1, 20)...)) {
		t.Errorf("topic %s: %q, want lines 1 to p (p from %d to 15) by Kafka Connect, then %d to 20 by kcd", lines, topic, committed, committed+1)
	}
	t.Logf("Kafka Connect committed %d lines at the stop; the topic holds %d", committed, len(topic))
	// kcd's sink continues at the group's offset g: the file holds records
	// 0 to q-1 of the topic from Kafka Connect (q >= g), then g to the end.
	g := int(after[sink].Offsets[0].Offset["kafka_offset"].(float64))
	waitFor(ctx, t, fmt.Sprintf("kcd's %s: at offset %d", sink, len(topic)), func() (bool, any) {
		o := kcd.offsets(sink)
		return sinkOffsetIs(o, lines, len(topic)), o
	})
	gotSink := readLines(sinkOut)
	if q := len(gotSink) - (len(topic) - g); q < g || q > len(topic) || !slices.Equal(gotSink, append(slices.Clone(topic[:q]), topic[g:]...)) {
		t.Errorf("%s: %q, want the topic's records 0 to q-1 (q >= %d) by Kafka Connect, then %d to %d by kcd: %q", sinkOut, gotSink, g, g, len(topic)-1, topic)
	}
	// The connector with transforms kcd has: the same output from kcd.
	appendLines(t, smtIn, 4, 5)
	waitFor(ctx, t, "kcd's "+smtOK+": offsets cover 5 lines", func() (bool, any) {
		o := kcd.offsets(smtOK)
		return positionIs(o, smtIn, fileSize(t, smtIn)), o
	})
	var smtGot []map[string]any
	for _, v := range readTopic(ctx, t, brokers, smtOKTopic) {
		var m map[string]any
		if err := json.Unmarshal([]byte(v), &m); err != nil {
			t.Fatalf("topic %s: %q: %v", smtOKTopic, v, err)
		}
		smtGot = append(smtGot, m)
	}
	var smtWant []map[string]any
	for _, l := range lineRange(1, 5) {
		smtWant = append(smtWant, map[string]any{"line": l, "origin": "kc"})
	}
	if !reflect.DeepEqual(smtGot, smtWant) {
		t.Errorf("topic %s: %v, want %v (1 to 3 by Kafka Connect, 4 and 5 by kcd)", smtOKTopic, smtGot, smtWant)
	}
	if got := readLines(stoppedOut); !slices.Equal(got, lineRange(1, 10)) {
		t.Errorf("%s (stopped in kcd): %q, want lines 1 to 10", stoppedOut, got)
	}

	// Again: nothing changes.
	snap := kcd.snapshot(names)
	code, out, errOut = kcctl(t, append(args, "-o", "json")...)
	if code != 0 {
		t.Fatalf("second import: exit %d\n%s\n%s", code, out, errOut)
	}
	plan = migrate.Plan{}
	if err := json.Unmarshal([]byte(out), &plan); err != nil {
		t.Fatalf("second import: %v\n%s", err, out)
	}
	for _, pc := range plan.Connectors {
		if pc.Action != api.ImportUnchanged && pc.Action != api.ImportExists {
			t.Errorf("second import: %s %s (%s)", pc.Action, pc.Name, pc.Reason)
		}
	}
	if len(plan.Connectors) != len(names) {
		t.Errorf("second import: %d connectors, want %d", len(plan.Connectors), len(names))
	}
	if again := kcd.snapshot(names); !reflect.DeepEqual(again, snap) {
		t.Errorf("the second import changed kcd:\nbefore %v\nafter  %v", snap, again)
	}
}

// kafkaAdmin is an admin client of brokers, closed at the end of the test.
func kafkaAdmin(t *testing.T, brokers string) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// startNodeOnKafka starts a one-node kcd in this process with the given
// Kafka as its data plane, and returns its REST URL once it serves the
// Connect API.
func startNodeOnKafka(t *testing.T, brokers string) string {
	t.Helper()
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.RESTAddr = "127.0.0.1:0"
	cfg.PeerAddr = "127.0.0.1:0"
	cfg.BootstrapServers = strings.Split(brokers, ",")
	cfg.OffsetFlushInterval = 300 * time.Millisecond
	n := daemon.New(cfg, slog.New(slog.DiscardHandler))
	if err := n.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	r := restAPI{t: t, base: n.RESTURL()}
	waitFor(ctx, t, "kcd serves /connectors", func() (bool, any) {
		code, body := r.call("GET", "/connectors", nil, nil)
		return code == http.StatusOK, body
	})
	return n.RESTURL()
}

// offsets is the answer of GET /connectors/{name}/offsets.
type offsets struct {
	Offsets []struct {
		Partition map[string]any `json:"partition"`
		Offset    map[string]any `json:"offset"`
	} `json:"offsets"`
}

// notBehind reports whether o holds the one partition of was at the same
// or a later position (a file source's position, a sink's kafka_offset).
func notBehind(o, was offsets) bool {
	if len(o.Offsets) != 1 || len(was.Offsets) != 1 || !reflect.DeepEqual(o.Offsets[0].Partition, was.Offsets[0].Partition) {
		return false
	}
	for _, k := range []string{"position", "kafka_offset"} {
		a, ok1 := o.Offsets[0].Offset[k].(float64)
		b, ok2 := was.Offsets[0].Offset[k].(float64)
		if ok1 && ok2 {
			return a >= b
		}
	}
	return false
}

func positionIs(o offsets, file string, size int) bool {
	return len(o.Offsets) == 1 && o.Offsets[0].Partition["filename"] == file &&
		o.Offsets[0].Offset["position"] == float64(size)
}

func sinkOffsetIs(o offsets, topic string, at int) bool {
	return len(o.Offsets) == 1 && o.Offsets[0].Partition["kafka_topic"] == topic &&
		o.Offsets[0].Partition["kafka_partition"] == float64(0) && o.Offsets[0].Offset["kafka_offset"] == float64(at)
}

// restAPI calls Kafka Connect's REST API, on the real worker or on kcd.
type restAPI struct {
	t    *testing.T
	base string
}

// call sends body as JSON and decodes the answer into out when it is 2xx.
// Kafka Connect answers 409 to writes while its group rebalances (other
// tests share the worker), and 500 to some reads: those are retried for
// up to 30 s.
func (r restAPI) call(method, path string, body, out any) (int, string) {
	r.t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; {
		code, resp := r.once(method, path, body, out)
		retry := code == http.StatusConflict || (method == http.MethodGet && code == http.StatusInternalServerError)
		if !retry || time.Now().After(deadline) {
			return code, resp
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (r restAPI) once(method, path string, body, out any) (int, string) {
	r.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			r.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(r.t.Context(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, r.base+path, rd)
	if err != nil {
		r.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatalf("%s %s: %v", method, r.base+path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if out != nil && resp.StatusCode/100 == 2 {
		if err := json.Unmarshal(b, out); err != nil {
			r.t.Fatalf("%s %s: %v: %s", method, r.base+path, err, b)
		}
	}
	return resp.StatusCode, string(b)
}

// must calls and fails the test unless the answer is 2xx.
func (r restAPI) must(method, path string, body any) {
	r.t.Helper()
	if code, resp := r.call(method, path, body, nil); code/100 != 2 {
		r.t.Fatalf("%s %s: %d %s", method, r.base+path, code, resp)
	}
}

// try calls, ignoring the answer (clean-ups).
func (r restAPI) try(method, path string) {
	req, err := http.NewRequest(method, r.base+path, nil)
	if err != nil {
		return
	}
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
	}
}

func (r restAPI) offsets(name string) offsets {
	r.t.Helper()
	var o offsets
	if code, body := r.call("GET", "/connectors/"+name+"/offsets", nil, &o); code != http.StatusOK {
		r.t.Fatalf("GET %s/connectors/%s/offsets: %d %s", r.base, name, code, body)
	}
	sort.Slice(o.Offsets, func(i, j int) bool {
		a, _ := json.Marshal(o.Offsets[i].Partition)
		b, _ := json.Marshal(o.Offsets[j].Partition)
		return string(a) < string(b)
	})
	return o
}

// connectors lists the connectors, sorted.
func (r restAPI) connectors() []string {
	r.t.Helper()
	var names []string
	if code, body := r.call("GET", "/connectors", nil, &names); code != http.StatusOK {
		r.t.Fatalf("GET %s/connectors: %d %s", r.base, code, body)
	}
	slices.Sort(names)
	return names
}

// statuses gives the state of each connector whose name has prefix; a
// connector whose tasks are not all in its state is reported as
// "STATE/tasks:T1,T2".
func (r restAPI) statuses(prefix string) map[string]string {
	r.t.Helper()
	var all map[string]struct {
		Status api.ConnectorStateInfo `json:"status"`
	}
	if code, body := r.call("GET", "/connectors?expand=status", nil, &all); code != http.StatusOK {
		r.t.Fatalf("GET %s/connectors?expand=status: %d %s", r.base, code, body)
	}
	out := map[string]string{}
	for n, s := range all {
		if !strings.HasPrefix(n, prefix) {
			continue
		}
		st := s.Status.Connector.State
		var tasks []string
		odd := false
		for _, tk := range s.Status.Tasks {
			tasks = append(tasks, tk.State)
			odd = odd || tk.State != st
		}
		// A running connector needs its tasks running; a stopped one has
		// none. (A paused one may have none: Kafka Connect does not make
		// the task configs of a connector created paused.)
		if odd || (st == "RUNNING" && len(tasks) == 0) || (st == "STOPPED" && len(tasks) > 0) {
			st += "/tasks:" + strings.Join(tasks, ",")
		}
		out[n] = st
	}
	return out
}

// snapshot is what a re-run import must not change: configs, states,
// task configs and offsets.
func (r restAPI) snapshot(names []string) map[string]string {
	r.t.Helper()
	out := map[string]string{}
	for _, n := range names {
		for _, p := range []string{"/config", "/tasks", "/offsets"} {
			code, body := r.call("GET", "/connectors/"+n+p, nil, nil)
			out[n+p] = fmt.Sprintf("%d %s", code, body)
		}
	}
	for n, s := range r.statuses("") {
		out[n+"/state"] = s
	}
	return out
}

// waitFor polls cond every 200 ms until it holds, failing the test with
// what cond last saw after 45 s or when ctx ends.
func waitFor(ctx context.Context, t *testing.T, what string, cond func() (bool, any)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 45*time.Second)
	defer cancel()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, last := cond()
		if ok {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: not after waiting (%v); last seen: %v", what, ctx.Err(), last)
		case <-tick.C:
		}
	}
}

func lineRange(from, to int) []string {
	var out []string
	for i := from; i <= to; i++ {
		out = append(out, fmt.Sprintf("line %d", i))
	}
	return out
}

func writeLines(t *testing.T, path string, from, to int) {
	t.Helper()
	var b strings.Builder
	for _, l := range lineRange(from, to) {
		b.WriteString(l + "\n")
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o666); err != nil {
		t.Fatal(err)
	}
}

func appendLines(t *testing.T, path string, from, to int) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lineRange(from, to) {
		fmt.Fprintln(f, l)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// readLines reads a file's lines (none when it is not there yet).
func readLines(path string) []string {
	b, err := os.ReadFile(path)
	if err != nil || len(b) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// linesBefore counts the lines of path that end before byte position pos
// (a FileStream source's offset, as JSON decodes it).
func linesBefore(t *testing.T, path string, pos any) int {
	t.Helper()
	n, ok := pos.(float64)
	b, err := os.ReadFile(path)
	if !ok || err != nil || int(n) > len(b) {
		t.Fatalf("position %v in %s (%d bytes): %v", pos, path, len(b), err)
	}
	return bytes.Count(b[:int(n)], []byte("\n"))
}

func fileSize(t *testing.T, path string) int {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return int(fi.Size())
}

// readTopic reads every record of a one-partition topic, up to its end
// offset now. Transaction markers take offsets too: they are read, to know
// where the end is, and left out.
func readTopic(ctx context.Context, t *testing.T, brokers, topic string) []string {
	t.Helper()
	rd, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...), kgo.KeepControlRecords(),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	ends, err := kadm.NewClient(rd).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("end offsets of %s: %v", topic, err)
	}
	end, _ := ends.Lookup(topic, 0)
	var out []string
	for next := int64(0); next < end.Offset; {
		fs := rd.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %s: up to offset %d of %d: %v", topic, next, end.Offset, ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset < end.Offset && !r.Attrs.IsControl() {
				out = append(out, string(r.Value))
			}
			next = max(next, r.Offset+1)
		})
	}
	return out
}
