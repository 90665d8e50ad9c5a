package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kcd-project/kcd/internal/testenv"
	"github.com/kcd-project/kcd/migrate"
)

// TestIntegrationMigrateToKafka is the way back: kcd runs a FileStream
// source and sink (and a paused and a stopped connector); kcctl migrate
// to-kafka --stop-source stops them in kcd and writes them into fresh
// internal topics; a fresh real Kafka Connect worker started on those
// topics shows the same connectors, configs, states and offsets, its
// source continues at line 11 and its sink at the group's offset (no line
// lost, none written twice). A dry run before writes nothing; a run that
// Kafka refuses (a config topic that is not compacted) stops nothing in
// kcd; a re-run after writes nothing.
func TestIntegrationMigrateToKafka(t *testing.T) {
	brokers := testenv.Require(t, testenv.Kafka)
	testenv.Require(t, testenv.ConnectWorker)
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()

	adm := kafkaAdmin(t, brokers)

	prefix := fmt.Sprintf("kcd-back-%08x-", rand.Uint32())
	name := func(s string) string { return prefix + s }
	src, sink, paused, stopped := name("src"), name("sink"), name("paused"), name("stopped")
	lines, pausedTopic := name("lines"), name("paused")
	internal := migrate.Topics{Config: name("configs"), Offset: name("offsets"), Status: name("status")}
	topics := []string{lines, pausedTopic}
	if _, err := adm.CreateTopics(ctx, 1, 1, nil, topics...); err != nil {
		t.Fatalf("create topics: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_, _ = adm.DeleteTopics(ctx, append(topics, internal.Config, internal.Offset, internal.Status)...)
		_, _ = adm.DeleteGroups(ctx, "connect-"+sink, "connect-"+stopped)
	})

	// Kafka Connect's worker runs as another process: it reads and writes
	// these files too.
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	in, sinkOut, stoppedOut, pausedIn := filepath.Join(dir, "in.txt"), filepath.Join(dir, "sink.txt"), filepath.Join(dir, "stopped.txt"), filepath.Join(dir, "paused.txt")
	writeLines(t, in, 1, 10)
	writeLines(t, pausedIn, 1, 3)

	kcdURL := startNodeOnKafka(t, brokers)
	kcd := restAPI{t: t, base: kcdURL}
	conv := map[string]string{"key.converter": strConv, "value.converter": strConv, "tasks.max": "1"}
	create := func(n string, cfg map[string]string) {
		t.Helper()
		for k, v := range conv {
			cfg[k] = v
		}
		kcd.must("POST", "/connectors", map[string]any{"name": n, "config": cfg})
	}
	create(src, map[string]string{"connector.class": fileSource, "file": in, "topic": lines})
	create(sink, map[string]string{"connector.class": fileSink, "file": sinkOut, "topics": lines})
	create(stopped, map[string]string{"connector.class": fileSink, "file": stoppedOut, "topics": lines})
	create(paused, map[string]string{"connector.class": fileSource, "file": pausedIn, "topic": pausedTopic})

	waitFor(ctx, t, "kcd's "+src+": offsets cover 10 lines", func() (bool, any) {
		o := kcd.offsets(src)
		return positionIs(o, in, fileSize(t, in)), o
	})
	waitFor(ctx, t, "kcd's "+paused+": offsets cover 3 lines", func() (bool, any) {
		o := kcd.offsets(paused)
		return positionIs(o, pausedIn, fileSize(t, pausedIn)), o
	})
	for _, n := range []string{sink, stopped} {
		waitFor(ctx, t, "kcd's "+n+": at offset 10", func() (bool, any) {
			o := kcd.offsets(n)
			return sinkOffsetIs(o, lines, 10), o
		})
	}
	kcd.must("PUT", "/connectors/"+paused+"/pause", nil)
	kcd.must("PUT", "/connectors/"+stopped+"/stop", nil)
	waitFor(ctx, t, "kcd: every connector in its state", func() (bool, any) {
		st := kcd.statuses(prefix)
		return reflect.DeepEqual(st, map[string]string{src: "RUNNING", sink: "RUNNING", paused: "PAUSED", stopped: "STOPPED"}), st
	})
	names := []string{paused, sink, src, stopped} // sorted
	configs := map[string]map[string]string{}
	for _, n := range names {
		var cfg map[string]string
		kcd.call("GET", "/connectors/"+n+"/config", nil, &cfg)
		configs[n] = cfg
	}

	args := []string{"--server", kcdURL, "migrate", "to-kafka", "--bootstrap-servers", brokers, "--include", "^" + prefix,
		"--config-topic", internal.Config, "--offset-topic", internal.Offset, "--status-topic", internal.Status,
		"--replication-factor", "1", "--stop-source"}
	items := func(out string) map[string]string {
		t.Helper()
		var res migrate.WriteResult
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("%v:\n%s", err, out)
		}
		got := map[string]string{}
		for _, it := range res.Items {
			got[it.Name] = it.Action
		}
		return got
	}
	allCreate := map[string]string{src: migrate.ActionCreate, sink: migrate.ActionCreate, paused: migrate.ActionCreate, stopped: migrate.ActionCreate}

	// The dry run: what it would write, and nothing changes on either side.
	code, out, errOut := kcctl(t, append(args, "--dry-run", "-o", "json")...)
	if code != 0 {
		t.Fatalf("dry run: exit %d\n%s\n%s", code, out, errOut)
	}
	if got := items(out); !reflect.DeepEqual(got, allCreate) {
		t.Errorf("dry run: %v, want %v", got, allCreate)
	}
	if d, err := adm.ListTopics(ctx, internal.Config, internal.Offset, internal.Status); err != nil || len(d.TopicsSet()) != 0 {
		t.Fatalf("the dry run created topics: %v %v", d.Names(), err)
	}
	if st := kcd.statuses(prefix); st[src] != "RUNNING" || st[sink] != "RUNNING" {
		t.Fatalf("the dry run stopped connectors in kcd: %v", st)
	}
	warning := fmt.Sprintf("Warning: 2 connector(s) still run on kcd (%s, %s)", sink, src)
	if !strings.Contains(errOut, warning) || !strings.Contains(errOut, "--stop-source stops them when run without --dry-run") {
		t.Errorf("dry run: stderr %q, want %q and what --stop-source will do", errOut, warning)
	}

	// A config topic that is not compacted is refused before anything is
	// stopped in kcd (or written).
	badConfig := name("configs-delete")
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"cleanup.policy": kadm.StringPtr("delete")}, badConfig); err != nil {
		t.Fatalf("create topic %s: %v", badConfig, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_, _ = adm.DeleteTopics(ctx, badConfig)
	})
	code, out, errOut = kcctl(t, append(args, "--config-topic", badConfig)...)
	if code == 0 || !strings.Contains(errOut, "cleanup.policy=delete") || strings.Contains(errOut, "stopping") {
		t.Fatalf("to-kafka on a config topic that is not compacted: exit %d, want it refused before stopping anything\n%s\n%s", code, out, errOut)
	}
	if st := kcd.statuses(prefix); st[src] != "RUNNING" || st[sink] != "RUNNING" {
		t.Fatalf("the refused run stopped connectors in kcd: %v", st)
	}
	if d, err := adm.ListTopics(ctx, internal.Offset, internal.Status); err != nil || len(d.TopicsSet()) != 0 {
		t.Fatalf("the refused run created topics: %v %v", d.Names(), err)
	}

	// The export: --stop-source stops src and sink in kcd first, so their
	// last offsets are stored, and writes them STARTED.
	code, out, errOut = kcctl(t, append(args, "-o", "json")...)
	if code != 0 {
		t.Fatalf("to-kafka: exit %d\n%s\n%s", code, out, errOut)
	}
	if want := fmt.Sprintf("stopping 2 connector(s) on kcd: %s, %s", sink, src); !strings.Contains(errOut, want) || strings.Contains(errOut, "Warning") {
		t.Errorf("to-kafka: stderr %q, want %q and no warning", errOut, want)
	}
	if got := items(out); !reflect.DeepEqual(got, allCreate) {
		t.Errorf("to-kafka: %v, want %v", got, allCreate)
	}
	if st, want := kcd.statuses(prefix), map[string]string{src: "STOPPED", sink: "STOPPED", paused: "PAUSED", stopped: "STOPPED"}; !reflect.DeepEqual(st, want) {
		t.Errorf("kcd after --stop-source: %v, want %v", st, want)
	}
	before := map[string]offsets{}
	for _, n := range names {
		before[n] = kcd.offsets(n)
	}
	if !positionIs(before[src], in, fileSize(t, in)) || !sinkOffsetIs(before[sink], lines, 10) {
		t.Fatalf("kcd's offsets after the stop: %v %v", before[src], before[sink])
	}

	// Again: everything is there; nothing is written.
	code, out, errOut = kcctl(t, append(args, "-o", "json")...)
	if code != 0 {
		t.Fatalf("second to-kafka: exit %d\n%s\n%s", code, out, errOut)
	}
	var again migrate.WriteResult
	if err := json.Unmarshal([]byte(out), &again); err != nil || again.ConfigRecords+again.OffsetRecords != 0 || len(again.Groups) != 0 {
		t.Errorf("the second to-kafka wrote: %+v %v", again, err)
	}

	// A fresh real Kafka Connect worker on the written topics.
	kc := restAPI{t: t, base: testenv.StartConnectWorker(t, map[string]string{
		"group.id":             name("group"),
		"config.storage.topic": internal.Config, "offset.storage.topic": internal.Offset, "status.storage.topic": internal.Status,
	})}
	for _, n := range names {
		t.Cleanup(func() { kc.try("DELETE", "/connectors/"+n) })
	}
	if got := kc.connectors(); !slices.Equal(got, names) {
		t.Fatalf("Kafka Connect's connectors: %v, want %v", got, names)
	}
	wantStates := map[string]string{src: "RUNNING", sink: "RUNNING", paused: "PAUSED", stopped: "STOPPED"}
	waitFor(ctx, t, "Kafka Connect: every connector in its state", func() (bool, any) {
		st := kc.statuses(prefix)
		return reflect.DeepEqual(st, wantStates), st
	})
	for _, n := range names {
		var cfg map[string]string
		kc.call("GET", "/connectors/"+n+"/config", nil, &cfg)
		if !reflect.DeepEqual(cfg, configs[n]) {
			t.Errorf("%s: config on Kafka Connect %v, in kcd %v", n, cfg, configs[n])
		}
	}
	for _, n := range []string{paused, stopped} {
		if o := kc.offsets(n); !reflect.DeepEqual(o, before[n]) {
			t.Errorf("%s: offsets on Kafka Connect %v, kcd's %v", n, o, before[n])
		}
	}

	// Kafka Connect's source continues at line 11, its sink at the group's
	// offset.
	appendLines(t, in, 11, 15)
	waitFor(ctx, t, "Kafka Connect's "+src+": offsets cover 15 lines", func() (bool, any) {
		o := kc.offsets(src)
		return positionIs(o, in, fileSize(t, in)), o
	})
	if got := readTopic(ctx, t, brokers, lines); !slices.Equal(got, lineRange(1, 15)) {
		t.Errorf("topic %s: %q, want lines 1 to 15 once each (10 by kcd, 5 by Kafka Connect)", lines, got)
	}
	waitFor(ctx, t, "Kafka Connect's "+sink+": wrote 15 lines", func() (bool, any) {
		got := readLines(sinkOut)
		return len(got) >= 15, got
	})
	if got := readLines(sinkOut); !slices.Equal(got, lineRange(1, 15)) {
		t.Errorf("%s: %q, want lines 1 to 15 once each (10 by kcd, 5 by Kafka Connect)", sinkOut, got)
	}
	if got := readLines(stoppedOut); !slices.Equal(got, lineRange(1, 10)) {
		t.Errorf("%s (stopped): %q, want lines 1 to 10", stoppedOut, got)
	}
}
