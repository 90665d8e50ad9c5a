package javahost

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcd-project/kcd/daemon/connect"
	"github.com/kcd-project/kcd/daemon/connectstore"
	"github.com/kcd-project/kcd/internal/testenv"
)

const javaFileSinkDLQ = "kcd.test.JavaFileStreamSinkDLQ"

var registerDLQOnce sync.Once

// TestIntegrationJavaHostDeadLetterClass: a record the Java sink's
// JsonConverter rejects under errors.tolerance=all reaches the dead letter
// queue with the Java exception's own class (DataException), message and
// stack in its headers, as Kafka Connect labels it; the others reach the
// file.
func TestIntegrationJavaHostDeadLetterClass(t *testing.T) {
	seeds := strings.Split(testenv.Require(t, testenv.Kafka), ",")
	h := newTestHost(t, time.Minute)
	p := NewProvider(h)
	cp, ok := p.Lookup(fileSink)
	if !ok {
		t.Fatalf("the host has no %s", fileSink)
	}
	registerDLQOnce.Do(func() {
		connect.Register(connect.Plugin{Class: javaFileSinkDLQ, Type: connect.PluginSink, Version: cp.Version, New: cp.New})
	})
	cs := openStore(t)
	name := fmt.Sprintf("kcd-javahost-dlq-%d", time.Now().UnixNano())
	topic, dlq := name, name+"-dlq"
	t.Cleanup(func() { deleteTopic(seeds, topic); deleteTopic(seeds, dlq) })

	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for _, v := range []string{`{"a":1}`, `{not json`, `{"b":2}`} {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(t.TempDir(), "out.txt")
	cfg := map[string]string{
		"name": name, "connector.class": javaFileSinkDLQ, "tasks.max": "1", "file": file, "topics": topic,
		"key.converter":   "org.apache.kafka.connect.storage.StringConverter",
		"value.converter": "org.apache.kafka.connect.json.JsonConverter", "value.converter.schemas.enable": "false",
		"errors.tolerance": "all", "errors.deadletterqueue.topic.name": dlq,
		"errors.deadletterqueue.topic.replication.factor": "1", "errors.deadletterqueue.context.headers.enable": "true",
	}
	if created, err := cs.CreateConnector(context.Background(), name, cfg, connectstore.TargetStarted); err != nil || !created {
		t.Fatalf("create: %v %v", created, err)
	}
	stop := runWorker(t, cs, seeds)
	defer stop()
	waitUntil(t, 60*time.Second, "the file has the two good records", func() bool {
		b, _ := os.ReadFile(file)
		return string(b) == "{a=1}\n{b=2}\n"
	})

	dc, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(dlq),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer dc.Close()
	var dead *kgo.Record
	for dead == nil {
		fs := dc.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatal("no dead letter came")
		}
		fs.EachRecord(func(r *kgo.Record) { dead = r })
	}
	hs := map[string]string{}
	for _, h := range dead.Headers {
		hs[h.Key] = string(h.Value)
	}
	const pre = "__connect.errors."
	if string(dead.Value) != "{not json" {
		t.Errorf("dead letter %q, want the rejected record", dead.Value)
	}
	if got := hs[pre+"exception.class.name"]; got != "org.apache.kafka.connect.errors.DataException" {
		t.Errorf("exception class %q, want the Java exception's DataException", got)
	}
	if msg := hs[pre+"exception.message"]; msg == "" || strings.Contains(msg, "\n\tat ") {
		t.Errorf("exception message %q: want the exception's message alone", msg)
	}
	if st := hs[pre+"exception.stacktrace"]; !strings.HasPrefix(st, "org.apache.kafka.connect.errors.DataException: ") || !strings.Contains(st, "\tat org.apache.kafka.connect.json.JsonConverter") {
		t.Errorf("stack trace is not the Java one:\n%s", st)
	}
	t.Logf("dead letter headers: class %s, message %q, stack %s", hs[pre+"exception.class.name"], hs[pre+"exception.message"],
		firstLines(hs[pre+"exception.stacktrace"], 3))
}
