package migrate

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/kcd-project/kcd/api"
)

func testCatalogue() Catalogue {
	return NewCatalogue([]Plugin{
		{Class: "org.apache.kafka.connect.file.FileStreamSourceConnector", Type: "source"},
		{Class: "org.apache.kafka.connect.file.FileStreamSinkConnector", Type: "sink"},
		{Class: "org.apache.kafka.connect.mirror.MirrorSourceConnector", Type: "source"},
		{Class: "org.apache.kafka.connect.json.JsonConverter", Type: "converter"},
		{Class: "org.apache.kafka.connect.storage.StringConverter", Type: "converter"},
		{Class: "org.apache.kafka.connect.transforms.InsertField$Value", Type: "transformation"},
		{Class: "org.apache.kafka.connect.transforms.predicates.TopicNameMatches", Type: "predicate"},
	})
}

func TestCatalogueAliases(t *testing.T) {
	cat := testCatalogue()
	for _, name := range []string{"org.apache.kafka.connect.file.FileStreamSourceConnector", "FileStreamSourceConnector", "FileStreamSource", " FileStreamSource "} {
		if p, ok := cat.Lookup(name); !ok || p.Type != "source" {
			t.Errorf("Lookup(%q) = %+v, %v", name, p, ok)
		}
	}
	if p, ok := cat.Lookup("JsonConverter"); !ok || p.Type != "converter" {
		t.Errorf("Lookup(JsonConverter) = %+v, %v", p, ok)
	}
	if _, ok := cat.Lookup("io.debezium.connector.mysql.MySqlConnector"); ok {
		t.Error("a class kcd lacks was found")
	}
}

func TestBuildPlan(t *testing.T) {
	c := &Cluster{Connectors: []*Connector{
		{Name: "src", Target: "STARTED", Config: map[string]string{"connector.class": "FileStreamSource", "value.converter": "org.apache.kafka.connect.json.JsonConverter"},
			Tasks: []map[string]string{{"task.class": "T"}}, TaskCount: 1,
			SourceOffsets: []SourceOffset{{Partition: map[string]any{"filename": "/f"}, Offset: map[string]any{"position": 1}}}},
		{Name: "dbz", Target: "PAUSED", Config: map[string]string{"connector.class": "io.debezium.connector.mysql.MySqlConnector"},
			Tasks: []map[string]string{{}}, TaskCount: 1},
		{Name: "sink", Target: "STARTED", NullKeys: []string{"x"},
			Config: map[string]string{"connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector", "topics": "t",
				"transforms": "a, b", "transforms.a.type": "org.apache.kafka.connect.transforms.InsertField$Value", "transforms.b.type": "org.apache.kafka.connect.transforms.RegexRouter",
				"predicates": "p", "predicates.p.type": "org.apache.kafka.connect.transforms.predicates.HasHeaderKey"},
			Tasks: []map[string]string{{}, {}}, TaskCount: 2, SinkOffsets: []SinkOffset{{Topic: "t", Partition: 0, Offset: 4}}},
		{Name: "half", Target: "STARTED", Inconsistent: true, TaskCount: 3, Config: map[string]string{"connector.class": "FileStreamSink", "topics.regex": "x.*"}},
		{Name: "stopped", Target: "STOPPED", Config: map[string]string{"connector.class": "FileStreamSource"}},
	}}
	p := BuildPlan(c, testCatalogue())
	got := map[string]PlanConnector{}
	for _, pc := range p.Connectors {
		got[pc.Name] = pc
	}
	want := map[string]PlanConnector{
		"src": {Name: "src", Class: "FileStreamSource", Type: "source", From: "STARTED", Target: "STARTED", Tasks: 1, SourceOffsets: 1},
		"dbz": {Name: "dbz", Class: "io.debezium.connector.mysql.MySqlConnector", Type: "source", From: "PAUSED", Target: "STOPPED",
			Missing: []string{"connector io.debezium.connector.mysql.MySqlConnector"},
			Notes:   []string{"imported STOPPED: kcd lacks connector io.debezium.connector.mysql.MySqlConnector"}},
		"sink": {Name: "sink", Class: "org.apache.kafka.connect.file.FileStreamSinkConnector", Type: "sink", From: "STARTED", Target: "STOPPED", SinkOffsets: 1,
			Missing: []string{"transformation org.apache.kafka.connect.transforms.RegexRouter (b)", "predicate org.apache.kafka.connect.transforms.predicates.HasHeaderKey (p)"},
			Notes: []string{"null values dropped: x",
				"imported STOPPED: kcd lacks transformation org.apache.kafka.connect.transforms.RegexRouter (b), predicate org.apache.kafka.connect.transforms.predicates.HasHeaderKey (p)"}},
		"half":    {Name: "half", Class: "FileStreamSink", Type: "sink", From: "STARTED", Target: "STARTED", Notes: []string{"its task configs were not all written on Kafka Connect: kcd generates them"}},
		"stopped": {Name: "stopped", Class: "FileStreamSource", Type: "source", From: "STOPPED", Target: "STOPPED"},
	}
	for name, w := range want {
		if !reflect.DeepEqual(got[name], w) {
			t.Errorf("%s:\n got %+v\nwant %+v", name, got[name], w)
		}
	}

	req := p.ImportRequest(c, true, false)
	if !req.Overwrite || len(req.Connectors) != 5 {
		t.Fatalf("request: %+v", req)
	}
	for _, ic := range req.Connectors {
		if ic.Target != got[ic.Name].Target || len(ic.Tasks) != got[ic.Name].Tasks {
			t.Errorf("request connector %s: target %s tasks %d, plan %+v", ic.Name, ic.Target, len(ic.Tasks), got[ic.Name])
		}
	}

	p.SetActions([]api.ImportItem{{Name: "src", Action: api.ImportCreate}, {Name: "sink", Action: api.ImportOverwrite},
		{Name: "dbz", Action: api.ImportBlocked, Reason: "running"}, {Name: "half", Action: api.ImportExists}})
	if b := p.Blocked(); !reflect.DeepEqual(b, []string{"dbz"}) {
		t.Errorf("Blocked = %v", b)
	}
	chunks := p.Offsets(c, 1)
	if len(chunks) != 2 || len(chunks[0].Source) != 1 || chunks[0].Source[0].Connector != "src" || len(chunks[1].Sink) != 1 || chunks[1].Sink[0].Offset != 4 {
		t.Errorf("offset chunks of imported connectors: %+v", chunks)
	}
	if all := p.Offsets(c, api.MaxImportOffsets); len(all) != 1 || len(all[0].Source)+len(all[0].Sink) != 2 {
		t.Errorf("one chunk: %+v", all)
	}
}

func TestPlanMissingClassNamed(t *testing.T) {
	c := &Cluster{Connectors: []*Connector{{Name: "x", Target: "STARTED", Config: map[string]string{}}}}
	pc := BuildPlan(c, testCatalogue()).Connectors[0]
	if pc.Target != "STOPPED" || len(pc.Missing) != 1 || !strings.Contains(pc.Missing[0], "(none set)") {
		t.Errorf("a connector without a class: %+v", pc)
	}
}

func TestUnstopMigrated(t *testing.T) {
	c := &Cluster{Connectors: []*Connector{
		{Name: "a", Target: "STOPPED", Config: map[string]string{"connector.class": "FileStreamSource"}},
		{Name: "b", Target: "STOPPED", Config: map[string]string{"connector.class": "FileStreamSource"}},
		{Name: "c", Target: "PAUSED", Config: map[string]string{"connector.class": "FileStreamSource"}},
		{Name: "d", Target: "STOPPED", Config: map[string]string{"connector.class": "FileStreamSource"}},
		{Name: "e", Target: "STOPPED", Config: map[string]string{"connector.class": "FileStreamSource"}},
	}}
	// a ran; b was not stopped by the run; d was paused when it was read
	// first; e was stopped already then.
	before := map[string]string{"a": "STARTED", "b": "STARTED", "c": "STARTED", "d": "PAUSED", "e": "STOPPED"}
	UnstopMigrated(c, []string{"a", "c", "d", "e"}, before)
	p := BuildPlan(c, testCatalogue())
	var got []string
	for _, pc := range p.Connectors {
		got = append(got, pc.Target)
	}
	if want := []string{"STARTED", "STOPPED", "PAUSED", "PAUSED", "STOPPED"}; !reflect.DeepEqual(got, want) {
		t.Errorf("targets %v, want %v: only a connector the migration stopped gets its target from before", got, want)
	}
	if n := p.Connectors[0].Notes; len(n) != 1 || !strings.Contains(n[0], "stopped on Kafka Connect for the migration: STARTED") {
		t.Errorf("notes %v", n)
	}
	if n := p.Connectors[3].Notes; len(n) != 1 || !strings.Contains(n[0], "PAUSED in kcd") {
		t.Errorf("notes %v", n)
	}
}

// A source connector with a topics setting of its own (MirrorSourceConnector)
// is a source when kcd knows its class, not a sink kcd lacks.
func TestPlanSourceWithTopics(t *testing.T) {
	c := &Cluster{Connectors: []*Connector{
		{Name: "mm", Target: "STARTED", Config: map[string]string{"connector.class": "org.apache.kafka.connect.mirror.MirrorSourceConnector", "topics": "orders"}},
		{Name: "unknown", Target: "STARTED", Config: map[string]string{"connector.class": "com.example.SomeConnector", "topics": "orders"}},
	}}
	p := BuildPlan(c, testCatalogue())
	if pc := p.Connectors[0]; pc.Type != "source" || pc.Target != "STARTED" || len(pc.Missing) != 0 {
		t.Errorf("MirrorSourceConnector with topics: %+v", pc)
	}
	if pc := p.Connectors[1]; pc.Type != "sink" || pc.Target != "STOPPED" {
		t.Errorf("an unknown class with topics: %+v", pc)
	}
}

// TestPlanOffsetsChunksByBytes: big partitions and their keys are sent in
// chunks that kcd takes (4 MiB of JSON a request), not by count alone.
func TestPlanOffsetsChunksByBytes(t *testing.T) {
	conn := &Connector{Name: "src", Config: map[string]string{"connector.class": "S"}}
	long := strings.Repeat(`"\`, 300) // escaped in the partition, twice in the key
	for i := range 3000 {
		part := map[string]any{"q": long, "i": json.Number(strconv.Itoa(i))}
		key, err := EncodeOffsetKey("src", part)
		if err != nil {
			t.Fatal(err)
		}
		conn.SourceOffsets = append(conn.SourceOffsets, SourceOffset{Partition: part, Offset: map[string]any{"o": json.Number("1")}, Key: key})
	}
	c := &Cluster{Connectors: []*Connector{conn}}
	p := BuildPlan(c, NewCatalogue(nil))
	p.SetActions([]api.ImportItem{{Name: "src", Action: api.ImportCreate}})
	chunks := p.Offsets(c, api.MaxImportOffsets)
	total := 0
	for _, ch := range chunks {
		b, err := json.Marshal(ch)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > 4<<20 {
			t.Errorf("a chunk of %d offsets is %d bytes of JSON", len(ch.Source), len(b))
		}
		for _, o := range ch.Source {
			if o.Key == "" {
				t.Fatal("a key was left out")
			}
		}
		total += len(ch.Source)
	}
	if len(chunks) < 2 || total != 3000 {
		t.Errorf("%d chunks of %d offsets", len(chunks), total)
	}
}
