package migrate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcd-project/kcd/api"
	"github.com/kcd-project/kcd/internal/testenv"
)

// TestIntegrationOffsetKeyBytesRoundTrip: a real Kafka Connect worker
// writes a source offset whose partition has three fields in an order that
// is neither sorted nor a HashMap's (an offsets PATCH keeps its body's
// order); Read takes its key bytes, they go to kcd and back on the wire
// (api.ImportOffsets, api.Export), and Write puts them into fresh topics
// byte for byte. Without them Write would encode another key, under which
// Kafka Connect would not find the offset.
func TestIntegrationOffsetKeyBytesRoundTrip(t *testing.T) {
	brokers := testenv.Require(t, testenv.Kafka)
	testenv.Require(t, testenv.ConnectWorker)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	id := fmt.Sprintf("kcd-offkey-%d", time.Now().UnixNano())
	from := Topics{Config: id + "-configs", Offset: id + "-offsets", Status: id + "-status"}
	to := Topics{Config: id + "-to-configs", Offset: id + "-to-offsets", Status: id + "-to-status"}
	bare := Topics{Config: id + "-bare-configs", Offset: id + "-bare-offsets", Status: id + "-bare-status"}
	t.Cleanup(func() {
		adm.DeleteTopics(context.Background(), from.Config, from.Offset, from.Status, to.Config, to.Offset, to.Status,
			bare.Config, bare.Offset, bare.Status, id+"-out")
	})
	url := testenv.StartConnectWorker(t, map[string]string{
		"group.id": id, "config.storage.topic": from.Config, "offset.storage.topic": from.Offset, "status.storage.topic": from.Status,
	})

	name, file := id+"-src", filepath.Join(t.TempDir(), "in.txt")
	create := fmt.Sprintf(`{"name":%q,"initial_state":"STOPPED","config":{"connector.class":"org.apache.kafka.connect.file.FileStreamSourceConnector","tasks.max":"1","file":%q,"topic":%q}}`,
		name, file, id+"-out")
	if code, body := send(ctx, http.MethodPost, url+"/connectors", create); code != 201 {
		t.Fatalf("create %s: %d %s", name, code, body)
	}
	waitFor(t, ctx, "state of "+name, func() (bool, string) {
		var st struct{ Connector struct{ State string } }
		code, body := rest(ctx, url+"/connectors/"+name+"/status", &st)
		return code == 200 && st.Connector.State == "STOPPED", fmt.Sprintf("%d %s", code, body)
	})
	// Two partitions, each in the body's order filename, database, server
	// and filename, BB, Aa. Kafka Connect puts them into HashMaps: server,
	// database, filename (bucket order, which kcd emulates), and BB before
	// Aa ("Aa" and "BB" share a bucket and keep the body's order, which
	// kcd cannot know).
	patch := fmt.Sprintf(`{"offsets":[{"partition":{"filename":%q,"database":"db1","server":"srv1"},"offset":{"position":7}},`+
		`{"partition":{"filename":%q,"BB":"b","Aa":"a"},"offset":{"position":9}}]}`, file, file)
	if code, body := send(ctx, http.MethodPatch, url+"/connectors/"+name+"/offsets", patch); code != 200 {
		t.Fatalf("alter offsets of %s: %d %s", name, code, body)
	}
	hashMapKey := fmt.Sprintf(`[%q,{"server":"srv1","database":"db1","filename":%q}]`, name, file)
	bucketKey := fmt.Sprintf(`[%q,{"BB":"b","Aa":"a","filename":%q}]`, name, file)
	emulatedBucketKey := fmt.Sprintf(`[%q,{"Aa":"a","BB":"b","filename":%q}]`, name, file)
	w := &writer{base: cl.Opts(), adm: adm}
	rawKeys := func(topic string) []string {
		var keys []string
		if err := w.scan(ctx, topic, func(r *kgo.Record) error {
			if bytes.HasPrefix(r.Key, []byte(`["`+name+`",`)) {
				keys = append(keys, string(r.Key))
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		slices.Sort(keys)
		return keys
	}
	want := []string{hashMapKey, bucketKey}
	slices.Sort(want)
	if got := rawKeys(from.Offset); !slices.Equal(got, want) {
		t.Fatalf("Kafka Connect wrote keys %q, want %q", got, want)
	}

	c, err := Read(ctx, cl, ReadOptions{Topics: from, SkipGroups: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Connectors) != 1 || len(c.Connectors[0].SourceOffsets) != 2 {
		t.Fatalf("read %+v", c.Connectors)
	}
	conn := c.Connectors[0]

	// To kcd and back, as JSON on the wire.
	p := BuildPlan(c, NewCatalogue(nil))
	p.SetActions([]api.ImportItem{{Name: conn.Name, Action: api.ImportCreate}})
	var staged []api.ImportSourceOffset
	for _, ch := range p.Offsets(c, api.MaxImportOffsets) {
		var back api.ImportOffsets
		roundTrip(t, ch, &back)
		staged = append(staged, back.Source...)
	}
	var exported api.ExportConnector
	roundTrip(t, api.ExportConnector{Name: conn.Name, Config: conn.Config, Target: "STOPPED", SourceOffsets: staged}, &exported)
	back := &Cluster{Connectors: []*Connector{fromExport(exported)}}
	var carried []string
	for _, o := range back.Connectors[0].SourceOffsets {
		carried = append(carried, string(o.Key))
	}
	slices.Sort(carried)
	if !slices.Equal(carried, want) {
		t.Fatalf("keys back from kcd: %q, want %q", carried, want)
	}

	if _, err := Write(ctx, cl, back, WriteOptions{Topics: to, ReplicationFactor: 1}); err != nil {
		t.Fatal(err)
	}
	if got := rawKeys(to.Offset); !slices.Equal(got, want) {
		t.Errorf("written keys %q, want %q", got, want)
	}

	// Without the bytes (an entry stored before kcd kept them), Write
	// encodes the HashMap order: Kafka Connect's key for the first
	// partition, not for the second.
	for i := range back.Connectors[0].SourceOffsets {
		back.Connectors[0].SourceOffsets[i].Key = nil
	}
	if _, err := Write(ctx, cl, back, WriteOptions{Topics: bare, ReplicationFactor: 1}); err != nil {
		t.Fatal(err)
	}
	want = []string{hashMapKey, emulatedBucketKey}
	slices.Sort(want)
	if got := rawKeys(bare.Offset); !slices.Equal(got, want) {
		t.Errorf("written keys without the bytes %q, want %q", got, want)
	}
}

// send makes a request with a JSON body and returns the status and body.
func send(ctx context.Context, method, url, body string) (int, string) {
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		return 0, err.Error()
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(b)
}

// roundTrip encodes v as JSON and decodes it into out, numbers as
// json.Number, as kcd's REST API and its client do.
func roundTrip(t *testing.T, v, out any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := decodeStrict(b, out); err != nil {
		t.Fatal(err)
	}
}
