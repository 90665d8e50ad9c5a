package worker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcd-project/kcd/daemon/connectstore"
)

func TestWorkerSourceTransforms(t *testing.T) { t.Parallel(); scenarioSourceTransforms(fakeEnv(t)) }
func TestIntegrationSourceTransforms(t *testing.T) {
	t.Parallel()
	scenarioSourceTransforms(kafkaEnv(t))
}

func TestWorkerSinkTransforms(t *testing.T)      { t.Parallel(); scenarioSinkTransforms(fakeEnv(t)) }
func TestIntegrationSinkTransforms(t *testing.T) { t.Parallel(); scenarioSinkTransforms(kafkaEnv(t)) }

// A FileStream source with transforms: the lines are cast to numbers (a
// line that is not one is a record error, skipped under
// errors.tolerance=all), hoisted into a struct with a static field added,
// routed to another topic, and the odd ones carry a header. The source
// offsets still move past every line.
func scenarioSourceTransforms(e *env) {
	t := e.t
	in := filepath.Join(t.TempDir(), "in.txt")
	if err := os.WriteFile(in, []byte("1\n2\nnot a number\n4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	raw := e.name("raw")
	routed := strings.Replace(raw, "raw", "routed", 1)
	e.mu.Lock()
	e.names = append(e.names, routed) // deleted with the others
	e.mu.Unlock()
	src := e.name("src")
	e.create(src, map[string]string{"connector.class": "FileStreamSource", "file": in, "topic": raw,
		"topic.creation.default.partitions": "1", "topic.creation.default.replication.factor": "-1",
		"errors.tolerance":               "all",
		"transforms":                     "cast,hoist,insert,route,mark",
		"transforms.cast.type":           "org.apache.kafka.connect.transforms.Cast$Value",
		"transforms.cast.spec":           "int32",
		"transforms.hoist.type":          "HoistField$Value", // the simple name, as Kafka Connect accepts
		"transforms.hoist.field":         "n",
		"transforms.insert.type":         "org.apache.kafka.connect.transforms.InsertField$Value",
		"transforms.insert.static.field": "from",
		"transforms.insert.static.value": "file",
		"transforms.route.type":          "org.apache.kafka.connect.transforms.RegexRouter",
		"transforms.route.regex":         "(.*)raw(.*)",
		"transforms.route.replacement":   "$1routed$2",
		"transforms.mark.type":           "org.apache.kafka.connect.transforms.InsertHeader",
		"transforms.mark.header":         "seen",
		"transforms.mark.value.literal":  "yes",
		"transforms.mark.predicate":      "routed",
		"predicates":                     "routed",
		"predicates.routed.type":         "org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
		"predicates.routed.pattern":      ".*routed.*",
	})
	e.start(nil)

	recs := e.consumeN(routed, 3, 500*time.Millisecond)
	var got []string
	for _, r := range recs {
		hs := map[string]string{}
		for _, h := range r.Headers {
			hs[h.Key] = string(h.Value)
		}
		got = append(got, string(r.Value)+" seen="+hs["seen"])
	}
	schema := `{"schema":{"type":"struct","fields":[{"type":"int32","optional":false,"field":"n"},{"type":"string","optional":true,"field":"from"}],"optional":false},"payload":`
	want := []string{schema + `{"n":1,"from":"file"}} seen=yes`, schema + `{"n":2,"from":"file"}} seen=yes`, schema + `{"n":4,"from":"file"}} seen=yes`}
	if !slices.Equal(got, want) {
		t.Errorf("routed records:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	waitFor(t, 30*time.Second, "the source offset past the last line", func() (bool, string) {
		offs, err := e.cs.SourceOffsets(context.Background(), src)
		if err != nil {
			return false, err.Error()
		}
		for _, o := range offs {
			if fmt.Sprint(o.Offset["position"]) == "19" {
				return true, ""
			}
		}
		return false, fmt.Sprint(offs)
	})
}

// A FileStream sink with transforms: ExtractField takes one field of the
// JSON value, Filter drops the records with a "skip" header
// (HasHeaderKey), and a transform failing on a record fails the task with
// errors.tolerance=none. Offsets commit past the dropped records.
func scenarioSinkTransforms(e *env) {
	t := e.t
	topic := e.name("sinkt")
	e.createTopic(topic, 1)
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.seeds...), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var want []string
	for i := range 20 {
		r := &kgo.Record{Value: fmt.Appendf(nil, `{"schema":{"type":"struct","fields":[{"field":"msg","type":"string"},{"field":"i","type":"int32"}]},"payload":{"msg":"m%d","i":%d}}`, i, i)}
		if i%4 == 1 {
			r.Headers = []kgo.RecordHeader{{Key: "skip", Value: []byte("1")}}
		} else {
			want = append(want, fmt.Sprintf("m%d", i))
		}
		cl.Produce(context.Background(), r, nil)
	}
	if err := cl.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out.txt")
	sink, broken := e.name("sink"), e.name("broken")
	e.create(sink, map[string]string{"connector.class": "FileStreamSink", "file": out, "topics": topic,
		"transforms":                "skip,extract",
		"transforms.skip.type":      "org.apache.kafka.connect.transforms.Filter",
		"transforms.skip.predicate": "hasSkip",
		"transforms.extract.type":   "org.apache.kafka.connect.transforms.ExtractField$Value",
		"transforms.extract.field":  "msg",
		"predicates":                "hasSkip",
		"predicates.hasSkip.type":   "org.apache.kafka.connect.transforms.predicates.HasHeaderKey",
		"predicates.hasSkip.name":   "skip",
	})
	e.create(broken, map[string]string{"connector.class": "FileStreamSink", "file": filepath.Join(t.TempDir(), "x"), "topics": topic,
		"transforms": "extract", "transforms.extract.type": "org.apache.kafka.connect.transforms.ExtractField$Value",
		"transforms.extract.field": "nope"})
	dlq, tolerant := e.name("dlq"), e.name("tolerant")
	e.create(tolerant, map[string]string{"connector.class": "FileStreamSink", "file": filepath.Join(t.TempDir(), "y"), "topics": topic,
		"transforms": "extract", "transforms.extract.type": "org.apache.kafka.connect.transforms.ExtractField$Value",
		"transforms.extract.field": "nope", "errors.tolerance": "all", "errors.deadletterqueue.topic.name": dlq,
		"errors.deadletterqueue.topic.replication.factor": "-1", "errors.deadletterqueue.context.headers.enable": "true"})
	e.start(nil)

	waitFor(t, 30*time.Second, "the kept records in the file", func() (bool, string) {
		got := readLines(t, out)
		return slices.Equal(got, want), fmt.Sprint(got)
	})
	waitFor(t, 10*time.Second, "offsets past the last record", func() (bool, string) {
		offs, _ := e.cs.SinkOffsets(context.Background(), sink)
		return len(offs) == 1 && offs[0].Offset == 20, fmt.Sprint(offs)
	})
	// A tolerated transformation error sends the record to the dead
	// letter queue, naming the transformation.
	dead := e.consumeN(dlq, 20, 300*time.Millisecond)
	if len(dead) != 20 {
		t.Errorf("%d dead letters, want 20", len(dead))
	}
	for i, r := range dead {
		hs := map[string]string{}
		for _, h := range r.Headers {
			hs[h.Key] = string(h.Value)
		}
		if hs["__connect.errors.stage"] != "TRANSFORMATION" || hs["__connect.errors.class.name"] != "org.apache.kafka.connect.transforms.ExtractField$Value" ||
			hs["__connect.errors.offset"] != fmt.Sprint(i) {
			t.Errorf("dead letter %d: %v", i, hs)
		}
	}
	st := e.waitState(broken, 0, connectstore.StateFailed)
	if !strings.Contains(st.Trace, "tolerance exceeded") || !strings.Contains(st.Trace, "Unknown field: nope") {
		t.Errorf("broken task's trace: %q", st.Trace)
	}
}
