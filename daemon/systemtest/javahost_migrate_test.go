package systemtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcd-project/kcd/internal/testenv"
)

// TestIntegrationJavaHostMigratedClass: a MirrorSourceConnector — a Java
// class kcd has no Go implementation of — runs on the test environment's
// real Kafka Connect worker (same plugin path as kcd's) and mirrors a
// topic; `kcctl migrate from-kafka --stop-source` moves it to a kcd node
// with the Java host. On kcd it runs with the config unchanged, RUNNING,
// from Kafka Connect's offsets: records written after the move are
// mirrored, none written before is mirrored twice.
func TestIntegrationJavaHostMigratedClass(t *testing.T) {
	bin := binary(t)
	brokers := testenv.Require(t, testenv.Kafka)
	connectURL := testenv.Require(t, testenv.ConnectURL)
	args := javaHostArgs(t)
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	kcctl := buildKcctl(t, t.TempDir())

	suffix := fmt.Sprintf("%x", rand.Uint64())
	topic := "kcd-systemtest-migmirror-" + suffix
	mirrored := "src." + topic
	const partitions = 2
	dropTopicsAtEnd(t, brokers, topic, mirrored)
	adm := kadm.NewClient(kafkaClient(t, brokers))
	if _, err := adm.CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
	pcl := kafkaClient(t, brokers, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	seq := 0
	produce := func(count int) {
		t.Helper()
		var recs []*kgo.Record
		for range count {
			for p := range partitions {
				recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(p), Key: fmt.Appendf(nil, "k%d", p), Value: fmt.Appendf(nil, "p%d-%06d", p, seq)})
			}
			seq++
		}
		if err := pcl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// waitMirrored waits until every source record is in the mirrored
	// topic and returns how many copies are there beyond the first.
	waitMirrored := func(who string) int {
		t.Helper()
		want := readTopic(ctx, t, brokers, topic)
		var got map[int32][]string
		if err := WaitFor(ctx, 500*time.Millisecond, func() (bool, error) {
			got = readTopic(ctx, t, brokers, mirrored)
			for p, vs := range want {
				if len(firstCopiesOf(got[p])) < len(vs) {
					return false, fmt.Errorf("partition %d: %d of %d", p, len(firstCopiesOf(got[p])), len(vs))
				}
			}
			return true, nil
		}); err != nil {
			t.Fatalf("%s: the mirrored topic lacks records: %v", who, err)
		}
		dups := 0
		for p, vs := range want {
			first := firstCopiesOf(got[p])
			if !reflect.DeepEqual(first, vs) {
				t.Fatalf("%s: %s partition %d: %q, want %q", who, mirrored, p, first, vs)
			}
			dups += len(got[p]) - len(first)
		}
		return dups
	}

	// On Kafka Connect.
	name := "kcd-migmirror-" + suffix
	cfg := mirrorConfig(brokers, topic, 2)
	kc := func(method, path string, body any) (int, []byte) {
		t.Helper()
		var rd io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			rd = bytes.NewReader(b)
		}
		req, err := http.NewRequestWithContext(ctx, method, connectURL+path, rd)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("Kafka Connect %s %s: %v", method, path, err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, b
	}
	if code, body := kc("POST", "/connectors", map[string]any{"name": name, "config": cfg}); code != http.StatusCreated {
		t.Fatalf("create %s on Kafka Connect: %d %s", name, code, body)
	}
	t.Cleanup(func() {
		req, _ := http.NewRequest("DELETE", connectURL+"/connectors/"+name, nil)
		if res, err := http.DefaultClient.Do(req); err == nil {
			res.Body.Close()
		}
	})
	produce(200)
	if dups := waitMirrored("Kafka Connect"); dups != 0 {
		t.Logf("Kafka Connect mirrored %d records twice", dups)
	}
	// Its offsets cover every record (MirrorSourceTask stores the last
	// source offset it copied), committed at its offset flush.
	if err := WaitFor(ctx, 500*time.Millisecond, func() (bool, error) {
		code, body := kc("GET", "/connectors/"+name+"/offsets", nil)
		return code == 200 && strings.Count(string(body), `"offset":199`) == partitions, fmt.Errorf("%d %s", code, body)
	}); err != nil {
		t.Fatalf("Kafka Connect's offsets: %v", err)
	}

	// The move.
	c := StartCluster(t, bin, Options{Size: 1, Bootstrap: brokers, ExtraArgs: append(args, "--offset-flush-interval", "500ms")})
	if _, err := WaitLeader(ctx, c.Nodes()...); err != nil {
		t.Fatal(err)
	}
	n := c.Node(1)
	cmd := exec.CommandContext(ctx, kcctl, "--server", n.URL(), "migrate", "from-kafka", "--bootstrap-servers", brokers,
		"--include", "^"+name+"$", "--connect-url", connectURL, "--stop-source")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kcctl migrate from-kafka: %v\n%s", err, out)
	}
	t.Logf("kcctl migrate from-kafka:\n%s", out)
	var got map[string]string
	if err := n.GetJSON(ctx, "/connectors/"+name+"/config", &got); err != nil {
		t.Fatal(err)
	}
	wantCfg := map[string]string{"name": name}
	for k, v := range cfg {
		wantCfg[k] = v
	}
	if !reflect.DeepEqual(got, wantCfg) {
		t.Fatalf("config in kcd %v, want Kafka Connect's %v", got, wantCfg)
	}
	if err := WaitFor(ctx, 200*time.Millisecond, func() (bool, error) {
		st, err := statusOf(ctx, n, name)
		if err != nil {
			return false, err
		}
		ok, _ := runningOn(st, partitions)
		return ok && st.Connector.State == "RUNNING" && st.Connector.Version == javaConnectVersion, fmt.Errorf("status %+v", st)
	}); err != nil {
		t.Fatalf("the migrated connector does not run on kcd: %v", err)
	}
	produce(200)
	if dups := waitMirrored("kcd"); dups != 0 {
		t.Errorf("%d records mirrored twice: kcd did not resume from Kafka Connect's offsets", dups)
	}
	t.Logf("migrated %s runs on kcd through the Java host; %d records per partition mirrored, each once", name, seq)
}
